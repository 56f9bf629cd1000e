//go:build !unix

package dist

import (
	"os"
	"os/exec"
	"syscall"
)

var forwardedSignals = []os.Signal{os.Interrupt}

var terminate = os.Kill

func childAttr() *syscall.SysProcAttr { return nil }

func kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}

func exitStatus(ps *os.ProcessState) (code, sig int, name string) {
	return ps.ExitCode(), 0, ""
}

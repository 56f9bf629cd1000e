//go:build unix

package dist

import (
	"os"
	"os/exec"
	"syscall"
)

var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

var terminate os.Signal = syscall.SIGTERM

func childAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(a)
	return a
}

// kill ends cmd's process group at once.
func kill(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		cmd.Process.Kill()
	}
}

func exitStatus(ps *os.ProcessState) (code, sig int, name string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, int(ws.Signal()), ws.Signal().String()
	}
	return ps.ExitCode(), 0, ""
}

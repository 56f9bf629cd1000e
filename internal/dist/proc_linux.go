package dist

import "syscall"

// setParentDeathSignal has the kernel kill a child whose launcher dies.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

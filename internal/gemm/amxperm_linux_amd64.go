package gemm

import "syscall"

// amxPermit asks Linux for this process's permission to use AMX's tile
// data (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA; Linux 5.16 and
// later) and reports whether it was given. Without it the first tile
// instruction raises SIGILL.
func amxPermit() bool {
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
}

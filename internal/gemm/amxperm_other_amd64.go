//go:build !linux

package gemm

// amxPermit reports false: AMX is used only on Linux, which hands out the
// permission for its tile state.
func amxPermit() bool { return false }

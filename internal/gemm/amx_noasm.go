//go:build !amd64

package gemm

// There is no AMX on this architecture.
var amxOK, useAMX = false, false

// AMX reports whether Bgemm multiplies on AMX tiles: never on this
// architecture.
func AMX() bool { return useAMX }

// amxRun reports false: there is no AMX here.
func amxRun(par, f16in, transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, out out16) bool {
	return false
}

// SetAMX returns false and leaves AMX off: there is none here.
func SetAMX(on bool) (prev bool) { return false }

// AMXPeakLoop returns 0: there is no AMX here.
func AMXPeakLoop(n int) float64 { return 0 }

// Tile products on pair-packed operands: see the amd64 build. Without AMX
// they are never called (AMX reports false).
const (
	AMXRows  = 32
	AMXCols  = 32
	AMXPairs = 16
	AMXK     = 32
)

// PairRows panics: there is no AMX here.
func PairRows(dst []uint32, ldd int, src []uint16, lds, rows, k int) { panic("gemm: no AMX") }

// PairPanels panics: there is no AMX here.
func PairPanels(dst []uint32, ldp int, b []uint16, ldb int, trans bool, k, n int) {
	panic("gemm: no AMX")
}

// MulPairs panics: there is no AMX here.
func MulPairs(m, n, kq int, a []uint32, lda int, b []uint32, ldp int, c []float32, ldc int, alpha float32, acc bool) {
	panic("gemm: no AMX")
}

// SplitPairs3 panics: there is no AMX here.
func SplitPairs3(d1, d2, d3 []uint32, ldd int, src []float32, lds, rows, k int) {
	panic("gemm: no AMX")
}

// MulPairsRepeat panics: there is no AMX here.
func MulPairsRepeat(m, n, kq, reps int, a []uint32, lda int, b []uint32, ldp int, c []float32, ldc int, alpha float32, acc bool) {
	panic("gemm: no AMX")
}

// SplitPanels3 panics: there is no AMX here.
func SplitPanels3(dst []uint32, ldp int, src []float32, lds, k, n int) { panic("gemm: no AMX") }

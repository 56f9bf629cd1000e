//go:build !amd64

package gemm

// There is no AMX on this architecture.
var amxOK, useAMX = false, false

// AMX reports whether Bgemm multiplies on AMX tiles: never on this
// architecture.
func AMX() bool { return useAMX }

// amxRun reports false: there is no AMX here.
func amxRun(par, transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, out out16) bool {
	return false
}

// SetAMX returns false and leaves AMX off: there is none here.
func SetAMX(on bool) (prev bool) { return false }

// AMXPeakLoop returns 0: there is no AMX here.
func AMXPeakLoop(n int) float64 { return 0 }

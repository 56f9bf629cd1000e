package roofline

// Every arm64 CPU has Advanced SIMD: the roofline is its FMLA rate, the
// ceiling of the GEMM's NEON kernel.
func fmaKind() string { return "neon" }

// fmaLoop runs n steps of 16 FMLA on 4 float32 lanes and returns the
// FLOPs (2 per lane).
func fmaLoop(n int) float64 {
	fmaNEON(n)
	return float64(n) * 16 * 4 * 2
}

func hasDotBF16() bool { return false }

func dotBF16Loop(n int) float64 { return 0 }

// fmaNEON runs n ≥ 1 steps of 16 independent FMLA (roofline_arm64.s).
//
//go:noescape
func fmaNEON(n int)

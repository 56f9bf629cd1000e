package roofline

// sink keeps fmaGo's results alive.
var sink float32

// fmaGo runs n steps of 8 independent scalar multiply-adds (fused by the
// compiler where the architecture has FMA, as arm64) and returns the
// FLOPs: the ceiling of golf's portable Go kernels.
func fmaGo(n int) float64 {
	a0, a1, a2, a3, a4, a5, a6, a7 := float32(0), float32(0), float32(0), float32(0), float32(0), float32(0), float32(0), float32(0)
	x, y := float32(0.999), float32(1e-3)
	for range n {
		a0 = a0*x + y
		a1 = a1*x + y
		a2 = a2*x + y
		a3 = a3*x + y
		a4 = a4*x + y
		a5 = a5*x + y
		a6 = a6*x + y
		a7 = a7*x + y
	}
	sink = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
	return float64(n) * 8 * 2
}

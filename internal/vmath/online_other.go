//go:build !amd64 || purego

package vmath

// useFMA is false: no assembly here, and the xxxAsm functions below are
// never called.
var useFMA = false

func onlineSoftmaxAsm(s []float32, lds, rows, width, n0 int, o []float32, ldo, d int, m []float32, l []float64) {
	panic("vmath: no assembly kernels")
}

func onlineEndAsm(o []float32, ldo, rows, d int, l []float64) bool {
	panic("vmath: no assembly kernels")
}

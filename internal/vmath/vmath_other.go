//go:build !amd64 || purego

package vmath

// useAsm is false: there is no assembly here, and the xxxAsm functions
// below are never called.
var useAsm = false

func expSubAsm(dst, src []float32, shift float32, acc *[lanes]float64) int {
	panic("vmath: no assembly kernels")
}

func maxAsm(x []float32, acc *[lanes]float32) bool { panic("vmath: no assembly kernels") }

func tanhAsm(dst, src []float32) { panic("vmath: no assembly kernels") }

func softcapAsm(th, z, x []float32, c float32, acc *[lanes]float32) bool {
	panic("vmath: no assembly kernels")
}

func softcapGradAsm(dst, z, th []float32, lse float64, scale float32) int {
	panic("vmath: no assembly kernels")
}

func softmaxGradAsm(s, dp []float32, lse, delta float32) int {
	panic("vmath: no assembly kernels")
}

func divAsm(dst, src []float32, d float32) { panic("vmath: no assembly kernels") }

func fromBF16AVX2(dst *float32, src *uint16, n int) { panic("vmath: no assembly kernels") }

func toBF16AVX2(dst *uint16, src *float32, n int) { panic("vmath: no assembly kernels") }

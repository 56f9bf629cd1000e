//go:build !amd64 || purego

package vmath

// No assembly here: useAsm is false and these are never called.

func softcapExpAsm[T ceIn](e, g []float32, x []T, c, rc, s float32, acc *[lanes]float64) {
	panic("vmath: no assembly kernels")
}

func ceGradAsm[T ceIn](dst []T, e, g []float32, q, scale float32) {
	panic("vmath: no assembly kernels")
}

func ceTableSumAsm(e []float32, x []uint16, te []float32, acc *[lanes]float64) {
	panic("vmath: no assembly kernels")
}

func ceGradTableAsm[T ceIn](dst []T, x []uint16, teg []float32, q, scale float32, f16 bool) {
	panic("vmath: no assembly kernels")
}

func softcapZFMA(x, c, rc float32) (z, g float32, ok bool) {
	panic("vmath: no assembly kernels")
}

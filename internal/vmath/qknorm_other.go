//go:build !amd64 || purego

package vmath

// No assembly here: useAsm is false and these are never called.

const haveFMA = false

func qkNormRopeAVX2(out, rstd, x, cs, sn, gain *float32, rows, hx, half int, eps float64) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeGradAVX2(dx *float32, dgain *float64, dout, x, rstd, cs, sn, gain *float32, rows, hx, half int) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeAVX512(out, rstd, x, cs, sn, gain *float32, rows, hx, half int, eps float64) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeGradAVX512(dx *float32, dgain *float64, dout, x, rstd, cs, sn, gain *float32, rows, hx, half int) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeBF16AVX512(out *uint16, rstd *float32, x *uint16, cs, sn, gain *float32, rows, hx, half int, eps float64) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeGradBF16AVX512(dx *uint16, dgain *float64, dout, x *uint16, rstd, cs, sn, gain *float32, rows, hx, half int) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeBF16CvtAVX512(out *uint16, rstd *float32, x *uint16, cs, sn, gain *float32, rows, hx, half int, eps float64) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeGradBF16CvtAVX512(dx *uint16, dgain *float64, dout, x *uint16, rstd, cs, sn, gain *float32, rows, hx, half int) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeGrad64BF16(dx *uint16, dgain *float64, dout, x *uint16, rstd, cs, sn, gain *float32, rows, hx int) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeGrad64F16(dx *uint16, dgain *float64, dout, x *uint16, rstd, cs, sn, gain *float32, rows, hx int) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeF16AVX512(out *uint16, rstd *float32, x *uint16, cs, sn, gain *float32, rows, hx, half int, eps float64) {
	panic("vmath: no assembly kernels")
}

func qkNormRopeGradF16AVX512(dx *uint16, dgain *float64, dout, x *uint16, rstd, cs, sn, gain *float32, rows, hx, half int) {
	panic("vmath: no assembly kernels")
}

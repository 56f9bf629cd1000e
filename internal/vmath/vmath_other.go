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

func softmaxGradAsm(s, dp []float32, lse, delta float32) int {
	panic("vmath: no assembly kernels")
}

func divAsm(dst, src []float32, d float32) { panic("vmath: no assembly kernels") }

func fromBF16AVX2(dst *float32, src *uint16, n int) { panic("vmath: no assembly kernels") }

func toBF16AVX2(dst *uint16, src *float32, n int) { panic("vmath: no assembly kernels") }

func scaleAVX2(dst, x *float32, n int, s float32)          { panic("vmath: no assembly kernels") }
func mulAVX2(dst, a, b *float32, n int)                    { panic("vmath: no assembly kernels") }
func mulAccAVX2(dst, a, b *float32, n int)                 { panic("vmath: no assembly kernels") }
func mulAdd2AVX2(dst, a, x, b, y *float32, n int)          { panic("vmath: no assembly kernels") }
func addMulAVX2(dst, x, s, y *float32, n int)              { panic("vmath: no assembly kernels") }
func axpyAVX2(dst, x *float32, n int, alpha float32)       { panic("vmath: no assembly kernels") }
func reluSqAVX2(dst, x *float32, n int)                    { panic("vmath: no assembly kernels") }
func reluSqGradAVX2(dst, g, x *float32, n int)             { panic("vmath: no assembly kernels") }
func rmsGradAVX2(dx, g, xh *float32, n int, rs, m float32) { panic("vmath: no assembly kernels") }
func rmsGradResAVX2(dx, g, xh, res *float32, n int, rs, m float32) {
	panic("vmath: no assembly kernels")
}
func ropeAVX2(out, u, cs, sn *float32, half int, g float32)      { panic("vmath: no assembly kernels") }
func ropeTAVX2(du, gh, cs, sn *float32, half int, g float32)     { panic("vmath: no assembly kernels") }
func momentumAVX2(buf, geff, g *float32, n int, mu float32)      { panic("vmath: no assembly kernels") }
func adamAVX2(p, g, m, v *float32, n int, c *[8]float32)         { panic("vmath: no assembly kernels") }
func sum64AVX2(x *float32, n int, acc *[lanes]float64)           { panic("vmath: no assembly kernels") }
func sumSq64AVX2(x *float32, n int, acc *[lanes]float64)         { panic("vmath: no assembly kernels") }
func dot64AVX2(a, b *float32, n int, acc *[lanes]float64)        { panic("vmath: no assembly kernels") }
func dot64ColsAVX2(acc *float64, a, b *float32, n int)           { panic("vmath: no assembly kernels") }
func axpyBF16AVX2(dst *float32, x *uint16, n int, alpha float32) { panic("vmath: no assembly kernels") }
func axpyF16F16C(dst *float32, x *uint16, n int, alpha float32)  { panic("vmath: no assembly kernels") }
func dot64ColsRowsAVX512(acc *float64, a, b *float32, stride, rows, n int) {
	panic("vmath: no assembly kernels")
}
func sumSq64x4AVX2(x *float32, stride, n int, acc *[4][lanes]float64) {
	panic("vmath: no assembly kernels")
}
func dot64x4AVX2(a, b *float32, stride, n int, acc *[4][lanes]float64) {
	panic("vmath: no assembly kernels")
}

// use512 is false: no AVX-512 kernels here.
var use512 = false

func fromBF16AVX512(dst *float32, src *uint16, n int) { panic("vmath: no assembly kernels") }

func toBF16AVX512(dst *uint16, src *float32, n int) { panic("vmath: no assembly kernels") }

// useCvtBF16 is false: no VCVTNEPS2BF16 kernel here.
var useCvtBF16 = false

func toBF16CvtAVX512(dst *uint16, src *float32, n int) { panic("vmath: no assembly kernels") }

func sumSq64x4BF16(x *uint16, stride, n int, acc *[4][lanes]float64) {
	panic("vmath: no assembly kernels")
}

func scaleRowsBF16(out, x *uint16, s *float32, stride, rows, n int) {
	panic("vmath: no assembly kernels")
}

func dot64XhBF16(gr, x *uint16, rs *float32, stride, n int, acc *[4][lanes]float64) {
	panic("vmath: no assembly kernels")
}

func rmsGradRowsBF16(dx, gr, x, res *uint16, rs, m *float32, stride, rows, n int) {
	panic("vmath: no assembly kernels")
}

func scaledAddBackBF16(acc *float64, dy, gr, yr *uint16, s *float32, stride, rows, n int) {
	panic("vmath: no assembly kernels")
}

func sumSq64x4F16(x *uint16, stride, n int, acc *[4][lanes]float64) {
	panic("vmath: no assembly kernels")
}

func scaleRowsF16(out, x *uint16, s *float32, stride, rows, n int) {
	panic("vmath: no assembly kernels")
}

func dot64XhF16(gr, x *uint16, rs *float32, stride, n int, acc *[4][lanes]float64) {
	panic("vmath: no assembly kernels")
}

func rmsGradRowsF16(dx, gr, x, res *uint16, rs, m *float32, stride, rows, n int) {
	panic("vmath: no assembly kernels")
}

func scaledAddBackF16(acc *float64, dy, gr, yr *uint16, s *float32, stride, rows, n int) {
	panic("vmath: no assembly kernels")
}

func copyRowsAVX512(dst *float32, ldd int, src *float32, lds, rows, cols int) {
	panic("vmath: no assembly kernels")
}

func widenRowsAVX512(dst *float32, ldd int, src *uint16, lds, rows, cols, f16 int) {
	panic("vmath: no assembly kernels")
}

func narrowRowsAVX512(dst *uint16, ldd int, src *float32, lds, rows, cols, mode int) {
	panic("vmath: no assembly kernels")
}

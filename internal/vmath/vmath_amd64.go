//go:build amd64 && !purego

package vmath

import (
	"math"

	"golang.org/x/sys/cpu"
)

// useAsm selects the AVX2 kernels of vmath_amd64.s. They use no FMA (see
// the package comment), so AVX2 is all they need. Tests clear it to run
// the Go kernels.
var useAsm = cpu.X86.HasAVX2

// use512 selects the AVX-512 kernels (exp_avx512_amd64.s, the 16-lane
// ones beside the AVX2 kernels) when useAsm is set: AVX-512 F and DQ
// (VEXTRACTF32X8, VFPCLASSPS), which every AVX-512 CPU but the Xeon Phi
// has. Tests clear it to run the AVX2 ones.
var use512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// useCvtBF16 selects the kernels that round by VCVTNEPS2BF16 (AVX512_BF16,
// with VL for their 256-bit stores) when use512 is set: toBF16CvtAVX512
// and the fused bfloat16 row kernels. Tests clear it to run the integer
// rounding.
var useCvtBF16 = use512 && cpu.X86.HasAVX512BF16 && cpu.X86.HasAVX512VL

// Rows of vconst, the constants of the assembly as 8 lanes each; the
// offsets in vmath_amd64.s are 32 bytes times these.
const (
	cLog2E = iota
	cMagic
	cC1
	cC2
	cP0
	cP1
	cP2
	cP3
	cP4
	cP5
	cOne
	cBias // int32 127, the exponent bias
	cExpLo
	cExpHi
	cAbs  // 0x7fffffff
	cSign // 0x80000000
	cTwo
	cTanhLo
	cTanhHi
	cQ0
	cQ1
	cQ2
	cQ3
	cQ4
	cLSB      // int32 1, the bit above a bfloat16 rounding
	cHalfBF16 // int32 0x7fff, just under half a bfloat16 ulp
	cInfBits  // int32 0x7f800000, +Inf
	cQuietBF  // int32 0x40, the quiet bit of a bfloat16 NaN
	nConst
)

// vconst holds the constants of Exp32, Tanh32 and ToBF16 as bits, each
// broadcast to 8 lanes, for the assembly's memory operands.
var vconst = func() (t [nConst][lanes]uint32) {
	f := math.Float32bits
	row := [nConst]uint32{
		cLog2E: f(log2E), cMagic: f(expMagic), cC1: f(expC1), cC2: f(expC2),
		cP0: f(expP0), cP1: f(expP1), cP2: f(expP2), cP3: f(expP3), cP4: f(expP4), cP5: f(expP5),
		cOne: f(1), cBias: 127, cExpLo: f(expLo), cExpHi: f(expHi),
		cAbs: 0x7fffffff, cSign: 0x80000000, cTwo: f(2), cTanhLo: f(tanhLo), cTanhHi: f(tanhHi),
		cQ0: f(tanhQ0), cQ1: f(tanhQ1), cQ2: f(tanhQ2), cQ3: f(tanhQ3), cQ4: f(tanhQ4),
		cLSB: 1, cHalfBF16: 0x7fff, cInfBits: 0x7f800000, cQuietBF: 0x40,
	}
	for i, b := range row {
		for j := range t[i] {
			t[i][j] = b
		}
	}
	return t
}()

// The wrappers below check the bounds the assembly relies on and pass it
// raw pointers; every length is a positive multiple of 8 unless noted.

// expSubAsm runs expSubAVX512 over the whole blocks of 16 of src and
// expSubAVX2 over the rest; dst is at least as long.
func expSubAsm(dst, src []float32, shift float32, acc *[lanes]float64) int {
	_ = dst[len(src)-1]
	done := 0
	if n16 := len(src) &^ 15; use512 && n16 > 0 {
		if done = expSubAVX512(&dst[0], &src[0], n16, shift, acc); done < n16 {
			return done
		}
		if done == len(src) {
			return done
		}
	}
	return done + expSubAVX2(&dst[done], &src[done], len(src)-done, shift, acc)
}

// maxAsm runs maxAVX2 over x (possibly empty).
func maxAsm(x []float32, acc *[lanes]float32) bool {
	if len(x) == 0 {
		return false
	}
	return maxAVX2(&x[0], len(x), acc) != 0
}

// tanhAsm runs tanhAVX2 over src (possibly empty).
func tanhAsm(dst, src []float32) {
	if len(src) == 0 {
		return
	}
	_ = dst[len(src)-1]
	tanhAVX2(&dst[0], &src[0], len(src))
}

// softcapAsm runs softcapAVX2 over x (possibly empty).
func softcapAsm(th, z, x []float32, c float32, acc *[lanes]float32) bool {
	if len(x) == 0 {
		return false
	}
	_, _ = th[len(x)-1], z[len(x)-1]
	return softcapAVX2(&th[0], &z[0], &x[0], len(x), c, acc) != 0
}

// softmaxGradAsm runs softmaxGradAVX512 over the whole blocks of 16 of s
// and softmaxGradAVX2 over the rest; dp is at least as long.
func softmaxGradAsm(s, dp []float32, lse, delta float32) int {
	_ = dp[len(s)-1]
	done := 0
	if n16 := len(s) &^ 15; use512 && n16 > 0 {
		if done = softmaxGradAVX512(&s[0], &dp[0], n16, lse, delta); done < n16 || done == len(s) {
			return done
		}
	}
	return done + softmaxGradAVX2(&s[done], &dp[done], len(s)-done, lse, delta)
}

// divAsm runs divAVX2 over src (possibly empty).
func divAsm(dst, src []float32, d float32) {
	if len(src) == 0 {
		return
	}
	_ = dst[len(src)-1]
	divAVX2(&dst[0], &src[0], len(src), d)
}

// Kernels of vmath_amd64.s. n is a multiple of 8; those returning an int
// return how many elements they did, stopping before the first block with
// an exponent argument above 88. Those taking acc update its 8 lanes; the
// maxima return nonzero if they saw a NaN.

//go:noescape
func expSubAVX2(dst, src *float32, n int, shift float32, acc *[lanes]float64) int

//go:noescape
func maxAVX2(x *float32, n int, acc *[lanes]float32) int

//go:noescape
func tanhAVX2(dst, src *float32, n int)

//go:noescape
func softcapAVX2(th, z, x *float32, n int, c float32, acc *[lanes]float32) int

//go:noescape
func softmaxGradAVX2(s, dp *float32, n int, lse, delta float32) int

//go:noescape
func divAVX2(dst, src *float32, n int, d float32)

//go:noescape
func fromBF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func toBF16AVX2(dst *uint16, src *float32, n int)

// Kernels of elementwise_amd64.s (generated): n is a positive multiple of
// 8; see the Go definitions in elementwise.go.

//go:noescape
func scaleAVX2(dst, x *float32, n int, s float32)

//go:noescape
func mulAVX2(dst, a, b *float32, n int)

//go:noescape
func mulAccAVX2(dst, a, b *float32, n int)

//go:noescape
func mulAdd2AVX2(dst, a, x, b, y *float32, n int)

//go:noescape
func addMulAVX2(dst, x, s, y *float32, n int)

//go:noescape
func axpyAVX2(dst, x *float32, n int, alpha float32)

//go:noescape
func reluSqAVX2(dst, x *float32, n int)

//go:noescape
func reluSqGradAVX2(dst, gr, x *float32, n int)

//go:noescape
func rmsGradAVX2(dx, gr, xh *float32, n int, rs, m float32)

//go:noescape
func rmsGradResAVX2(dx, gr, xh, res *float32, n int, rs, m float32)

//go:noescape
func ropeAVX2(out, u, cs, sn *float32, half int, gain float32)

//go:noescape
func ropeTAVX2(du, gh, cs, sn *float32, half int, gain float32)

//go:noescape
func momentumAVX2(buf, geff, gr *float32, n int, mu float32)

//go:noescape
func adamAVX2(p, gr, m, v *float32, n int, c *[8]float32)

//go:noescape
func sum64AVX2(x *float32, n int, acc *[lanes]float64)

//go:noescape
func sumSq64AVX2(x *float32, n int, acc *[lanes]float64)

//go:noescape
func dot64AVX2(a, b *float32, n int, acc *[lanes]float64)

//go:noescape
func sumSq64x4AVX2(x *float32, stride, n int, acc *[4][lanes]float64)

//go:noescape
func dot64x4AVX2(a, b *float32, stride, n int, acc *[4][lanes]float64)

//go:noescape
func axpyBF16AVX2(dst *float32, x *uint16, n int, alpha float32)

//go:noescape
func axpyF16F16C(dst *float32, x *uint16, n int, alpha float32)

//go:noescape
func dot64ColsRowsAVX512(acc *float64, a, b *float32, stride, rows, n int)

//go:noescape
func dot64ColsAVX2(acc *float64, a, b *float32, n int)

//go:noescape
func expSubAVX512(dst, src *float32, n int, shift float32, acc *[lanes]float64) int

//go:noescape
func softmaxGradAVX512(s, dp *float32, n int, lse, delta float32) int

//go:noescape
func fromBF16AVX512(dst *float32, src *uint16, n int)

//go:noescape
func toBF16AVX512(dst *uint16, src *float32, n int)

//go:noescape
func scaledAddBackBF16(acc *float64, dy, gr, yr *uint16, s *float32, stride, rows, n int)

//go:noescape
func sumSq64x4BF16(x *uint16, stride, n int, acc *[4][lanes]float64)

//go:noescape
func scaleRowsBF16(out, x *uint16, s *float32, stride, rows, n int)

//go:noescape
func dot64XhBF16(gr, x *uint16, rs *float32, stride, n int, acc *[4][lanes]float64)

//go:noescape
func rmsGradRowsBF16(dx, gr, x, res *uint16, rs, m *float32, stride, rows, n int)

// The binary16 versions of the five kernels above (rows16_amd64.s).

//go:noescape
func scaledAddBackF16(acc *float64, dy, gr, yr *uint16, s *float32, stride, rows, n int)

//go:noescape
func sumSq64x4F16(x *uint16, stride, n int, acc *[4][lanes]float64)

//go:noescape
func scaleRowsF16(out, x *uint16, s *float32, stride, rows, n int)

//go:noescape
func dot64XhF16(gr, x *uint16, rs *float32, stride, n int, acc *[4][lanes]float64)

//go:noescape
func rmsGradRowsF16(dx, gr, x, res *uint16, rs, m *float32, stride, rows, n int)

//go:noescape
func toBF16CvtAVX512(dst *uint16, src *float32, n int)

// copyRowsAVX512 is CopyRows for cols a positive multiple of 16, rows ≥ 1.
//
//go:noescape
func copyRowsAVX512(dst *float32, ldd int, src *float32, lds, rows, cols int)

// widenRowsAVX512 is WidenRows and narrowRowsAVX512 NarrowRows for cols a
// positive multiple of 16, rows ≥ 1; f16 is the Half (0 bfloat16, 1
// binary16), mode that or 2 for bfloat16 by VCVTNEPS2BF16.
//
//go:noescape
func widenRowsAVX512(dst *float32, ldd int, src *uint16, lds, rows, cols, f16 int)

//go:noescape
func narrowRowsAVX512(dst *uint16, ldd int, src *float32, lds, rows, cols, mode int)

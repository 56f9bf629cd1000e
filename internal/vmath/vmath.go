// Package vmath holds the float32 exponential and hyperbolic tangent of the
// CPU backend, one element at a time (Exp32, Tanh32) and over slices, with
// the slice kernels that softmax, attention and the softcapped cross-entropy
// run over rows of scores and logits, and the bfloat16 and float16
// conversions of rows (FromBF16, ToBF16; FromF16, ToF16 on F16C).
//
// Exp32 and Tanh32 are Cephes expf and tanhf: Cody–Waite reduction by ln 2
// and a degree-7 polynomial for e^x (within 2 ulp), an odd polynomial below
// |x| = 0.625 and 1 − 2/(e^{2|x|} + 1) above it for tanh (within 3 ulp).
// Every operation is a float32 multiply, add or divide rounded on its own:
// explicit conversions keep the compiler from fusing a multiply and an add,
// so the functions return the same bits on every architecture and with any
// GOAMD64 level.
//
// The slice kernels compute each element with exactly those operations, so
// they agree bit for bit with Exp32 and Tanh32 element by element (NaN in
// gives NaN out). On amd64 with AVX2 they run 8 lanes at a time in assembly
// (vmath_amd64.s) that issues the same sequence of roundings: separate
// VMULPS and VADDPS rather than FMA. That costs an instruction per
// polynomial step, but multiplies and adds issue to different ports, and
// the scalar and vector results stay identical. A block
// of 8 whose exponential leaves the polynomial's range (x > 88, where Exp32
// calls math.Exp) is handed back to the Go code. Elsewhere, with the purego
// build tag, or when a test clears useAsm, the same kernels run in Go.
//
// Sums of exponentials are accumulated in float64 in 8 lanes (lane j takes
// elements 8b+j of the whole blocks), the lanes are combined in a fixed
// tree (sum8) and the tail is added in order. Both implementations follow
// that order, so a sum is deterministic and identical in both.
//
// "Bit for bit" holds for every result that is not a NaN; a NaN result is
// some NaN, its sign and payload unspecified unless the function names the
// NaN it returns (Max's 0x7fc00000). Where two NaNs meet in an
// add (an input NaN and the default NaN of 0·Inf, say), x86 returns the
// first operand's, and which operand is first in Go code is the
// compiler's choice, made anew at each inlined copy (a -race build makes
// it differently). The tests compare NaNs as NaNs.
package vmath

import (
	"fmt"
	"math"
)

// Constants of Exp32 and Tanh32, shared with the assembly's table.
const (
	expLo    = -87.3       // below: e^x is under the normal range, flushed to 0
	expHi    = 88          // above: 2^k would leave the normal range
	expMagic = 0x1.8p23    // adding it rounds a float32 in (−2²², 2²²) to an integer
	expC1    = 0.693359375 // ln 2 ≈ expC1 + expC2 (Cody–Waite); k·expC1 is exact
	expC2    = -2.12194440e-4

	// e^r ≈ 1 + r + r²·P(r), P(r) = ((((P0·r + P1)·r + P2)·r + P3)·r + P4)·r + P5
	expP0 = 1.9875691500e-4
	expP1 = 1.3981999507e-3
	expP2 = 8.3334519073e-3
	expP3 = 4.1665795894e-2
	expP4 = 1.6666665459e-1
	expP5 = 5.0000001201e-1

	tanhLo = 0.625 // below: the odd polynomial
	tanhHi = 44    // above: ±1 (tanh is ±1 in float32 well before)

	// tanh x ≈ x + (Q(z)·z)·x for z = x², Q(z) = (((Q0·z + Q1)·z + Q2)·z + Q3)·z + Q4
	tanhQ0 = -5.70498872745e-3
	tanhQ1 = 2.06390887954e-2
	tanhQ2 = -5.37397155531e-2
	tanhQ3 = 1.33314422036e-1
	tanhQ4 = -3.33332819422e-1

	log2E    = float32(math.Log2E) // rounded once, as x·log₂e sees it
	nan32    = 0x7fc00000          // bits of the NaN Max returns
	negInf32 = 0xff800000          // bits of −Inf, Max of no elements
	lanes    = 8                   // elements per vector block
	laneMask = ^(lanes - 1)        // rounds a length down to whole blocks
)

// Exp32 is e^x in float32 (Cephes expf), within 2 ulp of the exact value:
//
//	k = round(x·log₂e);  r = x − k·ln 2 (in two parts)
//	e^x = 2^k·(1 + r + r²·P(r))
//
// Results below the normal range (x < −87.3) flush to 0; above 88 it is
// math.Exp rounded to float32 (+Inf from about 88.72); NaN returns x.
func Exp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < expLo:
		return 0
	case x > expHi:
		return float32(math.Exp(float64(x)))
	}
	k := float32(float32(x*log2E)+expMagic) - expMagic
	r := float32(x-float32(k*expC1)) - float32(k*expC2)
	p := float32(expP0)
	p = float32(p*r) + expP1
	p = float32(p*r) + expP2
	p = float32(p*r) + expP3
	p = float32(p*r) + expP4
	p = float32(p*r) + expP5
	e := float32(float32(float32(p*r)*r)+r) + 1
	return e * math.Float32frombits(uint32(int32(k)+127)<<23)
}

// Tanh32 is tanh(x) in float32 (Cephes tanhf), within 3 ulp:
//
//	|x| < 0.625:  x + x·z·Q(z), z = x²
//	otherwise:    ±(1 − 2/(Exp32(2|x|) + 1)), ±1 beyond |x| = 44
//
// NaN returns x.
func Tanh32(x float32) float32 {
	a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	switch {
	case a != a:
		return x
	case a < tanhLo:
		z := float32(x * x)
		p := float32(tanhQ0)
		p = float32(p*z) + tanhQ1
		p = float32(p*z) + tanhQ2
		p = float32(p*z) + tanhQ3
		p = float32(p*z) + tanhQ4
		return float32(float32(p*z)*x) + x
	case a > tanhHi:
		return math.Float32frombits(math.Float32bits(x)&(1<<31) | math.Float32bits(1))
	}
	t := 1 - 2/(Exp32(a+a)+1)
	return math.Float32frombits(math.Float32bits(t) ^ math.Float32bits(x)&(1<<31))
}

// Exp sets dst[i] = Exp32(src[i]). dst may be src.
func Exp(dst, src []float32) {
	sameLen("Exp", "dst", len(dst), "src", len(src))
	expSub(dst, src, 0)
}

// ExpSub sets dst[i] = Exp32(src[i] − shift), the difference rounded to
// float32, and returns Σ dst[i] summed in float64 in the lane order of the
// package comment. dst may be src. Softmax calls it with shift = max src.
func ExpSub(dst, src []float32, shift float32) float64 {
	sameLen("ExpSub", "dst", len(dst), "src", len(src))
	return expSub(dst, src, shift)
}

// expSub is ExpSub: whole blocks through the lanes, then the tail in order.
func expSub(dst, src []float32, shift float32) float64 {
	var acc [lanes]float64
	full := len(src) & laneMask
	expSubBlocks(dst[:full], src[:full], shift, &acc)
	s := sum8(&acc)
	for i := full; i < len(src); i++ {
		dst[i] = Exp32(src[i] - shift)
		s += float64(dst[i])
	}
	return s
}

// sum8 adds the lanes of a float64 accumulator in a fixed tree:
//
//	((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7))
func sum8(acc *[lanes]float64) float64 {
	return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}

// Max returns the largest element of x: NaN (0x7fc00000) if any element is
// NaN, −Inf if x is empty. Which zero it returns when +0 and −0 tie for the
// largest is fixed but unspecified.
func Max(x []float32) float32 {
	acc := fill8(math.Float32frombits(negInf32))
	full := len(x) & laneMask
	nan := maxBlocks(x[:full], &acc)
	return max8(&acc, x[full:], nan)
}

// fill8 is 8 lanes of v.
func fill8(v float32) [lanes]float32 {
	return [lanes]float32{v, v, v, v, v, v, v, v}
}

// maxStep is one lane's step of Max, the VMAXPS rule: the new value unless
// the running maximum is strictly larger (so a NaN value is taken, and
// dropped again by the next value; NaNs are flagged separately).
func maxStep(m, v float32) float32 {
	if m > v {
		return m
	}
	return v
}

// max8 folds the lanes of acc, then tail, with maxStep; nan (or a NaN in
// tail) makes the result NaN.
func max8(acc *[lanes]float32, tail []float32, nan bool) float32 {
	m := acc[0]
	for _, v := range acc[1:] {
		m = maxStep(m, v)
	}
	for _, v := range tail {
		m = maxStep(m, v)
		nan = nan || v != v
	}
	if nan {
		return math.Float32frombits(nan32)
	}
	return m
}

// Tanh sets dst[i] = Tanh32(src[i]). dst may be src.
func Tanh(dst, src []float32) {
	sameLen("Tanh", "dst", len(dst), "src", len(src))
	full := len(src) & laneMask
	tanhBlocks(dst[:full], src[:full])
	for i := full; i < len(src); i++ {
		dst[i] = Tanh32(src[i])
	}
}

// Softcap is the softcap of logits x with cap c and its maximum:
//
//	th[i] = Tanh32(x[i]/c);  z[i] = c·th[i];  returns Max(z)
//
// th, z and x have one length; th or z may be x.
func Softcap(th, z, x []float32, c float32) float32 {
	sameLen("Softcap", "th", len(th), "x", len(x))
	sameLen("Softcap", "z", len(z), "x", len(x))
	acc := fill8(math.Float32frombits(negInf32))
	full := len(x) & laneMask
	nan := softcapBlocks(th[:full], z[:full], x[:full], c, &acc)
	for i := full; i < len(x); i++ {
		th[i] = Tanh32(x[i] / c)
		z[i] = c * th[i]
	}
	return max8(&acc, z[full:], nan)
}

// SoftmaxGrad turns scores s into probabilities and the gradient dp of a
// softmax row's probabilities into that of its scores, in place:
//
//	s[i] ← p = Exp32(s[i] − lse);  dp[i] ← p·(dp[i] − delta)
//
// with lse the row's log Σ exp(s) and delta = Σ p·dp (the caller's).
func SoftmaxGrad(s, dp []float32, lse, delta float32) {
	sameLen("SoftmaxGrad", "s", len(s), "dp", len(dp))
	full := len(s) & laneMask
	softmaxGradBlocks(s[:full], dp[:full], lse, delta)
	for i := full; i < len(s); i++ {
		s[i] = Exp32(s[i] - lse)
		dp[i] = s[i] * (dp[i] - delta)
	}
}

// Div sets dst[i] = src[i]/d (a true division, not a multiply by 1/d).
// dst may be src.
func Div(dst, src []float32, d float32) {
	sameLen("Div", "dst", len(dst), "src", len(src))
	full := len(src) & laneMask
	divBlocks(dst[:full], src[:full], d)
	for i := full; i < len(src); i++ {
		dst[i] = src[i] / d
	}
}

// sameLen panics unless two slice arguments of op have one length.
func sameLen(op, an string, a int, bn string, b int) {
	if a != b {
		panic(fmt.Sprintf("vmath: %s: len(%s) = %d but len(%s) = %d", op, an, a, bn, b))
	}
}

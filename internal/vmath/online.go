package vmath

import (
	"fmt"
	"math"
)

// The online softmax of attention's forward pass, one block of keys at a
// time over a tile of query rows (OnlineSoftmax), and its last step
// (OnlineSoftmaxEnd). Its exponential is ExpFMA, Exp32's reduction and
// polynomial evaluated with fused multiply-adds: a third fewer operations
// than Exp32, and as accurate. Its sums keep 16 float32 lanes per row and
// block (element i of the block in lane i mod 16), widened to float64 and
// combined once (fold16): each lane adds at most a sixteenth of a block's
// keys, so a block's sum is within about keys/16 float32 roundings, and the
// running sum over blocks is float64. The Go code below is the definition;
// on amd64 the assembly (online_amd64.s: AVX-512, and AVX2 with FMA) returns
// the same bits.

// ExpFMA is e^x in float32 by Exp32's method with every multiply-add fused
// (one rounding each):
//
//	k = roundeven(x·log₂e);  r = fma(−k, C2, fma(−k, C1, x))
//	p = P(r) by Horner with fma;  e = fma(p, r·r, r) + 1;  e^x = e·2^k
//
// within 2 ulp where e^x is a normal float32, with Exp32's special cases:
// 0 below −87.3, math.Exp rounded above 88, NaN for NaN.
func ExpFMA(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < expLo:
		return 0
	case x > expHi:
		return float32(math.Exp(float64(x)))
	}
	k := float32(math.RoundToEven(float64(float32(x * log2E))))
	r := fma32(-k, expC1, x)
	r = fma32(-k, expC2, r)
	p := fma32(expP0, r, expP1)
	p = fma32(p, r, expP2)
	p = fma32(p, r, expP3)
	p = fma32(p, r, expP4)
	p = fma32(p, r, expP5)
	e := float32(fma32(p, float32(r*r), r)) + 1
	// Explicit conversions round each product on its own: the compiler may
	// otherwise fuse it with an add, here or where ExpFMA is inlined.
	return float32(e * math.Float32frombits(uint32(int32(k)+127)<<23))
}

// FMA32 is a·b + c rounded once to float32 (IEEE fusedMultiplyAdd on
// binary32): the fused instruction where Go's compiler emits one for the
// expression (arm64), elsewhere fma32Odd's exact emulation. The gemm
// package's Go micro-kernel and the exponentials here use it.
func FMA32(a, b, c float32) float32 { return fma32(a, b, c) }

// fma32Odd is a·b + c rounded once to float32, computed in float64: the
// product of two float32 is exact in float64, the sum is rounded to
// float64 with the rounding's error kept (TwoSum), and an inexact sum is
// moved to the odd one of its two float64 neighbours (round to odd), so
// that the final rounding to float32 cannot see a false tie: float64
// carries more than twice float32's precision plus two bits, which makes
// round-to-odd followed by round-to-nearest equal to one rounding to
// nearest (Boldo and Melquiond, 2008).
func fma32Odd(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	s := p + cc
	if math.IsInf(s, 0) || s != s {
		return float32(s)
	}
	bb := s - p
	e := (p - (s - bb)) + (cc - bb)
	if e != 0 {
		u := math.Float64bits(s)
		if u&1 == 0 {
			if (e > 0) == (s > 0) {
				u++
			} else {
				u--
			}
		}
		s = math.Float64frombits(u)
	}
	return float32(s)
}

// OnlineSoftmax advances the online softmax of a tile of rows by one block
// of keys. Row r holds its scores in s[r·lds : r·lds+width], of which the
// first
//
//	n = min(width, max(0, n0+r))
//
// are visible (a causal block: each row sees one key more than the row
// before it). With m = m[r], ℓ = l[r] and o = o[r·ldo : r·ldo+d] the row's
// running maximum, sum and output accumulator, a row with n ≥ 1 becomes
//
//	m' = max(m, Max(s[:n]))            (+0 for a zero maximum; NaN, as
//	                                   0x7fc00000, if m or a score is NaN)
//	if m' ≠ m:  α = ExpFMA(m − m');  ℓ ← ℓ·float64(α);  o[i] ← o[i]·α
//	s[i] ← ExpFMA(s[i] − m') for i < n (the difference rounded to float32)
//	ℓ ← ℓ + fold16(lanes),  lane j = Σ s[i] over i ≡ j (mod 16), in order,
//	                       in float32
//	s[i] ← 0 for n ≤ i < width;  m ← m'
//
// (the rescale is skipped where the maximum did not move, where α would be
// exactly 1; a first block, m = −Inf, has α = 0). A row with n = 0 only
// has s[:width] cleared. Rows are independent of each other: a row's
// results do not depend on the tile it is in.
func OnlineSoftmax(s []float32, lds, rows, width, n0 int, o []float32, ldo, d int, m []float32, l []float64) {
	if rows <= 0 {
		return
	}
	if width < 0 || d < 0 || lds < width || ldo < d {
		panic(fmt.Sprintf("vmath: OnlineSoftmax: width %d, lds %d, d %d, ldo %d", width, lds, d, ldo))
	}
	if len(s) < (rows-1)*lds+width || len(o) < (rows-1)*ldo+d || len(m) < rows || len(l) < rows {
		panic(fmt.Sprintf("vmath: OnlineSoftmax: %d rows need s %d, o %d, m and l %d: have %d, %d, %d, %d",
			rows, (rows-1)*lds+width, (rows-1)*ldo+d, rows, len(s), len(o), len(m), len(l)))
	}
	if width == 0 {
		return
	}
	if useAsm && useFMA {
		onlineSoftmaxAsm(s, lds, rows, width, n0, o, ldo, d, m, l)
		return
	}
	for r := range rows {
		n := min(width, max(0, n0+r))
		m[r], l[r] = onlineRow(s[r*lds:r*lds+width], n, o[r*ldo:r*ldo+d], m[r], l[r])
	}
}

// onlineRow is one row of OnlineSoftmax: s its width scores, n of them
// visible; it returns the new m and ℓ.
func onlineRow(s []float32, n int, o []float32, m float32, l float64) (float32, float64) {
	if n <= 0 {
		clear(s)
		return m, l
	}
	mNew := canonMax(m, Max(s[:n]))
	if mNew != m {
		alpha := ExpFMA(m - mNew)
		l = float64(l * float64(alpha)) // rounded before the sum is added
		for i := range o {
			o[i] *= alpha
		}
	}
	var acc [16]float32
	for i, v := range s[:n] {
		e := ExpFMA(v - mNew)
		s[i] = e
		acc[i%16] += e
	}
	clear(s[n:])
	return mNew, l + fold16(&acc)
}

// canonMax is the larger of a and b with one answer for every tie and
// NaN: +0 for a zero maximum, the NaN 0x7fc00000 if either is NaN.
func canonMax(a, b float32) float32 {
	switch m := max(a, b); {
	case a != a || b != b:
		return math.Float32frombits(nan32)
	case m == 0:
		return 0
	default:
		return m
	}
}

// fold16 combines 16 float32 lanes in float64 in a fixed tree: d_j =
// lane j + lane j+8, then ((d0+d4) + (d2+d6)) + ((d1+d5) + (d3+d7)).
func fold16(acc *[16]float32) float64 {
	var d [lanes]float64
	for j := range d {
		d[j] = float64(acc[j]) + float64(acc[j+8])
	}
	return sum8(&d)
}

// OnlineSoftmaxEnd finishes rows of OnlineSoftmax: for r < rows,
//
//	o[r·ldo+i] ← o[r·ldo+i]·float32(1/ℓ[r])   (i < d)
//
// the reciprocal taken in float64 and rounded once, so that out = o/ℓ to
// within 1.5 ulp at the cost of a multiply.
func OnlineSoftmaxEnd(o []float32, ldo, rows, d int, l []float64) {
	if rows <= 0 || d <= 0 {
		return
	}
	if ldo < d || len(o) < (rows-1)*ldo+d || len(l) < rows {
		panic(fmt.Sprintf("vmath: OnlineSoftmaxEnd: %d rows of %d, ldo %d: have o %d, l %d", rows, d, ldo, len(o), len(l)))
	}
	if useAsm && useFMA && onlineEndAsm(o, ldo, rows, d, l) {
		return
	}
	for r := range rows {
		row := o[r*ldo : r*ldo+d]
		Scale(row, row, float32(1/l[r]))
	}
}

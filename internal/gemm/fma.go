package gemm

import "math"

// fma32Odd is a·b + c rounded once to float32 (IEEE fusedMultiplyAdd on
// binary32), computed in float64: the product of two float32 is exact in
// float64, the sum is rounded to float64 with the rounding's error kept
// (TwoSum), and an inexact sum is moved to the odd one of its two float64
// neighbours (round to odd), so that the final rounding to float32 cannot
// see a false tie: float64 carries more than twice float32's precision plus
// two bits, which makes round-to-odd followed by round-to-nearest equal to
// one rounding to nearest (Boldo and Melquiond, 2008).
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

package vmath

import "github.com/golf-ml/golf/backend"

// FromF16 widens IEEE binary16 bit patterns to float32 (exact):
//
//	dst[i] = backend.F16Float(src[i])
//
// Every finite half, infinity and signed zero gives the same bits as
// backend.F16Float; a NaN gives a quiet NaN of the same sign (with F16C
// the payload is the half's, shifted up 13 bits and quieted, as
// backend.F16Float does, but only NaN-ness and sign are promised).
func FromF16(dst []float32, src []uint16) {
	sameLen("FromF16", "dst", len(dst), "src", len(src))
	full := len(src) & laneMask
	if useAsm && hasF16C && full > 0 {
		if use512 {
			fromF16AVX512(&dst[0], &src[0], full)
		} else {
			fromF16F16C(&dst[0], &src[0], full)
		}
	} else {
		full = 0
	}
	for i := full; i < len(src); i++ {
		dst[i] = backend.F16Float(src[i])
	}
}

// ToF16 rounds float32 to IEEE binary16 bit patterns with
// round-to-nearest-even (the rule of backend.F16Bits):
//
//	dst[i] = backend.F16Bits(src[i])
//
// Magnitudes from 65520 (halfway above the largest half, 65504) round to
// infinity; below the smallest subnormal half, 2^-24, they round to the
// nearest subnormal or to a signed zero. Every non-NaN input gives the bits
// of backend.F16Bits; a NaN gives a quiet NaN of the same sign (with F16C
// the payload is the float32's top 10 payload bits, quieted, as
// backend.F16Bits does, but only NaN-ness and sign are promised).
func ToF16(dst []uint16, src []float32) {
	sameLen("ToF16", "dst", len(dst), "src", len(src))
	full := len(src) & laneMask
	if useAsm && hasF16C && full > 0 {
		if use512 {
			toF16AVX512(&dst[0], &src[0], full)
		} else {
			toF16F16C(&dst[0], &src[0], full)
		}
	} else {
		full = 0
	}
	for i := full; i < len(src); i++ {
		dst[i] = backend.F16Bits(src[i])
	}
}

// Axpy16 is Axpy on 16-bit x (bfloat16 patterns, or binary16 when f16)
// widened in registers, without a float32 copy of x:
//
//	dst[i] += float32(alpha·widen(x[i]))
func Axpy16(dst []float32, x []uint16, alpha float32, f16 bool) {
	sameLen("Axpy16", "dst", len(dst), "x", len(x))
	full := len(x) & laneMask
	switch {
	case full == 0 || !useAsm:
		full = 0
	case f16 && hasF16C:
		axpyF16F16C(&dst[0], &x[0], full, alpha)
	case f16:
		full = 0
	default:
		axpyBF16AVX2(&dst[0], &x[0], full, alpha)
	}
	for i := full; i < len(x); i++ {
		w := bf16Float(x[i])
		if f16 {
			w = backend.F16Float(x[i])
		}
		dst[i] += float32(alpha * w)
	}
}

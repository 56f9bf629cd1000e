package vmath

import "math"

// FromBF16 widens bfloat16 bit patterns to float32 (exact):
//
//	dst[i] = float32 with bits src[i] << 16
func FromBF16(dst []float32, src []uint16) {
	sameLen("FromBF16", "dst", len(dst), "src", len(src))
	full := len(src) & laneMask
	switch {
	case useAsm && use512 && full >= 16:
		n16 := full &^ 15
		fromBF16AVX512(&dst[0], &src[0], n16)
		if full > n16 {
			fromBF16AVX2(&dst[n16], &src[n16], full-n16)
		}
	case useAsm && full > 0:
		fromBF16AVX2(&dst[0], &src[0], full)
	default:
		full = 0
	}
	for i := full; i < len(src); i++ {
		dst[i] = math.Float32frombits(uint32(src[i]) << 16)
	}
}

// ToBF16 rounds float32 to bfloat16 bit patterns with round-to-nearest-even
// (the rule of backend.BF16Bits):
//
//	u = bits of src[i]
//	dst[i] = (u >> 16) | 0x40                  if src[i] is NaN (quiet, sign kept)
//	dst[i] = (u + 0x7fff + ((u >> 16) & 1)) >> 16  otherwise
func ToBF16(dst []uint16, src []float32) {
	sameLen("ToBF16", "dst", len(dst), "src", len(src))
	full := len(src) & laneMask
	switch {
	case useAsm && use512 && full >= 16:
		n16 := full &^ 15
		if useCvtBF16 {
			toBF16CvtAVX512(&dst[0], &src[0], n16)
		} else {
			toBF16AVX512(&dst[0], &src[0], n16)
		}
		if full > n16 {
			toBF16AVX2(&dst[n16], &src[n16], full-n16)
		}
	case useAsm && full > 0:
		toBF16AVX2(&dst[0], &src[0], full)
	default:
		full = 0
	}
	for i := full; i < len(src); i++ {
		dst[i] = bf16Bits(src[i])
	}
}

// bf16Bits is one element of ToBF16.
func bf16Bits(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// bf16Float widens one bfloat16 pattern (FromBF16 of one element).
func bf16Float(u uint16) float32 { return math.Float32frombits(uint32(u) << 16) }

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

// ScaledAddBackBF16 is the backward pass of a per-channel scaled add over
// rows of bfloat16 patterns, C = len(s) columns, len(g)/C rows, in one
// pass over g and y, where this CPU has the kernel (AVX512_BF16) and C is
// a multiple of 16:
//
//	dy[r,c] = bf16(float32(s[c]·g[r,c]))              (ToBF16 of Mul)
//	acc[c] += float64(g[r,c])·float64(y[r,c])        row after row (Dot64ColsRows)
//
// It returns false, having done nothing, where there is no kernel; the
// caller widens the rows and uses Mul, ToBF16 and Dot64ColsRows.
func ScaledAddBackBF16(acc []float64, dy, g, y []uint16, s []float32) bool {
	C := len(s)
	sameLen("ScaledAddBackBF16", "acc", len(acc), "s", C)
	sameLen("ScaledAddBackBF16", "dy", len(dy), "g", len(g))
	sameLen("ScaledAddBackBF16", "y", len(y), "g", len(g))
	if !hasBF16Rows(C) || len(g)%C != 0 || len(g) == 0 {
		return false
	}
	scaledAddBackBF16(&acc[0], &dy[0], &g[0], &y[0], &s[0], C, len(g)/C, C)
	return true
}

// hasBF16Rows reports whether the fused bfloat16 row kernels run for rows
// of width C: AVX512_BF16 and whole blocks of 16.
func hasBF16Rows(C int) bool { return useAsm && use512 && useCvtBF16 && C > 0 && C%16 == 0 }

// SumSq64RowsBF16 is SumSq64Rows over rows of bfloat16 patterns, widened
// in registers: dst[r] is SumSq64 of row r's float32 values, bit for bit.
// It returns false, having done nothing, where there is no kernel (see
// ScaledAddBackBF16).
func SumSq64RowsBF16(dst []float64, x []uint16) bool {
	C := rowWidth("SumSq64RowsBF16", len(dst), len(x))
	if !hasBF16Rows(C) {
		return false
	}
	r := 0
	var acc [4][lanes]float64
	for ; r+4 <= len(dst); r += 4 {
		acc = [4][lanes]float64{}
		sumSq64x4BF16(&x[r*C], C, C, &acc)
		for k := range acc {
			dst[r+k] = sum8(&acc[k])
		}
	}
	for ; r < len(dst); r++ {
		// A row left over runs through the same kernel as the four-row
		// groups (its four rows all this one, stride 0), so that a row's
		// bits do not depend on where a caller's range cut the groups.
		acc = [4][lanes]float64{}
		sumSq64x4BF16(&x[r*C], 0, C, &acc)
		dst[r] = sum8(&acc[0])
	}
	return true
}

// ScaleRowsBF16 sets out[r,c] = bf16(float32(x[r,c]·s[r])) (Scale, then
// ToBF16) over the len(s) rows of bfloat16 patterns x, without widening
// them to memory. It returns false, having done nothing, where there is
// no kernel (see ScaledAddBackBF16).
func ScaleRowsBF16(out, x []uint16, s []float32) bool {
	sameLen("ScaleRowsBF16", "out", len(out), "x", len(x))
	C := rowWidth("ScaleRowsBF16", len(s), len(x))
	if !hasBF16Rows(C) || len(s) == 0 {
		return false
	}
	scaleRowsBF16(&out[0], &x[0], &s[0], C, len(s), C)
	return true
}

// RMSGradRowsBF16 is RMSNorm's backward pass over the len(rs) rows of
// bfloat16 g and x (and res, or nil) of width C, in registers: per row r,
// with xh = float32(x·rs[r]) (Scale),
//
//	m[r] = float32(Dot64(g, xh)/C)
//	dx   = bf16(RMSGrad(g, xh, res, rs[r], m[r]))
//
// the bits of the widened loop. dx may be g or res. It returns false,
// having done nothing, where there is no kernel (see ScaledAddBackBF16).
func RMSGradRowsBF16(dx, g, x, res []uint16, rs, m []float32) bool {
	sameLen("RMSGradRowsBF16", "g", len(g), "x", len(x))
	sameLen("RMSGradRowsBF16", "dx", len(dx), "x", len(x))
	sameLen("RMSGradRowsBF16", "m", len(m), "rs", len(rs))
	if res != nil {
		sameLen("RMSGradRowsBF16", "res", len(res), "x", len(x))
	}
	C := rowWidth("RMSGradRowsBF16", len(rs), len(x))
	if !hasBF16Rows(C) || len(rs) == 0 {
		return false
	}
	r := 0
	var acc [4][lanes]float64
	for ; r+4 <= len(rs); r += 4 {
		acc = [4][lanes]float64{}
		dot64XhBF16(&g[r*C], &x[r*C], &rs[r], C, C, &acc)
		for k := range acc {
			m[r+k] = float32(sum8(&acc[k]) / float64(C))
		}
	}
	for ; r < len(rs); r++ {
		// As in SumSq64RowsBF16: a row left over runs through the kernel.
		acc = [4][lanes]float64{}
		r4 := [4]float32{rs[r], rs[r], rs[r], rs[r]}
		dot64XhBF16(&g[r*C], &x[r*C], &r4[0], 0, C, &acc)
		m[r] = float32(sum8(&acc[0]) / float64(C))
	}
	var rp *uint16
	if res != nil {
		rp = &res[0]
	}
	rmsGradRowsBF16(&dx[0], &g[0], &x[0], rp, &rs[0], &m[0], C, len(rs), C)
	return true
}

// bf16Float widens one bfloat16 pattern (FromBF16 of one element).
func bf16Float(u uint16) float32 { return math.Float32frombits(uint32(u) << 16) }

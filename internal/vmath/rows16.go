package vmath

// Half names a 16-bit floating-point storage format of the fused row
// kernels: how a row widens to float32 and how a result rounds back.
type Half uint8

const (
	// BFloat16 rows widen as FromBF16 and round as ToBF16.
	BFloat16 Half = iota
	// Binary16 rows (IEEE half precision) widen as FromF16 and round as
	// ToF16.
	Binary16
)

func (f Half) String() string {
	if f == Binary16 {
		return "binary16"
	}
	return "bfloat16"
}

// The AVX-512 kernels of rows16_amd64.s for format f. They switch on f
// rather than index a table of function values, which would make every
// pointer argument (the callers' stack accumulators too) escape.

func scaledAddBackHalf(f Half, acc *float64, dy, gr, yr *uint16, s *float32, stride, rows, n int) {
	if f == Binary16 {
		scaledAddBackF16(acc, dy, gr, yr, s, stride, rows, n)
	} else {
		scaledAddBackBF16(acc, dy, gr, yr, s, stride, rows, n)
	}
}

func sumSq64x4Half(f Half, x *uint16, stride, n int, acc *[4][lanes]float64) {
	if f == Binary16 {
		sumSq64x4F16(x, stride, n, acc)
	} else {
		sumSq64x4BF16(x, stride, n, acc)
	}
}

func scaleRowsHalf(f Half, out, x *uint16, s *float32, stride, rows, n int) {
	if f == Binary16 {
		scaleRowsF16(out, x, s, stride, rows, n)
	} else {
		scaleRowsBF16(out, x, s, stride, rows, n)
	}
}

func dot64XhHalf(f Half, gr, x *uint16, rs *float32, stride, n int, acc *[4][lanes]float64) {
	if f == Binary16 {
		dot64XhF16(gr, x, rs, stride, n, acc)
	} else {
		dot64XhBF16(gr, x, rs, stride, n, acc)
	}
}

func rmsGradRowsHalf(f Half, dx, gr, x, res *uint16, rs, m *float32, stride, rows, n int) {
	if f == Binary16 {
		rmsGradRowsF16(dx, gr, x, res, rs, m, stride, rows, n)
	} else {
		rmsGradRowsBF16(dx, gr, x, res, rs, m, stride, rows, n)
	}
}

// hasRows16 reports whether the fused row kernels of format f run for
// rows of width C: AVX-512 (bfloat16 also needs AVX512_BF16) and whole
// blocks of 16.
func hasRows16(f Half, C int) bool {
	return useAsm && use512 && (f == Binary16 || useCvtBF16) && C > 0 && C%16 == 0
}

// ScaledAddBack16 is the backward pass of a per-channel scaled add over
// rows of 16-bit patterns of format f, C = len(s) columns, len(g)/C rows,
// in one pass over g and y, where this CPU has the kernel (see hasRows16)
// and C is a multiple of 16:
//
//	dy[r,c] = round(float32(s[c]·g[r,c]))           (Mul, then ToBF16 or ToF16)
//	acc[c] += float64(g[r,c])·float64(y[r,c])      row after row (Dot64ColsRows)
//
// It returns false, having done nothing, where there is no kernel; the
// caller widens the rows and uses Mul, the rounding and Dot64ColsRows.
func ScaledAddBack16(f Half, acc []float64, dy, g, y []uint16, s []float32) bool {
	C := len(s)
	sameLen("ScaledAddBack16", "acc", len(acc), "s", C)
	sameLen("ScaledAddBack16", "dy", len(dy), "g", len(g))
	sameLen("ScaledAddBack16", "y", len(y), "g", len(g))
	if !hasRows16(f, C) || len(g)%C != 0 || len(g) == 0 {
		return false
	}
	scaledAddBackHalf(f, &acc[0], &dy[0], &g[0], &y[0], &s[0], C, len(g)/C, C)
	return true
}

// SumSq64Rows16 is SumSq64Rows over rows of 16-bit patterns of format f,
// widened in registers: dst[r] is SumSq64 of row r's float32 values, bit
// for bit. It returns false, having done nothing, where there is no
// kernel (see ScaledAddBack16).
func SumSq64Rows16(f Half, dst []float64, x []uint16) bool {
	C := rowWidth("SumSq64Rows16", len(dst), len(x))
	if !hasRows16(f, C) {
		return false
	}
	r := 0
	var acc [4][lanes]float64
	for ; r+4 <= len(dst); r += 4 {
		acc = [4][lanes]float64{}
		sumSq64x4Half(f, &x[r*C], C, C, &acc)
		for j := range acc {
			dst[r+j] = sum8(&acc[j])
		}
	}
	for ; r < len(dst); r++ {
		// A row left over runs through the same kernel as the four-row
		// groups (its four rows all this one, stride 0), so that a row's
		// bits do not depend on where a caller's range cut the groups.
		acc = [4][lanes]float64{}
		sumSq64x4Half(f, &x[r*C], 0, C, &acc)
		dst[r] = sum8(&acc[0])
	}
	return true
}

// ScaleRows16 sets out[r,c] = round(float32(x[r,c]·s[r])) (Scale, then
// ToBF16 or ToF16) over the len(s) rows of 16-bit patterns x of format f,
// without widening them to memory. It returns false, having done
// nothing, where there is no kernel (see ScaledAddBack16).
func ScaleRows16(f Half, out, x []uint16, s []float32) bool {
	sameLen("ScaleRows16", "out", len(out), "x", len(x))
	C := rowWidth("ScaleRows16", len(s), len(x))
	if !hasRows16(f, C) || len(s) == 0 {
		return false
	}
	scaleRowsHalf(f, &out[0], &x[0], &s[0], C, len(s), C)
	return true
}

// RMSGradRows16 is RMSNorm's backward pass over the len(rs) rows of
// 16-bit g and x (and res, or nil) of format f and width C, in registers:
// per row r, with xh = float32(x·rs[r]) (Scale),
//
//	m[r] = float32(Dot64(g, xh)/C)
//	dx   = round(RMSGrad(g, xh, res, rs[r], m[r]))
//
// the bits of the widened loop. dx may be g or res. It returns false,
// having done nothing, where there is no kernel (see ScaledAddBack16).
func RMSGradRows16(f Half, dx, g, x, res []uint16, rs, m []float32) bool {
	sameLen("RMSGradRows16", "g", len(g), "x", len(x))
	sameLen("RMSGradRows16", "dx", len(dx), "x", len(x))
	sameLen("RMSGradRows16", "m", len(m), "rs", len(rs))
	if res != nil {
		sameLen("RMSGradRows16", "res", len(res), "x", len(x))
	}
	C := rowWidth("RMSGradRows16", len(rs), len(x))
	if !hasRows16(f, C) || len(rs) == 0 {
		return false
	}
	r := 0
	var acc [4][lanes]float64
	for ; r+4 <= len(rs); r += 4 {
		acc = [4][lanes]float64{}
		dot64XhHalf(f, &g[r*C], &x[r*C], &rs[r], C, C, &acc)
		for j := range acc {
			m[r+j] = float32(sum8(&acc[j]) / float64(C))
		}
	}
	for ; r < len(rs); r++ {
		// As in SumSq64Rows16: a row left over runs through the kernel.
		acc = [4][lanes]float64{}
		r4 := [4]float32{rs[r], rs[r], rs[r], rs[r]}
		dot64XhHalf(f, &g[r*C], &x[r*C], &r4[0], 0, C, &acc)
		m[r] = float32(sum8(&acc[0]) / float64(C))
	}
	var rp *uint16
	if res != nil {
		rp = &res[0]
	}
	rmsGradRowsHalf(f, &dx[0], &g[0], &x[0], rp, &rs[0], &m[0], C, len(rs), C)
	return true
}

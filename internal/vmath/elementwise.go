package vmath

import (
	"fmt"
	"math"
)

// Elementwise kernels of the CPU backend's memory-bound ops. Each is
// defined by its Go loop below, where every float32 operation rounds on
// its own: explicit float32 conversions keep the compiler from fusing a
// multiply and an add (as it does on arm64), so the Go loops and the AVX2
// assembly (elementwise_amd64.s, which issues the same operations in the
// same order) return the same bits on every architecture. Whole blocks of
// 8 go to the assembly when useAsm is set, the tail (or everything) to Go.
//
// Float64 reductions (Sum64, SumSq64, Dot64) keep 8 lanes, element 8b+j
// in lane j, combined by sum8's fixed tree, then add the tail in order;
// float32 products widened to float64 are exact, so lanes are exact sums
// rounded once per step, in the same order in both implementations.

// Scale sets dst[i] = x[i]·s. dst may be x.
func Scale(dst, x []float32, s float32) {
	sameLen("Scale", "dst", len(dst), "x", len(x))
	i := blocks8(len(x), func(n int) { scaleAVX2(&dst[0], &x[0], n, s) })
	for ; i < len(x); i++ {
		dst[i] = x[i] * s
	}
}

// Mul sets dst[i] = a[i]·b[i]. dst may be a or b.
func Mul(dst, a, b []float32) {
	sameLen("Mul", "dst", len(dst), "a", len(a))
	sameLen("Mul", "b", len(b), "a", len(a))
	i := blocks8(len(a), func(n int) { mulAVX2(&dst[0], &a[0], &b[0], n) })
	for ; i < len(a); i++ {
		dst[i] = a[i] * b[i]
	}
}

// MulAcc adds a[i]·b[i] to dst[i] (the product rounded, then the sum).
func MulAcc(dst, a, b []float32) {
	sameLen("MulAcc", "dst", len(dst), "a", len(a))
	sameLen("MulAcc", "b", len(b), "a", len(a))
	i := blocks8(len(a), func(n int) { mulAccAVX2(&dst[0], &a[0], &b[0], n) })
	for ; i < len(a); i++ {
		dst[i] += float32(a[i] * b[i])
	}
}

// MulAdd2 sets dst[i] = a[i]·x[i] + b[i]·y[i]. dst may be x or y.
func MulAdd2(dst, a, x, b, y []float32) {
	sameLen("MulAdd2", "a", len(a), "dst", len(dst))
	sameLen("MulAdd2", "x", len(x), "dst", len(dst))
	sameLen("MulAdd2", "b", len(b), "dst", len(dst))
	sameLen("MulAdd2", "y", len(y), "dst", len(dst))
	i := blocks8(len(dst), func(n int) { mulAdd2AVX2(&dst[0], &a[0], &x[0], &b[0], &y[0], n) })
	for ; i < len(dst); i++ {
		dst[i] = float32(a[i]*x[i]) + float32(b[i]*y[i])
	}
}

// AddMul sets dst[i] = x[i] + s[i]·y[i]. dst may be x or y.
func AddMul(dst, x, s, y []float32) {
	sameLen("AddMul", "x", len(x), "dst", len(dst))
	sameLen("AddMul", "s", len(s), "dst", len(dst))
	sameLen("AddMul", "y", len(y), "dst", len(dst))
	i := blocks8(len(dst), func(n int) { addMulAVX2(&dst[0], &x[0], &s[0], &y[0], n) })
	for ; i < len(dst); i++ {
		dst[i] = x[i] + float32(s[i]*y[i])
	}
}

// Axpy adds alpha·x[i] to dst[i].
func Axpy(dst, x []float32, alpha float32) {
	sameLen("Axpy", "dst", len(dst), "x", len(x))
	i := blocks8(len(x), func(n int) { axpyAVX2(&dst[0], &x[0], n, alpha) })
	for ; i < len(x); i++ {
		dst[i] += float32(alpha * x[i])
	}
}

// relu is max(x, 0) as Go's max computes it: NaN stays NaN, −0 gives +0.
func relu(x float32) float32 { return max(x, 0) }

// ReluSq sets dst[i] = max(x[i], 0)². dst may be x.
func ReluSq(dst, x []float32) {
	sameLen("ReluSq", "dst", len(dst), "x", len(x))
	i := blocks8(len(x), func(n int) { reluSqAVX2(&dst[0], &x[0], n) })
	for ; i < len(x); i++ {
		m := relu(x[i])
		dst[i] = m * m
	}
}

// ReluSqGrad sets dst[i] = (2·max(x[i], 0))·g[i]. dst may be g or x.
func ReluSqGrad(dst, g, x []float32) {
	sameLen("ReluSqGrad", "dst", len(dst), "x", len(x))
	sameLen("ReluSqGrad", "g", len(g), "x", len(x))
	i := blocks8(len(x), func(n int) { reluSqGradAVX2(&dst[0], &g[0], &x[0], n) })
	for ; i < len(x); i++ {
		dst[i] = float32(2*relu(x[i])) * g[i]
	}
}

// RMSGrad sets dx[i] = rs·(g[i] − xh[i]·m), the gradient through an RMS
// normalisation with x̂ = xh and m = mean(g·x̂); with res (same length, may
// be nil) it adds res[i] last. dx may be g or res.
func RMSGrad(dx, g, xh, res []float32, rs, m float32) {
	sameLen("RMSGrad", "g", len(g), "dx", len(dx))
	sameLen("RMSGrad", "xh", len(xh), "dx", len(dx))
	var i int
	if res == nil {
		i = blocks8(len(dx), func(n int) { rmsGradAVX2(&dx[0], &g[0], &xh[0], n, rs, m) })
		for ; i < len(dx); i++ {
			dx[i] = rs * (g[i] - float32(xh[i]*m))
		}
		return
	}
	sameLen("RMSGrad", "res", len(res), "dx", len(dx))
	i = blocks8(len(dx), func(n int) { rmsGradResAVX2(&dx[0], &g[0], &xh[0], &res[0], n, rs, m) })
	for ; i < len(dx); i++ {
		dx[i] = float32(rs*(g[i]-float32(xh[i]*m))) + res[i]
	}
}

// Rope rotates the halves of u (len 2h) by the angles whose cosines and
// sines are cs and sn (len h) and scales by g:
//
//	out[i]   = g·(u[i]·cs[i] − u[i+h]·sn[i])
//	out[i+h] = g·(u[i]·sn[i] + u[i+h]·cs[i])
//
// out must not overlap u.
func Rope(out, u, cs, sn []float32, g float32) {
	h := ropeHalf("Rope", out, u, cs, sn)
	i := 0
	if h%lanes == 0 {
		i = blocks8(h, func(n int) { ropeAVX2(&out[0], &u[0], &cs[0], &sn[0], n, g) })
	}
	for ; i < h; i++ {
		a, c := u[i], u[i+h]
		out[i] = g * (float32(a*cs[i]) - float32(c*sn[i]))
		out[i+h] = g * (float32(a*sn[i]) + float32(c*cs[i]))
	}
}

// RopeT is Rope's transpose, the gradient of Rope: with dy the gradient of
// its output,
//
//	du[i]   = g·(dy[i]·cs[i] + dy[i+h]·sn[i])
//	du[i+h] = g·(dy[i+h]·cs[i] − dy[i]·sn[i])
//
// du must not overlap dy.
func RopeT(du, dy, cs, sn []float32, g float32) {
	h := ropeHalf("RopeT", du, dy, cs, sn)
	i := 0
	if h%lanes == 0 {
		i = blocks8(h, func(n int) { ropeTAVX2(&du[0], &dy[0], &cs[0], &sn[0], n, g) })
	}
	for ; i < h; i++ {
		a, c := dy[i], dy[i+h]
		du[i] = g * (float32(a*cs[i]) + float32(c*sn[i]))
		du[i+h] = g * (float32(c*cs[i]) - float32(a*sn[i]))
	}
}

func ropeHalf(op string, out, u, cs, sn []float32) int {
	sameLen(op, "out", len(out), "u", len(u))
	sameLen(op, "cs", 2*len(cs), "u", len(u))
	sameLen(op, "sn", len(sn), "cs", len(cs))
	return len(cs)
}

// Momentum is Nesterov momentum: buf[i] = μ·buf[i] + g[i], then
// geff[i] = g[i] + μ·buf[i]. geff may be g.
func Momentum(buf, geff, g []float32, mu float32) {
	sameLen("Momentum", "buf", len(buf), "g", len(g))
	sameLen("Momentum", "geff", len(geff), "g", len(g))
	i := blocks8(len(g), func(n int) { momentumAVX2(&buf[0], &geff[0], &g[0], n, mu) })
	for ; i < len(g); i++ {
		gi := g[i]
		b := float32(mu*buf[i]) + gi
		buf[i] = b
		geff[i] = gi + float32(mu*b)
	}
}

// AdamConsts are the per-step scalars of Adam: β1, β2, 1−β1, 1−β2 (as
// float32), the learning rate, the bias corrections 1−β1^t and 1−β2^t,
// and ε.
type AdamConsts struct {
	B1, B2, OneMinusB1, OneMinusB2, LR, BC1, BC2, Eps float32
}

// Adam updates p, m and v in place (the order of operations is part of
// the definition):
//
//	m = β1·m + (1−β1)·g;  v = β2·v + ((1−β2)·g)·g
//	p = p − (lr·(m/bc1)) / (sqrt(v/bc2) + ε)
func Adam(p, g, m, v []float32, c AdamConsts) {
	sameLen("Adam", "g", len(g), "p", len(p))
	sameLen("Adam", "m", len(m), "p", len(p))
	sameLen("Adam", "v", len(v), "p", len(p))
	cs := [8]float32{c.B1, c.B2, c.OneMinusB1, c.OneMinusB2, c.LR, c.BC1, c.BC2, c.Eps}
	i := blocks8(len(p), func(n int) { adamAVX2(&p[0], &g[0], &m[0], &v[0], n, &cs) })
	for ; i < len(p); i++ {
		gi := g[i]
		mi := float32(c.B1*m[i]) + float32(c.OneMinusB1*gi)
		vi := float32(c.B2*v[i]) + float32(float32(c.OneMinusB2*gi)*gi)
		m[i], v[i] = mi, vi
		d := float32(math.Sqrt(float64(vi/c.BC2))) + c.Eps
		p[i] -= float32(c.LR*(mi/c.BC1)) / d
	}
}

// Sum64 returns Σ x[i] in float64 (lane order: see above).
func Sum64(x []float32) float64 {
	var acc [lanes]float64
	full := lanes8(len(x), func(n int) { sum64AVX2(&x[0], n, &acc) }, func(n int) {
		for i := 0; i < n; i += lanes {
			for j, v := range x[i : i+lanes : i+lanes] {
				acc[j] += float64(v)
			}
		}
	})
	s := sum8(&acc)
	for _, v := range x[full:] {
		s += float64(v)
	}
	return s
}

// SumSq64 returns Σ x[i]² in float64 (lane order: see above).
func SumSq64(x []float32) float64 {
	var acc [lanes]float64
	full := lanes8(len(x), func(n int) { sumSq64AVX2(&x[0], n, &acc) }, func(n int) {
		for i := 0; i < n; i += lanes {
			for j, v := range x[i : i+lanes : i+lanes] {
				acc[j] += float64(v) * float64(v)
			}
		}
	})
	s := sum8(&acc)
	for _, v := range x[full:] {
		s += float64(v) * float64(v)
	}
	return s
}

// Dot64 returns Σ a[i]·b[i] in float64 (lane order: see above).
func Dot64(a, b []float32) float64 {
	sameLen("Dot64", "a", len(a), "b", len(b))
	var acc [lanes]float64
	full := lanes8(len(a), func(n int) { dot64AVX2(&a[0], &b[0], n, &acc) }, func(n int) {
		for i := 0; i < n; i += lanes {
			for j := range lanes {
				acc[j] += float64(a[i+j]) * float64(b[i+j])
			}
		}
	})
	s := sum8(&acc)
	for i := full; i < len(a); i++ {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// SumSq64Rows sets dst[r] = SumSq64(x[r·C : (r+1)·C]), bit for bit, for
// the len(dst) rows of width C = len(x)/len(dst). The assembly takes four
// rows at a time, so that their chains of float64 adds overlap.
func SumSq64Rows(dst []float64, x []float32) {
	C := rowWidth("SumSq64Rows", len(dst), len(x))
	r := 0
	if full := C & laneMask; useAsm && full > 0 {
		var acc [4][lanes]float64
		for ; r+4 <= len(dst); r += 4 {
			acc = [4][lanes]float64{}
			sumSq64x4AVX2(&x[r*C], C, full, &acc)
			for k := range acc {
				s := sum8(&acc[k])
				for _, v := range x[(r+k)*C+full : (r+k+1)*C] {
					s += float64(v) * float64(v)
				}
				dst[r+k] = s
			}
		}
	}
	for ; r < len(dst); r++ {
		dst[r] = SumSq64(x[r*C : (r+1)*C])
	}
}

// Dot64Rows sets dst[r] = Dot64(a[r·C : (r+1)·C], b[r·C : (r+1)·C]), bit
// for bit, for the len(dst) rows of width C = len(a)/len(dst), four rows
// at a time in the assembly as SumSq64Rows.
func Dot64Rows(dst []float64, a, b []float32) {
	sameLen("Dot64Rows", "a", len(a), "b", len(b))
	C := rowWidth("Dot64Rows", len(dst), len(a))
	r := 0
	if full := C & laneMask; useAsm && full > 0 {
		var acc [4][lanes]float64
		for ; r+4 <= len(dst); r += 4 {
			acc = [4][lanes]float64{}
			dot64x4AVX2(&a[r*C], &b[r*C], C, full, &acc)
			for k := range acc {
				s := sum8(&acc[k])
				for i := (r+k)*C + full; i < (r+k+1)*C; i++ {
					s += float64(a[i]) * float64(b[i])
				}
				dst[r+k] = s
			}
		}
	}
	for ; r < len(dst); r++ {
		dst[r] = Dot64(a[r*C:(r+1)*C], b[r*C:(r+1)*C])
	}
}

// rowWidth returns the width of rows rows over n elements, panicking when
// n is not a whole number of them.
func rowWidth(op string, rows, n int) int {
	if rows == 0 {
		if n != 0 {
			panic(fmt.Sprintf("vmath: %s: %d elements in 0 rows", op, n))
		}
		return 0
	}
	if n%rows != 0 {
		panic(fmt.Sprintf("vmath: %s: %d elements are not %d whole rows", op, n, rows))
	}
	return n / rows
}

// Dot64Cols adds a[i]·b[i] to acc[i] in float64: one row's contribution
// to per-column sums over rows.
func Dot64Cols(acc []float64, a, b []float32) {
	sameLen("Dot64Cols", "acc", len(acc), "a", len(a))
	sameLen("Dot64Cols", "b", len(b), "a", len(a))
	i := blocks8(len(a), func(n int) { dot64ColsAVX2(&acc[0], &a[0], &b[0], n) })
	for ; i < len(a); i++ {
		acc[i] += float64(a[i]) * float64(b[i])
	}
}

// Dot64ColsRows adds to acc the products of the rows of a and b, row after
// row: Dot64Cols(acc, a[r·C : (r+1)·C], b[r·C : (r+1)·C]) for r = 0, 1, …
// in turn, C = len(acc), the same bits. The AVX-512 assembly keeps each
// block of acc in a register across the rows.
func Dot64ColsRows(acc []float64, a, b []float32) {
	sameLen("Dot64ColsRows", "a", len(a), "b", len(b))
	C := len(acc)
	if C == 0 && len(a) == 0 {
		return
	}
	if C == 0 || len(a)%C != 0 {
		panic(fmt.Sprintf("vmath: Dot64ColsRows: %d elements are not whole rows of %d", len(a), C))
	}
	rows := len(a) / C
	if full := C & laneMask; useAsm && use512 && full > 0 && rows > 0 {
		dot64ColsRowsAVX512(&acc[0], &a[0], &b[0], C, rows, full)
		for r := range rows {
			for i := full; i < C; i++ {
				acc[i] += float64(a[r*C+i]) * float64(b[r*C+i])
			}
		}
		return
	}
	for r := range rows {
		Dot64Cols(acc, a[r*C:(r+1)*C], b[r*C:(r+1)*C])
	}
}

// blocks8 runs f on the whole blocks of 8 of an n-element operation when
// the assembly is on, and returns where the Go loop is to start: after
// those blocks, or at 0.
func blocks8(n int, f func(n int)) int {
	full := n & laneMask
	if !useAsm || full == 0 {
		return 0
	}
	f(full)
	return full
}

// lanes8 runs a float64 reduction's whole blocks of 8: f on the assembly
// when it is on, else g, the Go loop over the same lanes. It returns the
// number of elements done.
func lanes8(n int, f, g func(n int)) int {
	full := n & laneMask
	if full == 0 {
		return 0
	}
	if useAsm {
		f(full)
	} else {
		g(full)
	}
	return full
}

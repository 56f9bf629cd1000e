package vmath

import (
	"fmt"
	"math"
)

// Fused query/key normalisation and rotary embedding over whole rows of
// heads: one call does every head of a run of rows at consecutive
// positions, so a 64-element head costs no call, bounds check or closure
// of its own. Each function is defined by its Go loop below, written with
// the operations, roundings and float64 lane order of the separate
// kernels it fuses (SumSq64, Scale, Rope, RopeT, Dot64, RMSGrad), so it
// returns their bits; the assembly (qknorm_amd64.s) issues the same
// operations in the same order: AVX-512 when the half head dim is a
// multiple of 16, AVX2 (with FMA, for the float64 sums only, where it is
// exact: see scripts/gen_vmath_qknorm.py) when it is a multiple of 8.
//
// QKNormRopeBF16 and QKNormRopeGradBF16 read and write bfloat16 rows
// (AVX-512 only): they return the bits of FromBF16, the float32 function
// and ToBF16 in turn, in one pass. QKNormRopeF16 and QKNormRopeGradF16 do
// the same on binary16 rows, with FromF16 and ToF16.
//
// Shapes: x, out, dout and dx hold rows·Hx heads of D elements (row r,
// head h at (r·Hx + h)·D), Hx = len(gain); rstd holds rows·Hx; cs and sn
// hold the rotary table's rows·D/2 entries for the rows' positions (row r
// at r·D/2), so the rows must not cross the end of a sequence.

// QKNormRope normalises, rotates and scales each head (half = D/2):
//
//	rstd[k] = float32(1/sqrt(Σ_d x_k[d]²/D + eps))   (the sum in float64, SumSq64's order)
//	u = x_k·rstd[k]
//	out_k[i]      = gain[h]·(u[i]·cs[i] − u[i+half]·sn[i])
//	out_k[i+half] = gain[h]·(u[i]·sn[i] + u[i+half]·cs[i])
//
// for head k = r·Hx + h, cs and sn the entries of row r. out may be x.
func QKNormRope(out, rstd, x, cs, sn, gain []float32, D int, eps float64) {
	rows, half := qkCheck("QKNormRope", rstd, x, cs, sn, gain, D)
	sameLen("QKNormRope", "out", len(out), "x", len(x))
	if rows == 0 {
		return
	}
	switch {
	case useAsm && use512 && half%(2*lanes) == 0:
		qkNormRopeAVX512(&out[0], &rstd[0], &x[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half, eps)
		return
	case useAsm && haveFMA && half%lanes == 0:
		qkNormRopeAVX2(&out[0], &rstd[0], &x[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half, eps)
		return
	}
	qkNormRopeGo(out, rstd, x, cs, sn, gain, D, eps)
}

// QKNormRopeGrad is QKNormRope's backward pass given rstd (as the forward
// pass returned it) and dout, the gradient of out. Per head k = r·Hx + h,
// with u = x_k·rstd[k], y = the rotation of u (Rope with gain 1) and g =
// gain[h]:
//
//	du_k[i]      = g·(dout_k[i]·cs[i] + dout_k[i+half]·sn[i])
//	du_k[i+half] = g·(dout_k[i+half]·cs[i] − dout_k[i]·sn[i])
//	m  = float32(Σ_d du[d]·u[d] / D)            (Dot64's order)
//	dx_k[d] = rstd[k]·(du[d] − u[d]·m)
//	dgain[h] += Σ_d dout_k[d]·y[d]              (Dot64's order, rows in order)
//
// dgain (len Hx, float64) may be nil to skip the gain gradient. dx may be
// x or dout.
func QKNormRopeGrad(dx []float32, dgain []float64, dout, x, rstd, cs, sn, gain []float32, D int) {
	rows, half := qkCheck("QKNormRopeGrad", rstd, x, cs, sn, gain, D)
	sameLen("QKNormRopeGrad", "dx", len(dx), "x", len(x))
	sameLen("QKNormRopeGrad", "dout", len(dout), "x", len(x))
	if dgain != nil {
		sameLen("QKNormRopeGrad", "dgain", len(dgain), "gain", len(gain))
	}
	if rows == 0 {
		return
	}
	var dg *float64
	if dgain != nil {
		dg = &dgain[0]
	}
	switch {
	case useAsm && use512 && half%(2*lanes) == 0:
		qkNormRopeGradAVX512(&dx[0], dg, &dout[0], &x[0], &rstd[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half)
	case useAsm && haveFMA && half%lanes == 0:
		qkNormRopeGradAVX2(&dx[0], dg, &dout[0], &x[0], &rstd[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half)
	default:
		qkNormRopeGradGo(dx, dgain, dout, x, rstd, cs, sn, gain, D)
	}
}

// useGrad64 selects the one-pass backward kernels of 16-bit rows for head
// dim 64 (qknorm64_amd64.s) over the generated ones, which take every
// head dim; both return the same bits.
var useGrad64 = true

// HasQKNormRopeBF16 reports whether QKNormRopeBF16 and QKNormRopeGradBF16
// run for head dim D: on AVX-512, D a multiple of 32.
func HasQKNormRopeBF16(D int) bool { return useAsm && use512 && D > 0 && D%32 == 0 }

// QKNormRopeBF16 is QKNormRope on bfloat16 x and out: x widened as by
// FromBF16, out rounded as by ToBF16. out may be x. It panics unless
// HasQKNormRopeBF16(D).
func QKNormRopeBF16(out []uint16, rstd []float32, x []uint16, cs, sn, gain []float32, D int, eps float64) {
	rows, half := qkCheck16("QKNormRopeBF16", HasQKNormRopeBF16, "out", out, rstd, x, cs, sn, gain, D)
	if rows > 0 && useCvtBF16 {
		qkNormRopeBF16CvtAVX512(&out[0], &rstd[0], &x[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half, eps)
	} else if rows > 0 {
		qkNormRopeBF16AVX512(&out[0], &rstd[0], &x[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half, eps)
	}
}

// QKNormRopeGradBF16 is QKNormRopeGrad on bfloat16 dout, x and dx: dout
// and x widened as by FromBF16, dx rounded as by ToBF16. dx may be x or
// dout. It panics unless HasQKNormRopeBF16(D).
func QKNormRopeGradBF16(dx []uint16, dgain []float64, dout, x []uint16, rstd, cs, sn, gain []float32, D int) {
	rows, half, dg := qkCheckGrad16("QKNormRopeGradBF16", HasQKNormRopeBF16, dx, dgain, dout, x, rstd, cs, sn, gain, D)
	switch {
	case rows == 0:
	case useCvtBF16 && useGrad64 && half == 32:
		qkNormRopeGrad64BF16(&dx[0], dg, &dout[0], &x[0], &rstd[0], &cs[0], &sn[0], &gain[0], rows, len(gain))
	case useCvtBF16:
		qkNormRopeGradBF16CvtAVX512(&dx[0], dg, &dout[0], &x[0], &rstd[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half)
	default:
		qkNormRopeGradBF16AVX512(&dx[0], dg, &dout[0], &x[0], &rstd[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half)
	}
}

// HasQKNormRopeF16 reports whether QKNormRopeF16 and QKNormRopeGradF16
// run for head dim D: on AVX-512, D a multiple of 32.
func HasQKNormRopeF16(D int) bool { return useAsm && use512 && D > 0 && D%32 == 0 }

// QKNormRopeF16 is QKNormRope on binary16 x and out: x widened as by
// FromF16, out rounded as by ToF16. out may be x. It panics unless
// HasQKNormRopeF16(D).
func QKNormRopeF16(out []uint16, rstd []float32, x []uint16, cs, sn, gain []float32, D int, eps float64) {
	rows, half := qkCheck16("QKNormRopeF16", HasQKNormRopeF16, "out", out, rstd, x, cs, sn, gain, D)
	if rows > 0 {
		qkNormRopeF16AVX512(&out[0], &rstd[0], &x[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half, eps)
	}
}

// QKNormRopeGradF16 is QKNormRopeGrad on binary16 dout, x and dx: dout
// and x widened as by FromF16, dx rounded as by ToF16. dx may be x or
// dout. It panics unless HasQKNormRopeF16(D).
func QKNormRopeGradF16(dx []uint16, dgain []float64, dout, x []uint16, rstd, cs, sn, gain []float32, D int) {
	rows, half, dg := qkCheckGrad16("QKNormRopeGradF16", HasQKNormRopeF16, dx, dgain, dout, x, rstd, cs, sn, gain, D)
	switch {
	case rows == 0:
	case useGrad64 && half == 32:
		qkNormRopeGrad64F16(&dx[0], dg, &dout[0], &x[0], &rstd[0], &cs[0], &sn[0], &gain[0], rows, len(gain))
	default:
		qkNormRopeGradF16AVX512(&dx[0], dg, &dout[0], &x[0], &rstd[0], &cs[0], &sn[0], &gain[0], rows, len(gain), half)
	}
}

// qkCheck16 is qkCheck for 16-bit rows, which also needs the kernel: it
// panics unless has(D) and the shapes agree, out (named name) as long as
// x.
func qkCheck16(op string, has func(int) bool, name string, out []uint16, rstd []float32, x []uint16, cs, sn, gain []float32, D int) (rows, half int) {
	if !has(D) {
		panic(fmt.Sprintf("vmath: %s: no kernel for head dim %d on this CPU", op, D))
	}
	rows, half = qkRows(op, len(x), rstd, cs, sn, gain, D)
	sameLen(op, name, len(out), "x", len(x))
	return rows, half
}

// qkCheckGrad16 is qkCheck16 for a backward pass, which also checks dout
// and dgain and returns dgain's first element (nil for none or no rows).
func qkCheckGrad16(op string, has func(int) bool, dx []uint16, dgain []float64, dout, x []uint16, rstd, cs, sn, gain []float32, D int) (rows, half int, dg *float64) {
	rows, half = qkCheck16(op, has, "dx", dx, rstd, x, cs, sn, gain, D)
	sameLen(op, "dout", len(dout), "x", len(x))
	if dgain != nil {
		sameLen(op, "dgain", len(dgain), "gain", len(gain))
		if rows > 0 {
			dg = &dgain[0]
		}
	}
	return rows, half, dg
}

// qkCheck panics unless the shapes agree (see above) and returns the
// number of rows and D/2.
func qkCheck(op string, rstd, x, cs, sn, gain []float32, D int) (rows, half int) {
	if D <= 0 || D%2 != 0 {
		panic(fmt.Sprintf("vmath: %s: head dim %d is not positive and even", op, D))
	}
	return qkRows(op, len(x), rstd, cs, sn, gain, D)
}

// qkRows checks x (nx elements), rstd, cs and sn against gain and D and
// returns the number of rows and D/2.
func qkRows(op string, nx int, rstd, cs, sn, gain []float32, D int) (rows, half int) {
	hx := len(gain)
	if hx == 0 {
		if len(rstd) != 0 || nx != 0 {
			panic(fmt.Sprintf("vmath: %s: no gain for %d rstd", op, len(rstd)))
		}
		return 0, D / 2
	}
	if len(rstd)%hx != 0 {
		panic(fmt.Sprintf("vmath: %s: len(rstd) = %d is not a multiple of len(gain) = %d", op, len(rstd), hx))
	}
	rows, half = len(rstd)/hx, D/2
	sameLen(op, "x", nx, "rstd·D", len(rstd)*D)
	sameLen(op, "cs", len(cs), "rows·D/2", rows*half)
	sameLen(op, "sn", len(sn), "cs", len(cs))
	return rows, half
}

// qkNormRopeGo is QKNormRope's definition.
func qkNormRopeGo(out, rstd, x, cs, sn, gain []float32, D int, eps float64) {
	hx, half := len(gain), D/2
	for r := range len(rstd) / hx {
		c, s := cs[r*half:(r+1)*half], sn[r*half:(r+1)*half]
		for h, g := range gain {
			k := r*hx + h
			xk, ok := x[k*D:(k+1)*D], out[k*D:(k+1)*D]
			rs := float32(1 / math.Sqrt(sumSqGo(xk)/float64(D)+eps))
			rstd[k] = rs
			for i := range half {
				a, b := xk[i]*rs, xk[i+half]*rs
				ok[i] = g * (float32(a*c[i]) - float32(b*s[i]))
				ok[i+half] = g * (float32(a*s[i]) + float32(b*c[i]))
			}
		}
	}
}

// sumSqGo is SumSq64 in Go: whole blocks of 8 in lanes, sum8, the tail
// in order.
func sumSqGo(x []float32) float64 {
	var acc [lanes]float64
	full := len(x) & laneMask
	for i := 0; i < full; i += lanes {
		for j, v := range x[i : i+lanes : i+lanes] {
			acc[j] += float64(v) * float64(v)
		}
	}
	s := sum8(&acc)
	for _, v := range x[full:] {
		s += float64(v) * float64(v)
	}
	return s
}

// qkHead is one head of QKNormRopeGrad: its slices and scalars, and, for
// i < half, the elements of u, y and du at i (Lo) and i+half (Hi), each
// computed as the separate kernels compute it (u by Scale, y by Rope with
// gain 1, du by RopeT).
type qkHead struct {
	x, g, c, s []float32
	rs, gain   float32
	half       int
}

func (q *qkHead) uLo(i int) float32 { return q.x[i] * q.rs }
func (q *qkHead) uHi(i int) float32 { return q.x[i+q.half] * q.rs }

func (q *qkHead) yLo(i int) float32 { return float32(q.uLo(i)*q.c[i]) - float32(q.uHi(i)*q.s[i]) }
func (q *qkHead) yHi(i int) float32 { return float32(q.uLo(i)*q.s[i]) + float32(q.uHi(i)*q.c[i]) }

// duLo and duHi round their product explicitly: inlined into dx's
// du − u·m, it could otherwise fuse into a multiply-subtract (arm64).
func (q *qkHead) duLo(i int) float32 {
	return float32(q.gain * (float32(q.g[i]*q.c[i]) + float32(q.g[i+q.half]*q.s[i])))
}

func (q *qkHead) duHi(i int) float32 {
	return float32(q.gain * (float32(q.g[i+q.half]*q.c[i]) - float32(q.g[i]*q.s[i])))
}

// terms returns element d's terms of Σ dout·y and Σ du·u: products of
// widened float32, exact.
func (q *qkHead) terms(d int) (gy, duu float64) {
	if i := d - q.half; i >= 0 {
		return float64(q.g[d]) * float64(q.yHi(i)), float64(q.duHi(i)) * float64(q.uHi(i))
	}
	return float64(q.g[d]) * float64(q.yLo(d)), float64(q.duLo(d)) * float64(q.uLo(d))
}

// sums returns Σ dout·y (when gy, else 0) and Σ du·u in Dot64's order:
// whole blocks of 8 in lanes (element d in lane d mod 8), sum8, then the
// tail in order. The blocks' elements of the low half come first, then
// those of the high half, each in a loop of its own (with the terms'
// definitions, yLo and the rest, written out).
func (q *qkHead) sums(gy bool) (sy, su float64) {
	n := 2 * q.half
	full := n & laneMask
	var ay, au [lanes]float64
	x, g, c, s, rs, gain, half := q.x, q.g, q.c, q.s, q.rs, q.gain, q.half
	for d := range min(half, full) {
		ua, uc := x[d]*rs, x[d+half]*rs
		ga, gc := g[d], g[d+half]
		if gy {
			ay[d&(lanes-1)] += float64(ga) * float64(float32(ua*c[d])-float32(uc*s[d]))
		}
		au[d&(lanes-1)] += float64(gain*(float32(ga*c[d])+float32(gc*s[d]))) * float64(ua)
	}
	for d := half; d < full; d++ {
		i := d - half
		ua, uc := x[i]*rs, x[d]*rs
		ga, gc := g[i], g[d]
		if gy {
			ay[d&(lanes-1)] += float64(gc) * float64(float32(ua*s[i])+float32(uc*c[i]))
		}
		au[d&(lanes-1)] += float64(gain*(float32(gc*c[i])-float32(ga*s[i]))) * float64(uc)
	}
	sy, su = sum8(&ay), sum8(&au)
	for d := full; d < n; d++ {
		y, u := q.terms(d)
		sy += y
		su += u
	}
	if !gy {
		sy = 0
	}
	return sy, su
}

// qkNormRopeGradGo is QKNormRopeGrad's definition.
func qkNormRopeGradGo(dx []float32, dgain []float64, dout, x, rstd, cs, sn, gain []float32, D int) {
	hx, half := len(gain), D/2
	for r := range len(rstd) / hx {
		c, s := cs[r*half:(r+1)*half], sn[r*half:(r+1)*half]
		for h, g := range gain {
			k := r*hx + h
			q := qkHead{x: x[k*D : (k+1)*D], g: dout[k*D : (k+1)*D], c: c, s: s, rs: rstd[k], gain: g, half: half}
			sy, su := q.sums(dgain != nil)
			if dgain != nil {
				dgain[h] += sy
			}
			m := float32(su / float64(D))
			o := dx[k*D : (k+1)*D]
			for i := range half {
				// Both halves read before either is written: dx may be x or dout.
				lo := q.rs * (q.duLo(i) - float32(q.uLo(i)*m))
				hi := q.rs * (q.duHi(i) - float32(q.uHi(i)*m))
				o[i], o[i+half] = lo, hi
			}
		}
	}
}

package cpu

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/parallel"
	"github.com/golf-ml/golf/internal/vmath"
)

// ropeKey identifies a rotary table.
type ropeKey struct {
	seqLen, dim int
	base        float32
}

// ropeTable holds cos(pθ_i) and sin(pθ_i), (T, D/2), θ_i = base^(−2i/D),
// computed in float64 and rounded to float32.
type ropeTable struct {
	cos, sin []float32
}

// ropeFor returns the (cached) rotary table for seqLen positions of head
// dim D (b.mu held).
func (b *Backend) ropeFor(seqLen, D int, base float32) *ropeTable {
	k := ropeKey{seqLen, D, base}
	if t, ok := b.rope[k]; ok {
		return t
	}
	cs := backend.RopeTable(seqLen, D, base)
	t := &ropeTable{cos: make([]float32, len(cs)/2), sin: make([]float32, len(cs)/2)}
	for j := range t.cos {
		t.cos[j], t.sin[j] = cs[2*j], cs[2*j+1]
	}
	b.rope[k] = t
	return t
}

// qkShapes checks x (N, Hx, D) with N a multiple of seqLen, D even and
// positive, rstd (N, Hx), gain (Hx) or nil, and returns N, Hx, D.
func qkShapes(op string, x, rstd, gain *backend.Tensor, seqLen int) (N, Hx, D int) {
	s := wantRank(op, "x", x, 3)
	N, Hx, D = s[0], s[1], s[2]
	if D%2 != 0 || D == 0 {
		fail(op, "head dim %d of x %v is odd or zero", D, s)
	}
	if seqLen <= 0 || N%seqLen != 0 {
		fail(op, "rows %d of x %v not a multiple of seqLen %d", N, s, seqLen)
	}
	wantShape(op, "rstd", rstd, N, Hx)
	if gain != nil {
		wantShape(op, "gain", gain, Hx)
	}
	return N, Hx, D
}

// qkLoop is the body of QKNormRopeForward (rows) and QKNormRopeBackward
// (a reduction over rows of the per-head gain gradients).
type qkLoop struct {
	b            *Backend
	backward     bool
	Hx, D, T     int
	out, x, dout *backend.Tensor
	r, g         []float32
	rope         *ropeTable
}

func (l *qkLoop) Run(w, lo, hi int) { l.rows(w, lo, hi, nil) }

func (l *qkLoop) reduce(w, lo, hi int, acc []float64) { l.rows(w, lo, hi, acc) }

// qkRun is the most rows of an F32 or fused BF16 or F16 vmath call (the
// rows are used in place, so a run ends only at a sequence's end, the
// range's or here).
const qkRun = 64

// rows does rows [lo, hi), in the backward pass collecting Σ dout·y into
// acc (Hx), rows in order.
func (l *qkLoop) rows(w, lo, hi int, acc []float64) {
	bf := l.x.DType == backend.BF16 && vmath.HasQKNormRopeBF16(l.D)
	f16 := l.x.DType == backend.F16 && vmath.HasQKNormRopeF16(l.D)
	if l.x.DType != backend.F32 && !bf && !f16 {
		l.rows16(w, lo, hi, acc)
		return
	}
	Hx, D := l.Hx, l.D
	W, half := Hx*D, D/2
	for n := lo; n < hi; {
		// A run of rows at consecutive positions of one sequence: one fused
		// call over all its heads.
		p := n % l.T
		k := min(hi-n, l.T-p, qkRun)
		cs, sn, rs := l.rope.cos[p*half:(p+k)*half], l.rope.sin[p*half:(p+k)*half], l.r[n*Hx:(n+k)*Hx]
		i, j := n*W, (n+k)*W
		switch {
		case bf && l.backward:
			vmath.QKNormRopeGradBF16(u16s(l.out)[i:j], acc, u16s(l.dout)[i:j], u16s(l.x)[i:j], rs, cs, sn, l.g, D)
		case bf:
			vmath.QKNormRopeBF16(u16s(l.out)[i:j], rs, u16s(l.x)[i:j], cs, sn, l.g, D, backend.RMSNormEps)
		case f16 && l.backward:
			vmath.QKNormRopeGradF16(u16s(l.out)[i:j], acc, u16s(l.dout)[i:j], u16s(l.x)[i:j], rs, cs, sn, l.g, D)
		case f16:
			vmath.QKNormRopeF16(u16s(l.out)[i:j], rs, u16s(l.x)[i:j], cs, sn, l.g, D, backend.RMSNormEps)
		case l.backward:
			vmath.QKNormRopeGrad(f32s(l.out)[i:j], acc, f32s(l.dout)[i:j], f32s(l.x)[i:j], rs, cs, sn, l.g, D)
		default:
			vmath.QKNormRope(f32s(l.out)[i:j], rs, f32s(l.x)[i:j], cs, sn, l.g, D, backend.RMSNormEps)
		}
		n += k
	}
}

// rows16 is rows for 16-bit tensors without a fused kernel: a row at a
// time, widened into and rounded from the participant's buffers, which so
// stay in L1 (faster here than runs of rows).
func (l *qkLoop) rows16(w, lo, hi int, acc []float64) {
	b, Hx, D := l.b, l.Hx, l.D
	W, half := Hx*D, D/2
	xs, gs, os := b.buf(w, 0, W), b.buf(w, 1, W), b.buf(w, 2, W)
	for n := lo; n < hi; n++ {
		loadRange(l.x, n*W, xs)
		p := n % l.T
		cs, sn, rs := l.rope.cos[p*half:(p+1)*half], l.rope.sin[p*half:(p+1)*half], l.r[n*Hx:(n+1)*Hx]
		if l.backward {
			loadRange(l.dout, n*W, gs)
			vmath.QKNormRopeGrad(os, acc, gs, xs, rs, cs, sn, l.g, D)
		} else {
			vmath.QKNormRope(os, rs, xs, cs, sn, l.g, D, backend.RMSNormEps)
		}
		storeRange(l.out, n*W, os)
	}
}

// QKNormRopeForward, per row n and head h of x (N, Hx, D): RMSNorm over D,
// rotary embedding at position p = n mod seqLen (halves i and i+D/2), gain:
//
//	rstd[n,h] = 1/sqrt(mean_d x[n,h,d]² + RMSNormEps);  u = x·rstd
//	out[i]     = g[h]·(u[i]·cos(pθ_i) − u[i+D/2]·sin(pθ_i))
//	out[i+D/2] = g[h]·(u[i]·sin(pθ_i) + u[i+D/2]·cos(pθ_i))
//	out CD (N, Hx, D), rstd F32 (N, Hx), x CD (N, Hx, D), gain F32 (Hx) or nil
func (b *Backend) QKNormRopeForward(out, rstd, x, gain *backend.Tensor, seqLen int, base float32) {
	const op = "QKNormRopeForward"
	wantCD(op, []string{"out", "x"}, out, x)
	wantF32(op, []string{"rstd", "gain"}, rstd, gain)
	N, Hx, D := qkShapes(op, x, rstd, gain, seqLen)
	wantShape(op, "out", out, N, Hx, D)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.begin()
	l := &b.loops.qk
	*l = qkLoop{b: b, Hx: Hx, D: D, T: seqLen, out: out, x: x, r: f32s(rstd), g: b.gains(gain, Hx), rope: b.ropeFor(seqLen, D, base)}
	parallel.For(N, rowGrain, l)
	*l = qkLoop{}
}

// QKNormRopeBackward: with y = R(u) the rotated normalised row,
//
//	du = g[h]·Rᵀ(dout);  dx = rstd·(du − u·mean_d(du·u))   dx CD (N, Hx, D), overwritten
//	dgain[h] += Σ_{n,d} dout[n,h,d]·y[n,h,d]                dgain F32 (Hx); nil to skip, nil when gain is nil
//	dout, x CD (N, Hx, D), rstd F32 (N, Hx), gain F32 (Hx) or nil
func (b *Backend) QKNormRopeBackward(dx, dgain, dout, x, rstd, gain *backend.Tensor, seqLen int, base float32) {
	const op = "QKNormRopeBackward"
	wantCD(op, []string{"dx", "dout", "x"}, dx, dout, x)
	wantF32(op, []string{"dgain", "rstd", "gain"}, dgain, rstd, gain)
	N, Hx, D := qkShapes(op, x, rstd, gain, seqLen)
	wantShape(op, "dx", dx, N, Hx, D)
	wantShape(op, "dout", dout, N, Hx, D)
	if dgain != nil && gain == nil {
		fail(op, "dgain given without gain")
	}
	if dgain != nil {
		wantShape(op, "dgain", dgain, Hx)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.begin()
	l := &b.loops.qk
	*l = qkLoop{b: b, backward: true, Hx: Hx, D: D, T: seqLen, out: dx, x: x, dout: dout, r: f32s(rstd), g: b.gains(gain, Hx), rope: b.ropeFor(seqLen, D, base)}
	if dgain != nil {
		addInto(f32s(dgain), b.reduceRows(N, Hx, l))
	} else {
		parallel.For(N, rowGrain, l)
	}
	*l = qkLoop{}
}

package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
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

// ropeFor returns the (cached) rotary table for seqLen positions of head dim D.
func (b *Backend) ropeFor(seqLen, D int, base float32) *ropeTable {
	k := ropeKey{seqLen, D, base}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.rope[k]; ok {
		return t
	}
	half := D / 2
	t := &ropeTable{cos: make([]float32, seqLen*half), sin: make([]float32, seqLen*half)}
	for i := range half {
		theta := math.Pow(float64(base), -2*float64(i)/float64(D))
		for p := range seqLen {
			s, c := math.Sincos(float64(p) * theta)
			t.cos[p*half+i], t.sin[p*half+i] = float32(c), float32(s)
		}
	}
	b.rope[k] = t
	return t
}

// qkShapes checks x (N, Hx, D) with N a multiple of seqLen, D even, rstd
// (N, Hx), gain (Hx) or nil, and returns N, Hx, D.
func qkShapes(op string, x, rstd, gain *backend.Tensor, seqLen int) (N, Hx, D int) {
	s := wantRank(op, "x", x, 3)
	N, Hx, D = s[0], s[1], s[2]
	if D%2 != 0 {
		fail(op, "head dim %d of x %v is odd", D, s)
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
	rope := b.ropeFor(seqLen, D, base)
	r := f32s(rstd)
	g := gains(gain, Hx)
	W, half := Hx*D, D/2
	parallelFor(N, 16, func(lo, hi int) {
		xb, ob, u := make([]float32, W), make([]float32, W), make([]float32, D)
		for n := lo; n < hi; n++ {
			xs := view(x, n*W, W, xb)
			os := dest(out, n*W, W, ob)
			p := n % seqLen
			cs, sn := rope.cos[p*half:(p+1)*half], rope.sin[p*half:(p+1)*half]
			for h := range Hx {
				r[n*Hx+h] = rmsRow(u, xs[h*D:(h+1)*D])
				o := os[h*D : (h+1)*D]
				for i := range half {
					a, c := u[i], u[i+half]
					o[i] = g[h] * (a*cs[i] - c*sn[i])
					o[i+half] = g[h] * (a*sn[i] + c*cs[i])
				}
			}
			flush(out, n*W, os)
		}
	})
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
	rope := b.ropeFor(seqLen, D, base)
	r := f32s(rstd)
	g := gains(gain, Hx)
	W, half := Hx*D, D/2
	sums := reduceRows(N, Hx, func(lo, hi int, acc []float64) {
		xb, gb, ob, u, du := make([]float32, W), make([]float32, W), make([]float32, W), make([]float32, D), make([]float32, D)
		for n := lo; n < hi; n++ {
			xs := view(x, n*W, W, xb)
			gs := view(dout, n*W, W, gb)
			os := dest(dx, n*W, W, ob)
			p := n % seqLen
			cs, sn := rope.cos[p*half:(p+1)*half], rope.sin[p*half:(p+1)*half]
			for h := range Hx {
				rs := r[n*Hx+h]
				xh, gh := xs[h*D:(h+1)*D], gs[h*D:(h+1)*D]
				for d, v := range xh {
					u[d] = v * rs
				}
				var dg float64
				for i := range half {
					a, c := u[i], u[i+half]
					ga, gc := gh[i], gh[i+half]
					dg += float64(ga)*float64(a*cs[i]-c*sn[i]) + float64(gc)*float64(a*sn[i]+c*cs[i])
					du[i] = g[h] * (ga*cs[i] + gc*sn[i])
					du[i+half] = g[h] * (gc*cs[i] - ga*sn[i])
				}
				acc[h] += dg
				var dot float64
				for d, v := range u {
					dot += float64(du[d]) * float64(v)
				}
				m := float32(dot / float64(D))
				o := os[h*D : (h+1)*D]
				for d, v := range u {
					o[d] = rs * (du[d] - v*m)
				}
			}
			flush(dx, n*W, os)
		}
	})
	if dgain != nil {
		addInto(f32s(dgain), sums)
	}
}

// gains returns the per-head gains, ones when gain is nil.
func gains(gain *backend.Tensor, H int) []float32 {
	if gain != nil {
		return f32s(gain)
	}
	g := make([]float32, H)
	for i := range g {
		g[i] = 1
	}
	return g
}

package backendtest

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
)

// --- qk norm + rope + gain ----------------------------------------------------

// qkNormRopeCase runs QKNormRopeForward and QKNormRopeBackward on B
// sequences of T rows (positions wrap at T) with Hx heads of dim D.
type qkNormRopeCase struct {
	B, T, Hx, D int
	noGain      bool
	base        float32
	view        bool
}

func (c qkNormRopeCase) op() backend.Op { return backend.OpQKNormRope }
func (c qkNormRopeCase) name() string {
	s := fmt.Sprintf("B%d_T%d_H%d_D%d_base%g", c.B, c.T, c.Hx, c.D, c.base)
	if c.noGain {
		s += "_gain=nil"
	}
	return s + viewSuffix(c.view)
}

func (c qkNormRopeCase) run(h *harness) {
	h.views = c.view
	N, Hx, D, T := c.B*c.T, c.Hx, c.D, c.T
	base := float64(c.base)
	x, xv := h.input("x", h.dt, h.rowScaled(N*Hx, D), N, Hx, D)
	var gain *backend.Tensor
	var gv []float64
	if !c.noGain {
		gv = h.normal(Hx, 0.5)
		for i := range gv {
			gv[i] += 1.5
		}
		gain, gv = h.input("gain", backend.F32, gv, Hx)
	}
	out := h.output("out", h.dt, N, Hx, D)
	rstd := h.output("rstd", backend.F32, N, Hx)
	h.b.QKNormRopeForward(out, rstd, x, gain, T, c.base)
	wantOut, wantRstd := make([]float64, N*Hx*D), make([]float64, N*Hx)
	qkNormRopeForward(wantOut, wantRstd, xv, gv, N, Hx, D, T, base)

	rs, rsv := h.input("rstd_in", backend.F32, wantRstd, N, Hx)
	dout, doutv := h.input("dout", h.dt, h.normal(N*Hx*D, 1), N, Hx, D)
	magOut, magDx, magDgain := qkNormRopeMags(doutv, xv, rsv, gv, N, Hx, D, T, base)
	h.check("QKNormRopeForward", out, wantOut, Tol{K: D, Mag: magOut})
	h.check("QKNormRopeForward", rstd, wantRstd, Tol{K: D})

	dx := h.output("dx", h.dt, N, Hx, D)
	var dgain *backend.Tensor
	var dgv []float64
	if !c.noGain {
		dgain, dgv = h.accum("dgain", backend.F32, h.normal(Hx, 1), Hx)
		for i := range magDgain {
			magDgain[i] += math.Abs(dgv[i])
		}
	}
	h.b.QKNormRopeBackward(dx, dgain, dout, x, rs, gain, T, c.base)
	wantDx := make([]float64, N*Hx*D)
	qkNormRopeBackward(wantDx, dgv, doutv, xv, rsv, gv, N, Hx, D, T, base)
	h.check("QKNormRopeBackward", dx, wantDx, Tol{K: D, Mag: magDx})
	if dgain != nil {
		h.check("QKNormRopeBackward", dgain, dgv, Tol{K: N*D + 1, Mag: magDgain})
	}
}

// qkNormRopeMags returns Σ|terms| for out, dx and dgain. Each rotated value
// is (|u_i| + |u_{i+D/2}|)·|g| times (1 + p·θ_i): the angle p·θ_i is formed
// in float32, so its absolute error, and that of its cos and sin, grows
// with the angle. dx = rstd·(du − u·mean(du·u)) is a difference, so its
// error scales with its terms.
func qkNormRopeMags(dout, x, rstd, gain []float64, N, Hx, D, seqLen int, base float64) (out, dx, dgain []float64) {
	half := D / 2
	out, dx, dgain = make([]float64, N*Hx*D), make([]float64, N*Hx*D), make([]float64, Hx)
	du := make([]float64, D)
	for n := 0; n < N; n++ {
		for h := 0; h < Hx; h++ {
			row := (n*Hx + h) * D
			r := rstd[n*Hx+h]
			g := 1.0
			if gain != nil {
				g = math.Abs(gain[h])
			}
			for i := 0; i < half; i++ {
				amp := 1 + ropeAngle(n, i, D, seqLen, base)
				u := (math.Abs(x[row+i]) + math.Abs(x[row+i+half])) * r * amp
				out[row+i], out[row+i+half] = g*u, g*u
				d := (math.Abs(dout[row+i]) + math.Abs(dout[row+i+half])) * amp
				du[i], du[i+half] = g*d, g*d
				dgain[h] += d * u / amp
			}
			var m float64
			for d := 0; d < D; d++ {
				m += du[d] * math.Abs(x[row+d]) * r
			}
			m /= float64(D)
			for d := 0; d < D; d++ {
				dx[row+d] = r * (du[d] + math.Abs(x[row+d])*r*m)
			}
		}
	}
	return out, dx, dgain
}

// --- attention ----------------------------------------------------------------

// attentionCase runs AttentionForward and AttentionBackward on B sequences
// of T rows, H query heads over Hkv key/value heads of dim D.
type attentionCase struct {
	B, T, H, Hkv, D int
	view            bool
}

func (c attentionCase) op() backend.Op { return backend.OpAttention }
func (c attentionCase) name() string {
	return fmt.Sprintf("B%d_T%d_H%d_Hkv%d_D%d%s", c.B, c.T, c.H, c.Hkv, c.D, viewSuffix(c.view))
}

func (c attentionCase) run(h *harness) {
	h.views = c.view
	N, T, H, Hkv, D := c.B*c.T, c.T, c.H, c.Hkv, c.D
	// q as after QK-norm and a gain of 1.5, k as after QK-norm: scores of
	// order one to a few, so the softmax is neither flat nor one-hot.
	q, qv := h.input("q", h.dt, h.normal(N*H*D, 1.5), N, H, D)
	k, kv := h.input("k", h.dt, h.normal(N*Hkv*D, 1), N, Hkv, D)
	v, vv := h.input("v", h.dt, h.normal(N*Hkv*D, 1), N, Hkv, D)
	out := h.output("out", h.dt, N, H, D)
	lse := h.output("lse", backend.F32, N, H)
	h.b.AttentionForward(out, lse, q, k, v, T)
	wantOut, wantLse := make([]float64, N*H*D), make([]float64, N*H)
	attentionForward(wantOut, wantLse, qv, kv, vv, N, H, Hkv, D, T)

	// The backward sees out rounded to CD and lse rounded to float32, as
	// a forward on any backend would leave them.
	outIn, outv := h.input("out_in", h.dt, wantOut, N, H, D)
	lseIn, lsev := h.input("lse_in", backend.F32, wantLse, N, H)
	dout, doutv := h.input("dout", h.dt, h.normal(N*H*D, 1), N, H, D)
	m := attentionMags(qv, kv, vv, doutv, outv, lsev, N, H, Hkv, D, T)
	h.check("AttentionForward", out, wantOut, Tol{K: T + D, Mag: m.out})
	h.check("AttentionForward", lse, wantLse, Tol{K: T + D, Mag: m.lse})

	dq := h.output("dq", h.dt, N, H, D)
	dk := h.output("dk", h.dt, N, Hkv, D)
	dv := h.output("dv", h.dt, N, Hkv, D)
	h.b.AttentionBackward(dq, dk, dv, dout, q, k, v, outIn, lseIn, T)
	wantDq, wantDk, wantDv := make([]float64, N*H*D), make([]float64, N*Hkv*D), make([]float64, N*Hkv*D)
	attentionBackward(wantDq, wantDk, wantDv, doutv, qv, kv, vv, outv, lsev, N, H, Hkv, D, T)
	group := H / Hkv
	h.check("AttentionBackward", dq, wantDq, Tol{K: T + D, Mag: m.dq})
	h.check("AttentionBackward", dk, wantDk, Tol{K: group*T + D, Mag: m.dk})
	h.check("AttentionBackward", dv, wantDv, Tol{K: group*T + D, Mag: m.dv})
}

// attentionMagnitudes are Σ|terms| for each attention output.
type attentionMagnitudes struct{ out, lse, dq, dk, dv []float64 }

// attentionMags derives the magnitudes of the attention outputs. A score
// s = scale·q·k is a D-term float32 dot product, so its absolute error is
// bounded through A = scale·Σd|q·k|; exp turns that (and the like error of
// lse) into a relative error of P, hence the factor (1 + 2A) on every term
// carrying P. Then out = Σu P·v, dS = P·(dout·v − δ) and the gradients sum
// |terms| with P (and dS) in magnitude.
func attentionMags(q, k, v, dout, out, lse []float64, N, H, Hkv, D, seqLen int) attentionMagnitudes {
	m := attentionMagnitudes{
		out: make([]float64, N*H*D), lse: make([]float64, N*H),
		dq: make([]float64, N*H*D), dk: make([]float64, N*Hkv*D), dv: make([]float64, N*Hkv*D),
	}
	sc := 1 / math.Sqrt(float64(D))
	s := make([]float64, seqLen)
	for t := 0; t < N; t++ {
		for h := 0; h < H; h++ {
			first := attentionScores(s, q, k, t, h, H, Hkv, D, seqLen)
			hk := h / (H / Hkv)
			qi := (t*H + h) * D
			var a float64
			for u := first; u <= t; u++ {
				var dot float64
				for d := 0; d < D; d++ {
					dot += math.Abs(q[qi+d] * k[(u*Hkv+hk)*D+d])
				}
				a = max(a, sc*dot)
			}
			amp := 1 + 2*a
			m.lse[t*H+h] = math.Abs(lse[t*H+h]) + amp
			var delta float64
			for d := 0; d < D; d++ {
				delta += math.Abs(dout[qi+d] * out[qi+d])
			}
			for u := first; u <= t; u++ {
				ki := (u*Hkv + hk) * D
				p := math.Exp(s[u-first]-lse[t*H+h]) * amp
				var dp float64
				for d := 0; d < D; d++ {
					m.out[qi+d] += p * math.Abs(v[ki+d])
					m.dv[ki+d] += p * math.Abs(dout[qi+d])
					dp += math.Abs(dout[qi+d] * v[ki+d])
				}
				ds := p * (dp + delta)
				for d := 0; d < D; d++ {
					m.dq[qi+d] += sc * ds * math.Abs(k[ki+d])
					m.dk[ki+d] += sc * ds * math.Abs(q[qi+d])
				}
			}
		}
	}
	return m
}

// --- softcapped cross-entropy ---------------------------------------------------

// softcapCECase runs SoftcapCEForward and SoftcapCEBackward on N rows of V
// logits drawn with standard deviation sigma (large against cap, the tanh
// saturates).
type softcapCECase struct {
	N, V       int
	cap, sigma float64
	scale      float32
}

func (c softcapCECase) op() backend.Op { return backend.OpSoftcapCE }
func (c softcapCECase) name() string {
	return fmt.Sprintf("N%d_V%d_cap%g_sigma%g_scale%g", c.N, c.V, c.cap, c.sigma, c.scale)
}

func (c softcapCECase) run(h *harness) {
	N, V := c.N, c.V
	capf := float32(c.cap)
	logits, lv := h.input("logits", h.dt, h.normal(N*V, c.sigma), N, V)
	tv := h.randIDs(N, V)
	targets := h.ids("targets", tv)
	loss := h.output("loss", backend.F32, N)
	h.b.SoftcapCEForward(loss, logits, targets, capf)
	want := make([]float64, N)
	softcapCEForward(want, lv, tv, N, V, float64(capf))
	magLoss, magD := softcapCEMags(lv, tv, N, V, float64(capf), float64(c.scale))
	h.check("SoftcapCEForward", loss, want, Tol{K: V, Mag: magLoss})

	dl := h.output("dlogits", h.dt, N, V)
	h.b.SoftcapCEBackward(dl, logits, targets, capf, c.scale)
	wantD := make([]float64, N*V)
	softcapCEBackward(wantD, lv, tv, N, V, float64(capf), float64(c.scale))
	h.check("SoftcapCEBackward", dl, wantD, Tol{K: V, Mag: magD})
}

// softcapCEMags: z = cap·tanh(l/cap) is accurate to a few ulps of |z|, so
// lse and p = exp(z − lse) carry an absolute error through Zmax = max|z|
// (factor 1 + 2·Zmax on p, as for attention). The loss is lse − z_target,
// a difference. 1 − tanh² has an absolute error of a few ulps (it cancels
// where tanh saturates), which the (p − y) factor multiplies.
func softcapCEMags(logits []float64, targets []int, N, V int, cap, scale float64) (loss, dlogits []float64) {
	loss, dlogits = make([]float64, N), make([]float64, N*V)
	z := make([]float64, V)
	for n := 0; n < N; n++ {
		lse := softcapRow(z, logits[n*V:(n+1)*V], cap)
		var zmax float64
		for _, zv := range z {
			zmax = max(zmax, math.Abs(zv))
		}
		amp := 1 + 2*zmax
		// A backend may shift the exponentials by any bound of z, up to
		// the cap itself: lse is then shift + log Σ exp(z − shift), a sum
		// whose rounding is an ulp of the shift.
		loss[n] = math.Abs(lse) + math.Abs(z[targets[n]]) + amp + cap
		for v := 0; v < V; v++ {
			p := math.Exp(z[v] - lse)
			y := 0.0
			if v == targets[n] {
				y = 1
			}
			th := math.Tanh(logits[n*V+v] / cap)
			sech2 := 1 - th*th
			dlogits[n*V+v] = math.Abs(scale) * (p*amp*sech2 + math.Abs(p-y)*(sech2+4))
		}
	}
	return loss, dlogits
}

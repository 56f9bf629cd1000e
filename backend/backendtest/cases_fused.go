package backendtest

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
)

// The fused ops. Each case checks the fused op's outputs against the
// float64 oracle of its sequence, then runs the unfused sequence of the
// same backend on the same inputs (accumulators starting from the same
// values) and demands the same bits: the contract defines a fused op as
// that sequence, so a model may call either.
//
// An output computed from an intermediate the sequence rounds to CD is not
// "the float32 result rounded once" (its float32 twin never rounds the
// intermediate), so those outputs are checked against the oracle only
// (checkNoTwin); where the intermediate is stored (the residual stream),
// the oracle continues from the stored value.

// checkNoTwin is check without the float32-twin comparison: in a twin run
// it records nothing, otherwise it compares with the oracle alone.
func (h *harness) checkNoTwin(what string, t *backend.Tensor, want []float64, tol Tol) bool {
	h.t.Helper()
	if h.twinMode {
		return true
	}
	tr := h.tracked[t]
	return Close(h.t, fmt.Sprintf("%s %s%v", what, tr.name, t.Shape), h.download(t), want, t.DType, tol)
}

// same demands that the fused op's output got holds the bits of the
// unfused sequence's output want.
func (h *harness) same(what string, got, want *backend.Tensor) bool {
	h.t.Helper()
	tr := h.tracked[got]
	label := fmt.Sprintf("%s %s%v: the fused op against the unfused sequence", what, tr.name, got.Shape)
	return Close(h.t, label, h.download(got), widen(h.download(want)), got.DType, Tol{Exact: true})
}

// twinAccum makes two accumulators holding the same values: one for the
// fused op, one for the unfused sequence.
func (h *harness) twinAccum(name string, dt backend.DType, vals []float64, shape ...int) (a, b *backend.Tensor, v []float64) {
	h.t.Helper()
	a, v = h.accum(name, dt, vals, shape...)
	b, _ = h.accum(name+"_unfused", dt, vals, shape...)
	return a, b, v
}

// --- resid mix + rmsnorm ---------------------------------------------------------

type residMixRMSNormCase struct {
	N, C int
	view bool
}

func (c residMixRMSNormCase) op() backend.Op { return backend.OpResidMixRMSNorm }
func (c residMixRMSNormCase) name() string {
	return fmt.Sprintf("N%d_C%d%s", c.N, c.C, viewSuffix(c.view))
}

func (c residMixRMSNormCase) run(h *harness) {
	h.views = c.view
	N, C := c.N, c.C
	x, xv := h.input("x", h.dt, h.rowScaled(N, C), N, C)
	x0, x0v := h.input("x0", h.dt, h.normal(N*C, 1), N, C)
	mixW, mwv := h.input("mixW", backend.F32, h.normal(2*C, 1), 2, C)
	mix, hh, rstd := h.output("mix", h.dt, N, C), h.output("h", h.dt, N, C), h.output("rstd", backend.F32, N)
	h.b.ResidMixRMSNormForward(mix, hh, rstd, x, x0, mixW)

	wantMix, magMix := make([]float64, N*C), make([]float64, N*C)
	residMixForward(wantMix, xv, x0v, mwv, N, C)
	residMixForward(magMix, abs(xv), abs(x0v), abs(mwv), N, C)
	h.check("ResidMixRMSNormForward", mix, wantMix, Tol{K: 2, Mag: magMix})
	// h and rstd are the RMSNorm of the stored (rounded) mix.
	wantH, wantR := make([]float64, N*C), make([]float64, N)
	rmsNormForward(wantH, wantR, widen(h.download(mix)), N, C)
	h.checkNoTwin("ResidMixRMSNormForward", hh, wantH, Tol{K: C})
	h.checkNoTwin("ResidMixRMSNormForward", rstd, wantR, Tol{K: C})

	mix2, h2, rstd2 := h.output("mix_unfused", h.dt, N, C), h.output("h_unfused", h.dt, N, C), h.output("rstd_unfused", backend.F32, N)
	h.b.ResidMixForward(mix2, x, x0, mixW)
	h.b.RMSNormForward(h2, rstd2, mix2)
	h.same("ResidMixRMSNormForward", mix, mix2)
	h.same("ResidMixRMSNormForward", hh, h2)
	h.same("ResidMixRMSNormForward", rstd, rstd2)
}

// --- scaled add + rmsnorm --------------------------------------------------------

type scaledAddRMSNormCase struct {
	N, C       int
	noS, alias bool
	view       bool
}

func (c scaledAddRMSNormCase) op() backend.Op { return backend.OpScaledAddRMSNorm }
func (c scaledAddRMSNormCase) name() string {
	s := fmt.Sprintf("N%d_C%d", c.N, c.C)
	if c.noS {
		s += "_s=nil"
	}
	if c.alias {
		s += "_out=x"
	}
	return s + viewSuffix(c.view)
}

func (c scaledAddRMSNormCase) run(h *harness) {
	h.views = c.view
	N, C := c.N, c.C
	var s *backend.Tensor
	var sv, absS []float64
	if !c.noS {
		s, sv = h.input("s", backend.F32, h.normal(C, 1), C)
		absS = abs(sv)
	}
	y, yv := h.input("y", h.dt, h.rowScaled(N, C), N, C)
	xInit := h.rowScaled(N, C)
	var x, out, x2, out2 *backend.Tensor
	var xv []float64
	if c.alias {
		x, x2, xv = h.twinAccum("x", h.dt, xInit, N, C)
		out, out2 = x, x2
	} else {
		x, xv = h.input("x", h.dt, xInit, N, C)
		x2 = x
		out, out2 = h.output("out", h.dt, N, C), h.output("out_unfused", h.dt, N, C)
	}
	hh, rstd := h.output("h", h.dt, N, C), h.output("rstd", backend.F32, N)
	h.b.ScaledAddRMSNormForward(out, hh, rstd, x, y, s)

	want, mag := make([]float64, N*C), make([]float64, N*C)
	scaledAddForward(want, xv, yv, sv, N, C)
	scaledAddForward(mag, abs(xv), abs(yv), absS, N, C)
	h.check("ScaledAddRMSNormForward", out, want, Tol{K: 2, Mag: mag})
	wantH, wantR := make([]float64, N*C), make([]float64, N)
	rmsNormForward(wantH, wantR, widen(h.download(out)), N, C)
	h.checkNoTwin("ScaledAddRMSNormForward", hh, wantH, Tol{K: C})
	h.checkNoTwin("ScaledAddRMSNormForward", rstd, wantR, Tol{K: C})

	h2, rstd2 := h.output("h_unfused", h.dt, N, C), h.output("rstd_unfused", backend.F32, N)
	h.b.ScaledAddForward(out2, x2, y, s)
	h.b.RMSNormForward(h2, rstd2, out2)
	h.same("ScaledAddRMSNormForward", out, out2)
	h.same("ScaledAddRMSNormForward", hh, h2)
	h.same("ScaledAddRMSNormForward", rstd, rstd2)
}

// --- the q/k pair of qk_norm_rope --------------------------------------------------

// qkNormRopePairCase runs the pair on q (Hq heads) and k (Hk heads) of
// the same rows and head dim, each with or without its gain.
type qkNormRopePairCase struct {
	B, T, Hq, Hk, D int
	qGain, kGain    bool
	base            float32
	view            bool
}

func (c qkNormRopePairCase) op() backend.Op { return backend.OpQKNormRopePair }
func (c qkNormRopePairCase) name() string {
	s := fmt.Sprintf("B%d_T%d_Hq%d_Hk%d_D%d_base%g", c.B, c.T, c.Hq, c.Hk, c.D, c.base)
	if !c.qGain {
		s += "_qgain=nil"
	}
	if c.kGain {
		s += "_kgain"
	}
	return s + viewSuffix(c.view)
}

// ropeSide is one of q and k: its inputs, outputs and oracle values.
type ropeSide struct {
	name              string
	H                 int
	x, gain           *backend.Tensor
	xv, gv            []float64
	out, rstd         *backend.Tensor
	out2, rstd2       *backend.Tensor
	rs, dout          *backend.Tensor
	rsv, doutv        []float64
	dx, dx2           *backend.Tensor
	dgain, dgain2     *backend.Tensor
	dgv               []float64
	magOut, magDx, mg []float64
}

func (c qkNormRopePairCase) side(h *harness, name string, H int, withGain bool) *ropeSide {
	N, D := c.B*c.T, c.D
	s := &ropeSide{name: name, H: H}
	s.x, s.xv = h.input(name, h.dt, h.rowScaled(N*H, D), N, H, D)
	if withGain {
		gv := h.normal(H, 0.5)
		for i := range gv {
			gv[i] += 1.5
		}
		s.gain, s.gv = h.input(name+"_gain", backend.F32, gv, H)
	}
	s.out, s.rstd = h.output(name+"_out", h.dt, N, H, D), h.output(name+"_rstd", backend.F32, N, H)
	return s
}

func (c qkNormRopePairCase) run(h *harness) {
	h.views = c.view
	N, D, T := c.B*c.T, c.D, c.T
	base := float64(c.base)
	q, k := c.side(h, "q", c.Hq, c.qGain), c.side(h, "k", c.Hk, c.kGain)
	h.b.QKNormRopePairForward(q.out, q.rstd, q.x, q.gain, k.out, k.rstd, k.x, k.gain, T, c.base)
	for _, s := range []*ropeSide{q, k} {
		wantOut, wantRstd := make([]float64, N*s.H*D), make([]float64, N*s.H)
		qkNormRopeForward(wantOut, wantRstd, s.xv, s.gv, N, s.H, D, T, base)
		s.rs, s.rsv = h.input(s.name+"_rstd_in", backend.F32, wantRstd, N, s.H)
		s.dout, s.doutv = h.input(s.name+"_dout", h.dt, h.normal(N*s.H*D, 1), N, s.H, D)
		s.magOut, s.magDx, s.mg = qkNormRopeMags(s.doutv, s.xv, s.rsv, s.gv, N, s.H, D, T, base)
		h.check("QKNormRopePairForward "+s.name, s.out, wantOut, Tol{K: D, Mag: s.magOut})
		h.check("QKNormRopePairForward "+s.name, s.rstd, wantRstd, Tol{K: D})
		s.dx, s.dx2 = h.output(s.name+"_dx", h.dt, N, s.H, D), h.output(s.name+"_dx_unfused", h.dt, N, s.H, D)
		if s.gain != nil {
			s.dgain, s.dgain2, s.dgv = h.twinAccum(s.name+"_dgain", backend.F32, h.normal(s.H, 1), s.H)
			for i := range s.mg {
				s.mg[i] += math.Abs(s.dgv[i])
			}
		}
	}
	h.b.QKNormRopePairBackward(q.dx, q.dgain, q.dout, q.x, q.rs, q.gain, k.dx, k.dgain, k.dout, k.x, k.rs, k.gain, T, c.base)
	for _, s := range []*ropeSide{q, k} {
		wantDx := make([]float64, N*s.H*D)
		qkNormRopeBackward(wantDx, s.dgv, s.doutv, s.xv, s.rsv, s.gv, N, s.H, D, T, base)
		h.check("QKNormRopePairBackward "+s.name, s.dx, wantDx, Tol{K: D, Mag: s.magDx})
		if s.dgain != nil {
			h.check("QKNormRopePairBackward "+s.name, s.dgain, s.dgv, Tol{K: N*D + 1, Mag: s.mg})
		}
	}

	for _, s := range []*ropeSide{q, k} {
		s.out2, s.rstd2 = h.output(s.name+"_out_unfused", h.dt, N, s.H, D), h.output(s.name+"_rstd_unfused", backend.F32, N, s.H)
		h.b.QKNormRopeForward(s.out2, s.rstd2, s.x, s.gain, T, c.base)
	}
	for _, s := range []*ropeSide{q, k} {
		h.b.QKNormRopeBackward(s.dx2, s.dgain2, s.dout, s.x, s.rs, s.gain, T, c.base)
	}
	for _, s := range []*ropeSide{q, k} {
		h.same("QKNormRopePairForward", s.out, s.out2)
		h.same("QKNormRopePairForward", s.rstd, s.rstd2)
		h.same("QKNormRopePairBackward", s.dx, s.dx2)
		if s.dgain != nil {
			h.same("QKNormRopePairBackward", s.dgain, s.dgain2)
		}
	}
}

// --- rmsnorm backward + resid mix backward ------------------------------------------

type rmsNormResidMixBwdCase struct {
	N, C  int
	noRes bool
	view  bool
}

func (c rmsNormResidMixBwdCase) op() backend.Op { return backend.OpRMSNormResidMixBackward }
func (c rmsNormResidMixBwdCase) name() string {
	s := fmt.Sprintf("N%d_C%d", c.N, c.C)
	if c.noRes {
		s += "_dres=nil"
	}
	return s + viewSuffix(c.view)
}

func (c rmsNormResidMixBwdCase) run(h *harness) {
	h.views = c.view
	N, C := c.N, c.C
	xm, xmv := h.input("xm", h.dt, h.rowScaled(N, C), N, C)
	r := make([]float64, N)
	rmsNormForward(make([]float64, N*C), r, xmv, N, C)
	rstd, rsv := h.input("rstd", backend.F32, r, N)
	dout, doutv := h.input("dout", h.dt, h.rowScaled(N, C), N, C)
	var dres *backend.Tensor
	var dresv []float64
	if !c.noRes {
		dres, dresv = h.input("dres", h.dt, h.normal(N*C, 1), N, C)
	}
	x, xv := h.input("x", h.dt, h.normal(N*C, 1), N, C)
	x0, x0v := h.input("x0", h.dt, h.normal(N*C, 1), N, C)
	mixW, mwv := h.input("mixW", backend.F32, h.normal(2*C, 1), 2, C)
	dx, dx2 := h.output("dx", h.dt, N, C), h.output("dx_unfused", h.dt, N, C)
	dx0, dx02, dx0v := h.twinAccum("dx0", backend.F32, h.normal(N*C, 1), N, C)
	dmix, dmix2, dmixv := h.twinAccum("dmix", backend.F32, h.normal(2*C, 1), 2, C)
	h.b.RMSNormResidMixBackward(dx, dx0, dmix, dout, xm, rstd, dres, x, x0, mixW)

	// The oracle: dm in float64, rounded to CD as the sequence stores it,
	// then the resid mix backward from it.
	dm := make([]float64, N*C)
	rmsNormBackward(dm, doutv, xmv, rsv, dresv, N, C)
	magDm := rmsNormBackwardMag(doutv, xmv, rsv, dresv, N, C)
	dmR := rounded(h.dt, dm)
	magDx0, magDmix := abs(dx0v), abs(dmixv)
	interDx, interDx0, interDmix := make([]float64, N*C), make([]float64, N*C), make([]float64, 2*C)
	magDx := make([]float64, N*C)
	for n := 0; n < N; n++ {
		for j := 0; j < C; j++ {
			i := n*C + j
			m0, m1 := math.Abs(mwv[j]), math.Abs(mwv[C+j])
			d, e := math.Abs(dm[i]), magDm[i]
			magDx[i] = m0 * e
			magDx0[i] += m1 * (d + e)
			magDmix[j] += (d + e) * math.Abs(xv[i])
			magDmix[C+j] += (d + e) * math.Abs(x0v[i])
			// Only where the float32 dm's error reaches a rounding
			// boundary of CD may its rounding part from dmR's.
			if err := lambda*math.Sqrt(float64(C))*u32*e + subnormal(h.dt); roundTo(h.dt, dm[i]-err) != roundTo(h.dt, dm[i]+err) {
				interDx[i], interDx0[i] = m0*d, m1*d
				interDmix[j] += d * math.Abs(xv[i])
				interDmix[C+j] += d * math.Abs(x0v[i])
			}
		}
	}
	wantDx := make([]float64, N*C)
	residMixBackward(wantDx, dx0v, dmixv, dmR, xv, x0v, mwv, N, C)
	h.checkNoTwin("RMSNormResidMixBackward", dx, wantDx, Tol{K: C, Mag: magDx, Inter: interDx, InterDT: h.dt})
	h.checkNoTwin("RMSNormResidMixBackward", dx0, dx0v, Tol{K: C + 1, Mag: magDx0, Inter: interDx0, InterDT: h.dt})
	h.checkNoTwin("RMSNormResidMixBackward", dmix, dmixv, Tol{K: N + C + 1, Mag: magDmix, Inter: interDmix, InterDT: h.dt})

	dmT := h.output("dm", h.dt, N, C)
	h.b.RMSNormBackward(dmT, dout, xm, rstd, dres)
	h.b.ResidMixBackward(dx2, dx02, dmix2, dmT, x, x0, mixW)
	h.same("RMSNormResidMixBackward", dx, dx2)
	h.same("RMSNormResidMixBackward", dx0, dx02)
	h.same("RMSNormResidMixBackward", dmix, dmix2)
}

// --- softcapped cross-entropy, forward and backward in one pass ----------------------

type softcapCEFusedCase struct {
	N, V              int
	cap, sigma, scale float64
}

func (c softcapCEFusedCase) op() backend.Op { return backend.OpSoftcapCEFused }
func (c softcapCEFusedCase) name() string {
	return fmt.Sprintf("N%d_V%d_cap%g_sigma%g_scale%g", c.N, c.V, c.cap, c.sigma, c.scale)
}

func (c softcapCEFusedCase) run(h *harness) {
	N, V := c.N, c.V
	capf, scale := float32(c.cap), float32(c.scale)
	logits, lv := h.input("logits", h.dt, h.normal(N*V, c.sigma), N, V)
	tv := h.randIDs(N, V)
	targets := h.ids("targets", tv)
	loss, dl := h.output("loss", backend.F32, N), h.output("dlogits", h.dt, N, V)
	h.b.SoftcapCEForwardBackward(loss, dl, logits, targets, capf, scale)

	want, wantD := make([]float64, N), make([]float64, N*V)
	softcapCEForward(want, lv, tv, N, V, float64(capf))
	softcapCEBackward(wantD, lv, tv, N, V, float64(capf), float64(scale))
	magLoss, magD := softcapCEMags(lv, tv, N, V, float64(capf), float64(scale))
	h.check("SoftcapCEForwardBackward", loss, want, Tol{K: V, Mag: magLoss})
	h.check("SoftcapCEForwardBackward", dl, wantD, Tol{K: V, Mag: magD})

	loss2, dl2 := h.output("loss_unfused", backend.F32, N), h.output("dlogits_unfused", h.dt, N, V)
	h.b.SoftcapCEForward(loss2, logits, targets, capf)
	h.b.SoftcapCEBackward(dl2, logits, targets, capf, scale)
	h.same("SoftcapCEForwardBackward", loss, loss2)
	h.same("SoftcapCEForwardBackward", dl, dl2)
}

// --- linear + relu², forward and backward -------------------------------------------

// linearReluSqCase runs the MLP's first product and its squared ReLU,
// h = x·wᵀ, a = max(h, 0)², then the backward through the second product
// and the squared ReLU, dh = 2·max(h, 0)·(dout·w) (dw += doutᵀ·a unless
// noDw), on normal x, w, h: pre-activations of either sign. The forward
// is x (N, I)·w (O, I)ᵀ; the backward reuses the dims for the second
// product, dout (N, O)·w (O, I), I standing for the hidden width there.
type linearReluSqCase struct {
	N, I, O int
	noDw    bool
}

func (c linearReluSqCase) op() backend.Op { return backend.OpLinearReluSq }
func (c linearReluSqCase) name() string {
	s := fmt.Sprintf("N%d_I%d_O%d", c.N, c.I, c.O)
	if c.noDw {
		s += "_dw=nil"
	}
	return s
}

func (c linearReluSqCase) run(h *harness) {
	c.forward(h)
	c.backward(h)
}

// forward: LinearReluSqForward(h, a, x, w), x (N, I), w (O, I).
func (c linearReluSqCase) forward(h *harness) {
	N, O, I := c.N, c.O, c.I
	x, xv := h.input("x", h.dt, h.normal(N*I, 1), N, I)
	w, wv := h.input("w", h.dt, h.normal(O*I, 1), O, I)
	hh, a := h.output("h", h.dt, N, O), h.output("a", h.dt, N, O)
	h.b.LinearReluSqForward(hh, a, x, w)
	want, mag := make([]float64, N*O), make([]float64, N*O)
	linearForward(want, xv, wv, N, O, I)
	linearForward(mag, abs(xv), abs(wv), N, O, I)
	h.check("LinearReluSqForward", hh, want, Tol{K: I, Mag: mag})
	// a is the squared ReLU of the stored (rounded) h.
	wantA := make([]float64, N*O)
	reluSqForward(wantA, widen(h.download(hh)))
	h.checkNoTwin("LinearReluSqForward", a, wantA, Tol{K: 1})

	h2, a2 := h.output("h_unfused", h.dt, N, O), h.output("a_unfused", h.dt, N, O)
	h.b.LinearForward(h2, x, w)
	h.b.ReluSqForward(a2, h2)
	h.same("LinearReluSqForward", hh, h2)
	h.same("LinearReluSqForward", a, a2)
}

// backward: LinearReluSqBackward(dh, dw, dout, a, hIn, w) with the
// product's dims swapped: dout (N, O) and w (O, I) give da (N, I) over a
// sum of O terms.
func (c linearReluSqCase) backward(h *harness) {
	N, O, I := c.N, c.O, c.I
	a, av := h.input("a_in", h.dt, h.normal(N*I, 1), N, I)
	hIn, hv := h.input("h_in", h.dt, h.normal(N*I, 1), N, I)
	w, wv := h.input("w_proj", h.dt, h.normal(O*I, 1), O, I)
	dout, doutv := h.input("dout", h.dt, h.normal(N*O, 1), N, O)
	dh, dh2 := h.output("dh", h.dt, N, I), h.output("dh_unfused", h.dt, N, I)
	var dw, dw2 *backend.Tensor
	var dwv []float64
	if !c.noDw {
		dw, dw2, dwv = h.twinAccum("dw", backend.F32, h.normal(O*I, 1), O, I)
	}
	h.b.LinearReluSqBackward(dh, dw, dout, a, hIn, w)

	// The oracle: da in float64, rounded to CD as the sequence stores it,
	// then the squared ReLU's backward from it.
	da, magDa := make([]float64, N*I), make([]float64, N*I)
	var magDw []float64
	if dw != nil {
		magDw = abs(dwv)
	}
	linearBackward(magDa, magDw, abs(doutv), abs(av), abs(wv), N, O, I, false)
	linearBackward(da, dwv, doutv, av, wv, N, O, I, false)
	daR := rounded(h.dt, da)
	wantDh, magDh, interDh := make([]float64, N*I), make([]float64, N*I), make([]float64, N*I)
	reluSqBackward(wantDh, daR, hv)
	for i := range da {
		r := 2 * max(hv[i], 0)
		magDh[i] = r * magDa[i]
		// Only where the float32 da's error reaches a rounding boundary
		// of CD may its rounding part from daR's.
		if err := lambda*math.Sqrt(float64(O))*u32*magDa[i] + subnormal(h.dt); roundTo(h.dt, da[i]-err) != roundTo(h.dt, da[i]+err) {
			interDh[i] = r * math.Abs(da[i])
		}
	}
	h.checkNoTwin("LinearReluSqBackward", dh, wantDh, Tol{K: O, Mag: magDh, Inter: interDh, InterDT: h.dt})
	if dw != nil {
		h.check("LinearReluSqBackward", dw, dwv, Tol{K: N + 1, Mag: magDw})
	}

	daT := h.output("da", h.dt, N, I)
	h.b.LinearBackward(daT, dw2, dout, a, w, false)
	h.b.ReluSqBackward(dh2, daT, hIn)
	h.same("LinearReluSqBackward", dh, dh2)
	if dw != nil {
		h.same("LinearReluSqBackward", dw, dw2)
	}
}

// linearScaledAddCase runs the MLP's second product and the block's
// residual add, y = x·wᵀ, out = res + s⊙y (s nil, out aliasing res as
// variants), on normal x, w, res, s.
type linearScaledAddCase struct {
	N, I, O    int
	noS, alias bool
}

func (c linearScaledAddCase) op() backend.Op { return backend.OpLinearScaledAdd }
func (c linearScaledAddCase) name() string {
	s := fmt.Sprintf("N%d_I%d_O%d", c.N, c.I, c.O)
	if c.noS {
		s += "_s=nil"
	}
	if c.alias {
		s += "_out=res"
	}
	return s
}

// run: LinearScaledAddForward(y, out, x, w, res, s), x (N, I), w (O, I).
func (c linearScaledAddCase) run(h *harness) {
	N, O, I := c.N, c.O, c.I
	x, xv := h.input("x", h.dt, h.normal(N*I, 1), N, I)
	w, wv := h.input("w", h.dt, h.normal(O*I, 1), O, I)
	var s *backend.Tensor
	var sv []float64
	if !c.noS {
		s, sv = h.input("s", backend.F32, h.normal(O, 1), O)
	}
	var res, res2, out, out2 *backend.Tensor
	var rv []float64
	if c.alias {
		res, res2, rv = h.twinAccum("res", h.dt, h.normal(N*O, 1), N, O)
		out, out2 = res, res2
	} else {
		res, rv = h.input("res", h.dt, h.normal(N*O, 1), N, O)
		res2 = res
		out, out2 = h.output("out", h.dt, N, O), h.output("out_unfused", h.dt, N, O)
	}
	y := h.output("y", h.dt, N, O)
	h.b.LinearScaledAddForward(y, out, x, w, res, s)

	want, mag := make([]float64, N*O), make([]float64, N*O)
	linearForward(want, xv, wv, N, O, I)
	linearForward(mag, abs(xv), abs(wv), N, O, I)
	h.check("LinearScaledAddForward", y, want, Tol{K: I, Mag: mag})
	// out is the scaled add of the stored (rounded) y: each output one
	// product and one sum in float64, rounded once.
	yr := widen(h.download(y))
	wantOut, magOut := make([]float64, N*O), make([]float64, N*O)
	for n := range N {
		for o := range O {
			sc := 1.0
			if sv != nil {
				sc = sv[o]
			}
			i := n*O + o
			wantOut[i] = rv[i] + sc*yr[i]
			magOut[i] = math.Abs(rv[i]) + math.Abs(sc*yr[i])
		}
	}
	h.checkNoTwin("LinearScaledAddForward", out, wantOut, Tol{K: 2, Mag: magOut})

	y2 := h.output("y_unfused", h.dt, N, O)
	h.b.LinearForward(y2, x, w)
	h.b.ScaledAddForward(out2, res2, y2, s)
	h.same("LinearScaledAddForward", y, y2)
	h.same("LinearScaledAddForward", out, out2)
}

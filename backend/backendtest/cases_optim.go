package backendtest

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
)

// --- adam ---------------------------------------------------------------------

// adamCase runs one AdamStep on n elements at step t.
type adamCase struct {
	n  int
	hp backend.AdamParams
}

func (c adamCase) op() backend.Op { return backend.OpAdam }
func (c adamCase) name() string {
	return fmt.Sprintf("n%d_step%d_lr%g_b%g_%g_eps%g", c.n, c.hp.Step, c.hp.LR, c.hp.Beta1, c.hp.Beta2, c.hp.Eps)
}

func (c adamCase) run(h *harness) {
	n := c.n
	g, gv := h.input("g", backend.F32, h.normal(n, 0.1), n)
	vInit := h.normal(n, 0.1)
	for i := range vInit {
		vInit[i] *= vInit[i]
	}
	p, pv := h.accum("p", backend.F32, h.normal(n, 1), n)
	m, mv := h.accum("m", backend.F32, h.normal(n, 0.05), n)
	v, vv := h.accum("v", backend.F32, vInit, n)
	h.b.AdamStep(p, g, m, v, c.hp)

	lr, b1, b2, eps := float64(c.hp.LR), float64(c.hp.Beta1), float64(c.hp.Beta2), float64(c.hp.Eps)
	t := c.hp.Step
	magM, magV, magP := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range magM {
		magM[i] = b1*math.Abs(mv[i]) + (1-b1)*math.Abs(gv[i])
		magV[i] = b2*vv[i] + (1-b2)*gv[i]*gv[i]
	}
	p0 := clone(pv)
	adamStep(pv, gv, mv, vv, lr, b1, b2, eps, t)
	// The update lr·m̂/(sqrt(v̂)+eps) carries m's error (a difference, so
	// through magM), a few ulps from sqrt and the divisions, and the error
	// of the bias corrections 1 − β^t, amplified by β^t/(1−β^t) where the
	// subtraction cancels (β^t itself may be formed as exp(t·log β)).
	amp := 4.0
	for _, beta := range []float64{b1, b2} {
		bt := math.Pow(beta, float64(t))
		amp += bt / (1 - bt) * (1 + float64(t)*math.Abs(math.Log(beta)))
	}
	c1 := 1 - math.Pow(b1, float64(t))
	c2 := 1 - math.Pow(b2, float64(t))
	for i := range magP {
		den := math.Sqrt(vv[i]/c2) + eps
		magP[i] = math.Abs(p0[i]) + lr/c1*(magM[i]+math.Abs(mv[i])*amp)/den
	}
	h.check("AdamStep", m, mv, Tol{K: 2, Mag: magM})
	h.check("AdamStep", v, vv, Tol{K: 3, Mag: magV})
	h.check("AdamStep", p, pv, Tol{K: 3, Mag: magP})
}

// --- muon momentum --------------------------------------------------------------

type muonCase struct {
	n  int
	mu float32
}

func (c muonCase) op() backend.Op { return backend.OpMuon }
func (c muonCase) name() string   { return fmt.Sprintf("n%d_mu%g", c.n, c.mu) }

func (c muonCase) run(h *harness) {
	n, mu := c.n, float64(c.mu)
	g, gv := h.input("g", backend.F32, h.normal(n, 1), n)
	buf, bv := h.accum("buf", backend.F32, h.normal(n, 1), n)
	geff := h.output("geff", backend.F32, n)
	h.b.MuonMomentum(buf, geff, g, c.mu)
	magBuf, magGeff := make([]float64, n), make([]float64, n)
	for i := range magBuf {
		magBuf[i] = mu*math.Abs(bv[i]) + math.Abs(gv[i])
		magGeff[i] = math.Abs(gv[i]) + mu*magBuf[i]
	}
	want := make([]float64, n)
	muonMomentum(bv, want, gv, mu)
	h.check("MuonMomentum", buf, bv, Tol{K: 2, Mag: magBuf})
	h.check("MuonMomentum", geff, want, Tol{K: 3, Mag: magGeff})
}

// --- newton–schulz ----------------------------------------------------------------

type newtonSchulzCase struct {
	R, C, steps int
	zero        bool // g = 0: the output must be 0, not NaN
}

func (c newtonSchulzCase) op() backend.Op { return backend.OpNewtonSchulz }
func (c newtonSchulzCase) name() string {
	s := fmt.Sprintf("R%d_C%d_steps%d", c.R, c.C, c.steps)
	if c.zero {
		s += "_zero"
	}
	return s
}

func (c newtonSchulzCase) run(h *harness) {
	R, C := c.R, c.C
	vals := h.normal(R*C, 0.02)
	if c.zero {
		clear(vals)
	}
	g, gv := h.input("g", backend.F32, vals, R, C)
	out := h.output("out", backend.F32, R, C)
	h.b.NewtonSchulz(out, g, c.steps)
	want := make([]float64, R*C)
	newtonSchulz(want, gv, R, C, c.steps)
	K := R*C + max(R, C)
	h.check("NewtonSchulz", out, want, Tol{K: K, Mag: newtonSchulzMag(gv, R, C, c.steps)})
}

// nsGrowth bounds how the errors of the steps add up. Where the iteration
// is nearly linear (small σ, p(σ) ≈ NSA·σ) an earlier step's error grows
// exactly as fast as the values it sits on, and near σ ≈ 1 the quintic
// contracts (|p'(1)| ≈ 0.72), so relative to the final magnitudes each
// step's error carries over with a gain of about one: steps errors in all.
// (A naive float32 loop stays within 3·u·mag per step on the suite's
// shapes, far inside λ·sqrt(K).)
func nsGrowth(steps int) float64 { return float64(max(steps, 1)) }

// newtonSchulzMag is Σ|terms| of the last Newton–Schulz step,
// NSA·|X| + (|NSB|·|X||X|ᵀ + |NSC|·(|X||X|ᵀ)²)·|X| on the previous iterate,
// times nsGrowth for the errors of the earlier steps. The case's K,
// R·C + max(R,C), covers the Frobenius norm (whose relative error scales
// every X) followed by a step's dot products.
func newtonSchulzMag(g []float64, R, C, steps int) []float64 {
	prev := make([]float64, R*C)
	newtonSchulz(prev, g, R, C, max(steps-1, 0))
	mag := abs(prev)
	if steps == 0 {
		return mag
	}
	// Work on the wide orientation (r ≤ c), as the iteration does.
	r, c := R, C
	x := mag
	if R > C {
		r, c = C, R
		x = make([]float64, r*c)
		for i := 0; i < R; i++ {
			for j := 0; j < C; j++ {
				x[j*c+i] = mag[i*C+j]
			}
		}
	}
	a := make([]float64, r*r)
	matMulT(a, x, x, r, r, c)
	aa := make([]float64, r*r)
	matMulT(aa, a, a, r, r, r)
	for i := range aa {
		aa[i] = math.Abs(nsB)*a[i] + math.Abs(nsC)*aa[i]
	}
	m := make([]float64, r*c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			s := nsA * x[i*c+j]
			for k := 0; k < r; k++ {
				s += aa[i*r+k] * x[k*c+j]
			}
			m[i*c+j] = s * nsGrowth(steps)
		}
	}
	if R > C {
		for i := 0; i < R; i++ {
			for j := 0; j < C; j++ {
				mag[i*C+j] = m[j*c+i]
			}
		}
		return mag
	}
	return m
}

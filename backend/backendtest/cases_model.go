package backendtest

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
)

// viewSuffix names the variant that runs a case on Rows views.
func viewSuffix(view bool) string {
	if view {
		return "_view"
	}
	return ""
}

// --- embedding ----------------------------------------------------------------

// embeddingCase gathers N rows of a (V,C) table and scatter-adds them back.
// Ids repeat (N > V in some cases) and always include 0 and V−1.
type embeddingCase struct {
	N, V, C int
	view    bool
}

func (c embeddingCase) op() backend.Op { return backend.OpEmbedding }
func (c embeddingCase) name() string {
	return fmt.Sprintf("N%d_V%d_C%d%s", c.N, c.V, c.C, viewSuffix(c.view))
}

func (c embeddingCase) run(h *harness) {
	h.views = c.view
	N, V, C := c.N, c.V, c.C
	idv := h.randIDs(N, V)
	ids := h.ids("ids", idv)
	w, wv := h.input("w", h.dt, h.normal(V*C, 1), V, C)
	out := h.output("out", h.dt, N, C)
	h.b.EmbeddingForward(out, ids, w)
	want := make([]float64, N*C)
	embeddingForward(want, idv, wv, C)
	h.check("EmbeddingForward", out, want, Tol{Exact: true})

	// Backward twice into equal accumulators: the contract asks for a
	// deterministic order, so both results must be bit-identical.
	init := h.normal(V*C, 1)
	dw, dwv := h.accum("dw", backend.F32, init, V, C)
	dw2, _ := h.accum("dw2", backend.F32, init, V, C)
	dout, doutv := h.input("dout", h.dt, h.normal(N*C, 1), N, C)
	h.b.EmbeddingBackward(dw, ids, dout)
	h.b.EmbeddingBackward(dw2, ids, dout)
	mag := abs(dwv)
	embeddingBackward(mag, idv, abs(doutv), C)
	embeddingBackward(dwv, idv, doutv, C)
	if h.check("EmbeddingBackward", dw, dwv, Tol{K: N + 1, Mag: mag}) {
		Close(h.t, "EmbeddingBackward run twice", h.download(dw2), widen(h.download(dw)), backend.F32, Tol{Exact: true})
	}
}

// --- rmsnorm ------------------------------------------------------------------

// rmsNormCase runs RMSNormForward, then RMSNormBackward with dres nil, with
// a separate dres, and with dx aliasing dres.
type rmsNormCase struct {
	N, C int
	view bool
}

func (c rmsNormCase) op() backend.Op { return backend.OpRMSNorm }
func (c rmsNormCase) name() string   { return fmt.Sprintf("N%d_C%d%s", c.N, c.C, viewSuffix(c.view)) }

func (c rmsNormCase) run(h *harness) {
	h.views = c.view
	N, C := c.N, c.C
	x, xv := h.input("x", h.dt, h.rowScaled(N, C), N, C)
	out := h.output("out", h.dt, N, C)
	rstd := h.output("rstd", backend.F32, N)
	h.b.RMSNormForward(out, rstd, x)
	wantOut, wantRstd := make([]float64, N*C), make([]float64, N)
	rmsNormForward(wantOut, wantRstd, xv, N, C)
	// rstd carries the error of a C-term sum of squares; out inherits it.
	h.check("RMSNormForward", out, wantOut, Tol{K: C})
	h.check("RMSNormForward", rstd, wantRstd, Tol{K: C})

	// The backward gets rstd as the forward's oracle value in float32.
	rs, rsv := h.input("rstd_in", backend.F32, wantRstd, N)
	dout, doutv := h.input("dout", h.dt, h.rowScaled(N, C), N, C)
	for _, mode := range []string{"dres=nil", "dres", "dx=dres"} {
		var dres, dx *backend.Tensor
		var dresv []float64
		switch mode {
		case "dres":
			dres, dresv = h.input("dres", h.dt, h.normal(N*C, 1), N, C)
			dx = h.output("dx", h.dt, N, C)
		case "dx=dres":
			dres, dresv = h.accum("dres", h.dt, h.normal(N*C, 1), N, C)
			dx = dres
		default:
			dx = h.output("dx", h.dt, N, C)
		}
		h.b.RMSNormBackward(dx, dout, x, rs, dres)
		want := make([]float64, N*C)
		rmsNormBackward(want, doutv, xv, rsv, dresv, N, C)
		h.check("RMSNormBackward "+mode, dx, want, Tol{K: C, Mag: rmsNormBackwardMag(doutv, xv, rsv, dresv, N, C)})
	}
}

// rmsNormBackwardMag is Σ|terms| of dx = dres + rstd·dout − rstd·x̂·mean(dout·x̂):
// the output is a difference, so its error scales with the terms, not with |dx|.
func rmsNormBackwardMag(dout, x, rstd, dres []float64, N, C int) []float64 {
	mag := make([]float64, N*C)
	for n := 0; n < N; n++ {
		r := rstd[n]
		var m float64
		for c := 0; c < C; c++ {
			m += math.Abs(dout[n*C+c] * x[n*C+c] * r)
		}
		m /= float64(C)
		for c := 0; c < C; c++ {
			i := n*C + c
			mag[i] = r * (math.Abs(dout[i]) + math.Abs(x[i]*r)*m)
			if dres != nil {
				mag[i] += math.Abs(dres[i])
			}
		}
	}
	return mag
}

// --- resid mix ------------------------------------------------------------------

type residMixCase struct {
	N, C int
	view bool
}

func (c residMixCase) op() backend.Op { return backend.OpResidMix }
func (c residMixCase) name() string   { return fmt.Sprintf("N%d_C%d%s", c.N, c.C, viewSuffix(c.view)) }

func (c residMixCase) run(h *harness) {
	h.views = c.view
	N, C := c.N, c.C
	x, xv := h.input("x", h.dt, h.normal(N*C, 1), N, C)
	x0, x0v := h.input("x0", h.dt, h.normal(N*C, 1), N, C)
	mix, mixv := h.input("mix", backend.F32, h.normal(2*C, 1), 2, C)
	out := h.output("out", h.dt, N, C)
	h.b.ResidMixForward(out, x, x0, mix)
	want, mag := make([]float64, N*C), make([]float64, N*C)
	residMixForward(want, xv, x0v, mixv, N, C)
	residMixForward(mag, abs(xv), abs(x0v), abs(mixv), N, C)
	h.check("ResidMixForward", out, want, Tol{K: 2, Mag: mag})

	dout, doutv := h.input("dout", h.dt, h.normal(N*C, 1), N, C)
	dx := h.output("dx", h.dt, N, C)
	dx0, dx0v := h.accum("dx0", backend.F32, h.normal(N*C, 1), N, C)
	dmix, dmixv := h.accum("dmix", backend.F32, h.normal(2*C, 1), 2, C)
	h.b.ResidMixBackward(dx, dx0, dmix, dout, x, x0, mix)
	wantDx := make([]float64, N*C)
	magDx, magDx0, magDmix := make([]float64, N*C), abs(dx0v), abs(dmixv)
	residMixBackward(magDx, magDx0, magDmix, abs(doutv), abs(xv), abs(x0v), abs(mixv), N, C)
	residMixBackward(wantDx, dx0v, dmixv, doutv, xv, x0v, mixv, N, C)
	h.check("ResidMixBackward", dx, wantDx, Tol{K: 1})
	h.check("ResidMixBackward", dx0, dx0v, Tol{K: 2, Mag: magDx0})
	h.check("ResidMixBackward", dmix, dmixv, Tol{K: N + 1, Mag: magDmix})
}

// --- linear -------------------------------------------------------------------

// linearCase runs LinearForward and one LinearBackward variant: dx and/or
// dw (nil when skipped), accumulate into a dx holding known values.
type linearCase struct {
	N, O, I          int
	noDx, noDw, accu bool
	view             bool
}

func (c linearCase) op() backend.Op { return backend.OpLinear }
func (c linearCase) name() string {
	s := fmt.Sprintf("N%d_O%d_I%d", c.N, c.O, c.I)
	if c.noDx {
		s += "_dx=nil"
	}
	if c.noDw {
		s += "_dw=nil"
	}
	if c.accu {
		s += "_accumulate"
	}
	return s + viewSuffix(c.view)
}

func (c linearCase) run(h *harness) {
	h.views = c.view
	N, O, I := c.N, c.O, c.I
	x, xv := h.input("x", h.dt, h.normal(N*I, 1), N, I)
	w, wv := h.input("w", h.dt, h.normal(O*I, 1), O, I)
	out := h.output("out", h.dt, N, O)
	h.b.LinearForward(out, x, w)
	want, mag := make([]float64, N*O), make([]float64, N*O)
	linearForward(want, xv, wv, N, O, I)
	linearForward(mag, abs(xv), abs(wv), N, O, I)
	h.check("LinearForward", out, want, Tol{K: I, Mag: mag})

	dout, doutv := h.input("dout", h.dt, h.normal(N*O, 1), N, O)
	var dx, dw *backend.Tensor
	var dxv, dwv, magDx, magDw []float64
	if !c.noDx {
		if c.accu {
			dx, dxv = h.accum("dx", h.dt, h.normal(N*I, 1), N, I)
			magDx = abs(dxv)
		} else {
			dx = h.output("dx", h.dt, N, I)
			dxv, magDx = make([]float64, N*I), make([]float64, N*I)
		}
	}
	if !c.noDw {
		dw, dwv = h.accum("dw", backend.F32, h.normal(O*I, 1), O, I)
		magDw = abs(dwv)
	}
	h.b.LinearBackward(dx, dw, dout, x, w, c.accu)
	linearBackward(magDx, magDw, abs(doutv), abs(xv), abs(wv), N, O, I, c.accu)
	linearBackward(dxv, dwv, doutv, xv, wv, N, O, I, c.accu)
	if dx != nil {
		h.check("LinearBackward", dx, dxv, Tol{K: O + 1, Mag: magDx})
	}
	if dw != nil {
		h.check("LinearBackward", dw, dwv, Tol{K: N + 1, Mag: magDw})
	}
}

// --- scaled add -----------------------------------------------------------------

// scaledAddCase: out = x + s⊙y (s nil, out aliasing x as variants), then
// dy = s⊙dout and ds += Σn dout·y, each of which may be skipped.
type scaledAddCase struct {
	N, C                   int
	noS, alias, noDy, noDs bool
}

func (c scaledAddCase) op() backend.Op { return backend.OpScaledAdd }
func (c scaledAddCase) name() string {
	s := fmt.Sprintf("N%d_C%d", c.N, c.C)
	for _, f := range []struct {
		on   bool
		name string
	}{{c.noS, "_s=nil"}, {c.alias, "_out=x"}, {c.noDy, "_dy=nil"}, {c.noDs, "_ds=nil"}} {
		if f.on {
			s += f.name
		}
	}
	return s
}

func (c scaledAddCase) run(h *harness) {
	N, C := c.N, c.C
	var s *backend.Tensor
	var sv []float64
	if !c.noS {
		s, sv = h.input("s", backend.F32, h.normal(C, 1), C)
	}
	y, yv := h.input("y", h.dt, h.normal(N*C, 1), N, C)
	var x, out *backend.Tensor
	var xv []float64
	if c.alias {
		x, xv = h.accum("x", h.dt, h.normal(N*C, 1), N, C)
		out = x
	} else {
		x, xv = h.input("x", h.dt, h.normal(N*C, 1), N, C)
		out = h.output("out", h.dt, N, C)
	}
	want, mag := make([]float64, N*C), make([]float64, N*C)
	scaledAddForward(want, xv, yv, sv, N, C)
	var absS []float64
	if sv != nil {
		absS = abs(sv)
	}
	scaledAddForward(mag, abs(xv), abs(yv), absS, N, C)
	h.b.ScaledAddForward(out, x, y, s)
	h.check("ScaledAddForward", out, want, Tol{K: 2, Mag: mag})

	dout, doutv := h.input("dout", h.dt, h.normal(N*C, 1), N, C)
	var dy, ds *backend.Tensor
	var dyv, dsv, magDs []float64
	if !c.noDy {
		dy = h.output("dy", h.dt, N, C)
		dyv = make([]float64, N*C)
	}
	if !c.noDs {
		ds, dsv = h.accum("ds", backend.F32, h.normal(C, 1), C)
		magDs = abs(dsv)
		scaledAddBackward(nil, magDs, abs(doutv), abs(yv), nil, N, C)
	}
	h.b.ScaledAddBackward(dy, ds, dout, y, s)
	scaledAddBackward(dyv, dsv, doutv, yv, sv, N, C)
	if dy != nil {
		h.check("ScaledAddBackward", dy, dyv, Tol{K: 1})
	}
	if ds != nil {
		h.check("ScaledAddBackward", ds, dsv, Tol{K: N + 1, Mag: magDs})
	}
}

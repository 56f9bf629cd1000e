package backendtest

import (
	"math"

	"github.com/golf-ml/golf/backend"
)

// Plausible mistakes, each the reference backend with one op wrong in a way
// a real kernel could be. The suite's own tests (reference_test.go) prove
// that the per-op cases catch every one; Mistakes hands some of them to the
// suites built above this package (the whole-model training comparison), so
// they can prove the same of themselves.

// Mistake is a backend with one deliberate error.
type Mistake struct {
	Name    string
	Backend backend.Backend
	// DTypes lists the compute dtypes in which the error shows (nil: all).
	DTypes []backend.DType
}

// Mistakes returns the reference with one mistake each, among the ops a
// training step of the model runs: interleaved RoPE, the wrong key/value
// head per query head, plain instead of Nesterov momentum, Newton–Schulz a
// step short, Adam without bias correction, resid-mix weights swapped, and
// every operand rounded to bfloat16 (visible in F32 only: in BF16 and F16
// the activations are that coarse anyway).
func Mistakes() []Mistake {
	return []Mistake{
		{Name: "interleaved RoPE", Backend: wrapped(func(r *reference) backend.Backend { return ropeInterleaved{r} })},
		{Name: "attention head h mod Hkv", Backend: wrapped(func(r *reference) backend.Backend { return attnMistake{r, attnHeadModulo} })},
		{Name: "no Nesterov", Backend: wrapped(func(r *reference) backend.Backend { return mistake{r, backend.OpMuon} })},
		{Name: "Newton–Schulz one step short", Backend: wrapped(func(r *reference) backend.Backend { return mistake{r, backend.OpNewtonSchulz} })},
		{Name: "Adam without bias correction", Backend: wrapped(func(r *reference) backend.Backend { return mistake{r, backend.OpAdam} })},
		{Name: "resid mix swapped", Backend: wrapped(func(r *reference) backend.Backend { return mistake{r, backend.OpResidMix} })},
		{Name: "low precision", Backend: &reference{fault: faultLowPrecision}, DTypes: []backend.DType{backend.F32}},
	}
}

// wrapped returns the wrapper f makes of a reference, whose fused ops then
// run their sequences through the wrapper: its mistake reaches a model
// that calls the fused ops.
func wrapped(f func(*reference) backend.Backend) backend.Backend {
	r := &reference{}
	w := f(r)
	r.seq = w
	return w
}

// mistake is the reference with the op named op replaced by a plausible
// mistake; every other op is right.
type mistake struct {
	*reference
	op backend.Op
}

func (w mistake) Axpy(dst, x *backend.Tensor, alpha float32) {
	if w.op == backend.OpAxpy {
		alpha = 1 // ignores alpha
	}
	w.reference.Axpy(dst, x, alpha)
}

func (w mistake) Reduce(dst, x *backend.Tensor, kind backend.ReduceKind) {
	if w.op == backend.OpReduce {
		x = x.Reshape(x.Len()).Rows(1, x.Len()-1) // skips the first element
	}
	w.reference.Reduce(dst, x, kind)
}

func (w mistake) EmbeddingBackward(dw, ids, dout *backend.Tensor) {
	if w.op == backend.OpEmbedding { // adds row 0 twice, as a racy scatter might
		w.reference.EmbeddingBackward(dw, ids.Rows(0, 1), dout.Rows(0, 1))
	}
	w.reference.EmbeddingBackward(dw, ids, dout)
}

func (w mistake) RMSNormBackward(dx, dout, x, rstd, dres *backend.Tensor) {
	if w.op == backend.OpRMSNorm && dres != dx {
		dres = nil // drops dres
	}
	w.reference.RMSNormBackward(dx, dout, x, rstd, dres)
}

func (w mistake) ResidMixForward(out, x, x0, mix *backend.Tensor) {
	if w.op == backend.OpResidMix {
		x, x0 = x0, x // mixes swapped
	}
	w.reference.ResidMixForward(out, x, x0, mix)
}

func (w mistake) LinearBackward(dx, dw, dout, x, wt *backend.Tensor, accumulate bool) {
	if w.op == backend.OpLinear {
		accumulate = false // ignores accumulate
	}
	w.reference.LinearBackward(dx, dw, dout, x, wt, accumulate)
}

func (w mistake) QKNormRopeForward(out, rstd, x, gain *backend.Tensor, seqLen int, base float32) {
	if w.op == backend.OpQKNormRope {
		seqLen = x.Dim(0) // positions do not restart with each sequence
	}
	w.reference.QKNormRopeForward(out, rstd, x, gain, seqLen, base)
}

// attentionMistakes are the ways AttentionForward goes wrong, one per
// mistake value of OpAttention.
const (
	attnAcrossSequences = iota // attends across sequence boundaries
	attnHeadModulo             // query head h reads kv head h mod Hkv, not h/(H/Hkv)
	attnNoScale                // forgets the 1/sqrt(D) scale
)

// attnMistake is the reference with AttentionForward wrong in one way.
type attnMistake struct {
	*reference
	kind int
}

func (w attnMistake) AttentionForward(out, lse, q, k, v *backend.Tensor, seqLen int) {
	N, H, Hkv, D := q.Dim(0), q.Dim(1), k.Dim(1), q.Dim(2)
	switch w.kind {
	case attnAcrossSequences:
		w.reference.AttentionForward(out, lse, q, k, v, N)
	case attnNoScale:
		qs := w.reference.New(q.DType, q.Shape...)
		w.reference.Cast(qs, q)
		w.reference.Scale(qs, float32(math.Sqrt(float64(D))))
		w.reference.AttentionForward(out, lse, qs, k, v, seqLen)
	case attnHeadModulo:
		// Run the right op on the query heads reordered so that the head
		// landing in group j is one with h mod Hkv = j, then undo the order.
		G := H / Hkv
		perm := make([]int, H) // perm[h]: where query head h goes
		for h := range H {
			perm[h] = (h%Hkv)*G + h/Hkv
		}
		qp := w.permuteHeads(q, perm, false)
		op := w.reference.New(out.DType, out.Shape...)
		lp := w.reference.New(lse.DType, N, H, 1)
		w.reference.AttentionForward(op, lp.Reshape(N, H), qp, k, v, seqLen)
		w.reference.Upload(out, w.reference.Download(w.permuteHeads(op, perm, true)))
		w.reference.Upload(lse, w.reference.Download(w.permuteHeads(lp, perm, true)))
	}
}

// permuteHeads returns a copy of t [N,H,D] with head h moved to perm[h]
// (or back, when inverse).
func (w attnMistake) permuteHeads(t *backend.Tensor, perm []int, inverse bool) *backend.Tensor {
	N, H, D := t.Dim(0), t.Dim(1), t.Dim(2)
	src := w.reference.Download(t)
	dst := make([]float32, len(src))
	for n := range N {
		for h := range H {
			from, to := h, perm[h]
			if inverse {
				from, to = perm[h], h
			}
			copy(dst[(n*H+to)*D:(n*H+to+1)*D], src[(n*H+from)*D:(n*H+from+1)*D])
		}
	}
	p := w.reference.New(t.DType, t.Shape...)
	w.reference.Upload(p, dst)
	return p
}

// ropeInterleaved is the reference with RoPE rotating adjacent pairs
// (2i, 2i+1) instead of the halves (i, i+D/2): the right op on x with its
// last dimension reordered, and the output ordered back.
type ropeInterleaved struct{ *reference }

func (w ropeInterleaved) QKNormRopeForward(out, rstd, x, gain *backend.Tensor, seqLen int, base float32) {
	D := x.Dim(-1)
	reorder := func(t *backend.Tensor, toHalves bool) *backend.Tensor {
		src := w.reference.Download(t)
		dst := make([]float32, len(src))
		for r := 0; r < len(src)/D; r++ {
			for i := range D / 2 {
				a, b := r*D+2*i, r*D+2*i+1 // interleaved positions
				c, d := r*D+i, r*D+i+D/2   // halves positions
				if toHalves {
					dst[c], dst[d] = src[a], src[b]
				} else {
					dst[a], dst[b] = src[c], src[d]
				}
			}
		}
		p := w.reference.New(t.DType, t.Shape...)
		w.reference.Upload(p, dst)
		return p
	}
	o := w.reference.New(out.DType, out.Shape...)
	w.reference.QKNormRopeForward(o, rstd, reorder(x, true), gain, seqLen, base)
	w.reference.Upload(out, w.reference.Download(reorder(o, false)))
}

func (w mistake) ScaledAddForward(out, x, y, s *backend.Tensor) {
	if w.op == backend.OpScaledAdd {
		s = nil // ignores s
	}
	w.reference.ScaledAddForward(out, x, y, s)
}

func (w mistake) ReluSqBackward(dx, dout, x *backend.Tensor) {
	if w.op == backend.OpReluSq {
		w.reference.ReluSqForward(dx, x) // returns relu² instead of its gradient
		return
	}
	w.reference.ReluSqBackward(dx, dout, x)
}

func (w mistake) SoftcapCEForward(loss, logits, targets *backend.Tensor, cap float32) {
	if w.op == backend.OpSoftcapCE {
		cap = 1e30 // no softcap
	}
	w.reference.SoftcapCEForward(loss, logits, targets, cap)
}

func (w mistake) AdamStep(p, g, m, v *backend.Tensor, hp backend.AdamParams) {
	if w.op == backend.OpAdam {
		hp.Step = 1 << 20 // no bias correction
	}
	w.reference.AdamStep(p, g, m, v, hp)
}

func (w mistake) MuonMomentum(buf, geff, g *backend.Tensor, momentum float32) {
	w.reference.MuonMomentum(buf, geff, g, momentum)
	if w.op == backend.OpMuon {
		w.reference.Cast(geff, buf) // plain momentum, not Nesterov
	}
}

func (w mistake) NewtonSchulz(out, g *backend.Tensor, steps int) {
	if w.op == backend.OpNewtonSchulz && steps > 0 {
		steps-- // one step short
	}
	w.reference.NewtonSchulz(out, g, steps)
}

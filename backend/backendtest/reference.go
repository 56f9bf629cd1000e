package backendtest

import (
	"math"

	"github.com/golf-ml/golf/backend"
)

// Reference returns the oracle as a backend: float64 storage holding values
// representable in each tensor's dtype, every op computed by the float64
// oracle and rounded once on store to the output's dtype. It is the ideal
// the contract describes (no float32 arithmetic error, one rounding per
// output), slow and simple, sharing no code with any real backend.
// RunAll compares a whole training step of a backend against it.
func Reference() backend.Backend { return &reference{} }

// fault names one way the reference can misbehave, for the suite's own
// tests (which must show the suite catches it); the zero value is none.
type fault string

const (
	faultUnwrittenLast  fault = "unwritten-last"  // the last element of every output is not stored
	faultOverwriteAccum fault = "overwrite-accum" // accumulators are overwritten, not added into
	faultModifyInput    fault = "modify-input"    // the first read-only input is changed
	faultWriteOutside   fault = "write-outside"   // one element after every output is written
	faultIgnoreOffset   fault = "ignore-offset"   // views are read and written at offset 0
	faultPerturb        fault = "perturb"         // CD outputs are 3 ulps off before rounding
	faultTruncate       fault = "truncate"        // BF16/F16 outputs are truncated toward zero, not rounded to nearest even
	faultLowPrecision   fault = "low-precision"   // every operand is rounded to bfloat16 first
)

type reference struct {
	fault         fault
	reads, writes []*backend.Tensor // of the op in progress
	// seq, when set, is the backend whose unfused ops the fused ops run
	// (a wrapper with a mistake in one of them); nil: the reference.
	seq backend.Backend
}

// unfused is the backend that runs the fused ops' sequences.
func (b *reference) unfused() backend.Backend {
	if b.seq != nil {
		return b.seq
	}
	return b
}

type refData struct{ v []float64 }

func (b *reference) Name() string                            { return "reference" }
func (b *reference) Device() string                          { return "float64 oracle, rounding once on store" }
func (b *reference) Supports(backend.Op, backend.DType) bool { return true }
func (b *reference) Free(*backend.Tensor)                    {}
func (b *reference) Sync() error                             { return nil }

func (b *reference) New(dt backend.DType, shape ...int) *backend.Tensor {
	t := &backend.Tensor{Shape: append([]int(nil), shape...), DType: dt}
	t.Data = &refData{make([]float64, t.Len())}
	return t
}

func (b *reference) Upload(t *backend.Tensor, src any) {
	d := t.Data.(*refData).v[t.Offset : t.Offset+t.Len()]
	switch s := src.(type) {
	case []float32:
		for i, x := range s[:len(d)] {
			d[i] = roundTo(t.DType, float64(x))
		}
	case []int32:
		for i, x := range s[:len(d)] {
			d[i] = float64(x)
		}
	default:
		panic("backendtest: reference Upload of " + t.String() + " from an unknown slice type")
	}
}

func (b *reference) Download(t *backend.Tensor) []float32 {
	return narrow(t.Data.(*refData).v[t.Offset : t.Offset+t.Len()])
}

// --- storage access ---------------------------------------------------------------

// begin starts an op; the function it returns ends it.
func (b *reference) begin() func() {
	b.reads, b.writes = b.reads[:0], b.writes[:0]
	return func() {
		if b.fault == faultModifyInput {
			b.modifyInput()
		}
	}
}

func (b *reference) modifyInput() {
	for _, r := range b.reads {
		written := false
		for _, w := range b.writes {
			written = written || w.Data == r.Data
		}
		if !written && r.DType != backend.I32 {
			d := r.Data.(*refData).v
			if math.IsNaN(d[r.Offset]) {
				d[r.Offset] = 0
			} else {
				d[r.Offset]++
			}
			return
		}
	}
}

func (b *reference) offset(t *backend.Tensor) int {
	if b.fault == faultIgnoreOffset {
		return 0
	}
	return t.Offset
}

// get returns a copy of t's elements (nil for a nil tensor).
func (b *reference) get(t *backend.Tensor) []float64 {
	if t == nil {
		return nil
	}
	b.reads = append(b.reads, t)
	o := b.offset(t)
	v := clone(t.Data.(*refData).v[o : o+t.Len()])
	if b.fault == faultLowPrecision && t.DType != backend.I32 {
		for i := range v {
			v[i] = roundTo(backend.BF16, v[i])
		}
	}
	return v
}

// acc returns the contents of a tensor the op adds into or updates in place.
func (b *reference) acc(t *backend.Tensor) []float64 {
	v := b.get(t)
	if b.fault == faultOverwriteAccum {
		clear(v)
	}
	return v
}

func (b *reference) getIDs(t *backend.Tensor) []int {
	v := b.get(t)
	ids := make([]int, len(v))
	for i, x := range v {
		ids[i] = int(x)
	}
	return ids
}

// put rounds v to t's dtype and stores it (nothing for a nil tensor).
func (b *reference) put(t *backend.Tensor, v []float64) {
	if t == nil {
		return
	}
	b.writes = append(b.writes, t)
	d, o, n := t.Data.(*refData).v, b.offset(t), len(v)
	if b.fault == faultUnwrittenLast {
		n--
	}
	for i := 0; i < n; i++ {
		x := v[i]
		if b.fault == faultPerturb && t.DType != backend.F32 {
			x *= 1 + 3*t.DType.Eps()
		}
		if b.fault == faultTruncate && (t.DType == backend.BF16 || t.DType == backend.F16) {
			d[o+i] = truncateTo(t.DType, float32(x))
			continue
		}
		d[o+i] = roundTo(t.DType, x)
	}
	if b.fault == faultWriteOutside && o+len(v) < len(d) {
		d[o+len(v)] = 42
	}
}

// --- ops ------------------------------------------------------------------------

func (b *reference) Zero(t *backend.Tensor) {
	defer b.begin()()
	b.put(t, make([]float64, t.Len()))
}

func (b *reference) Cast(dst, src *backend.Tensor) {
	defer b.begin()()
	b.put(dst, b.get(src))
}

func (b *reference) Scale(x *backend.Tensor, s float32) {
	defer b.begin()()
	v := b.acc(x)
	scale(v, float64(s))
	b.put(x, v)
}

func (b *reference) Axpy(dst, x *backend.Tensor, alpha float32) {
	defer b.begin()()
	d := b.acc(dst)
	axpy(d, b.get(x), float64(alpha))
	b.put(dst, d)
}

func (b *reference) Reduce(dst, x *backend.Tensor, kind backend.ReduceKind) {
	defer b.begin()()
	d := b.acc(dst)
	reduce(d, b.get(x), kind)
	b.put(dst, d)
}

// Accumulate keeps the exact total's float32 rounding and its error.
func (b *reference) Accumulate(acc, x *backend.Tensor, alpha float32) {
	defer b.begin()()
	a := b.acc(acc)
	s := 0.0
	for _, v := range b.get(x) {
		s += v
	}
	total := a[0] - a[1] + float64(alpha)*s
	hi := roundTo(backend.F32, total)
	b.put(acc, []float64{hi, hi - total})
}

func (b *reference) ReadScalar(acc *backend.Tensor) (float64, error) {
	a := b.get(acc)
	return a[0] - a[1], nil
}

func (b *reference) EmbeddingForward(out, ids, w *backend.Tensor) {
	defer b.begin()()
	v := make([]float64, out.Len())
	embeddingForward(v, b.getIDs(ids), b.get(w), w.Dim(-1))
	b.put(out, v)
}

func (b *reference) EmbeddingBackward(dw, ids, dout *backend.Tensor) {
	defer b.begin()()
	d := b.acc(dw)
	embeddingBackward(d, b.getIDs(ids), b.get(dout), dw.Dim(-1))
	b.put(dw, d)
}

func (b *reference) RMSNormForward(out, rstd, x *backend.Tensor) {
	defer b.begin()()
	N, C := x.Dim(0), x.Dim(-1)
	o, r := make([]float64, N*C), make([]float64, N)
	rmsNormForward(o, r, b.get(x), N, C)
	b.put(out, o)
	b.put(rstd, r)
}

func (b *reference) RMSNormBackward(dx, dout, x, rstd, dres *backend.Tensor) {
	defer b.begin()()
	N, C := x.Dim(0), x.Dim(-1)
	v := make([]float64, N*C)
	rmsNormBackward(v, b.get(dout), b.get(x), b.get(rstd), b.get(dres), N, C)
	b.put(dx, v)
}

func (b *reference) ResidMixForward(out, x, x0, mix *backend.Tensor) {
	defer b.begin()()
	N, C := x.Dim(0), x.Dim(-1)
	v := make([]float64, N*C)
	residMixForward(v, b.get(x), b.get(x0), b.get(mix), N, C)
	b.put(out, v)
}

func (b *reference) ResidMixBackward(dx, dx0, dmix, dout, x, x0, mix *backend.Tensor) {
	defer b.begin()()
	N, C := x.Dim(0), x.Dim(-1)
	dxv, dx0v, dmixv := make([]float64, N*C), b.acc(dx0), b.acc(dmix)
	residMixBackward(dxv, dx0v, dmixv, b.get(dout), b.get(x), b.get(x0), b.get(mix), N, C)
	b.put(dx, dxv)
	b.put(dx0, dx0v)
	b.put(dmix, dmixv)
}

func (b *reference) LinearForward(out, x, w *backend.Tensor) {
	defer b.begin()()
	N, O, I := x.Dim(0), w.Dim(0), w.Dim(1)
	v := make([]float64, N*O)
	linearForward(v, b.get(x), b.get(w), N, O, I)
	b.put(out, v)
}

func (b *reference) LinearBackward(dx, dw, dout, x, w *backend.Tensor, accumulate bool) {
	defer b.begin()()
	N, O, I := x.Dim(0), w.Dim(0), w.Dim(1)
	var dxv []float64
	if dx != nil {
		dxv = make([]float64, N*I)
		if accumulate {
			dxv = b.acc(dx)
		}
	}
	dwv := b.acc(dw)
	linearBackward(dxv, dwv, b.get(dout), b.get(x), b.get(w), N, O, I, accumulate)
	b.put(dx, dxv)
	b.put(dw, dwv)
}

func (b *reference) QKNormRopeForward(out, rstd, x, gain *backend.Tensor, seqLen int, base float32) {
	defer b.begin()()
	N, Hx, D := x.Dim(0), x.Dim(1), x.Dim(2)
	o, r := make([]float64, N*Hx*D), make([]float64, N*Hx)
	qkNormRopeForward(o, r, b.get(x), b.get(gain), N, Hx, D, seqLen, float64(base))
	b.put(out, o)
	b.put(rstd, r)
}

func (b *reference) QKNormRopeBackward(dx, dgain, dout, x, rstd, gain *backend.Tensor, seqLen int, base float32) {
	defer b.begin()()
	N, Hx, D := x.Dim(0), x.Dim(1), x.Dim(2)
	dxv, dg := make([]float64, N*Hx*D), b.acc(dgain)
	qkNormRopeBackward(dxv, dg, b.get(dout), b.get(x), b.get(rstd), b.get(gain), N, Hx, D, seqLen, float64(base))
	b.put(dx, dxv)
	b.put(dgain, dg)
}

func (b *reference) AttentionForward(out, lse, q, k, v *backend.Tensor, seqLen int) {
	defer b.begin()()
	N, H, Hkv, D := q.Dim(0), q.Dim(1), k.Dim(1), q.Dim(2)
	o, l := make([]float64, N*H*D), make([]float64, N*H)
	attentionForward(o, l, b.get(q), b.get(k), b.get(v), N, H, Hkv, D, seqLen)
	b.put(out, o)
	b.put(lse, l)
}

func (b *reference) AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse *backend.Tensor, seqLen int) {
	defer b.begin()()
	N, H, Hkv, D := q.Dim(0), q.Dim(1), k.Dim(1), q.Dim(2)
	dqv, dkv, dvv := make([]float64, N*H*D), make([]float64, N*Hkv*D), make([]float64, N*Hkv*D)
	attentionBackward(dqv, dkv, dvv, b.get(dout), b.get(q), b.get(k), b.get(v), b.get(out), b.get(lse),
		N, H, Hkv, D, seqLen)
	b.put(dq, dqv)
	b.put(dk, dkv)
	b.put(dv, dvv)
}

func (b *reference) ScaledAddForward(out, x, y, s *backend.Tensor) {
	defer b.begin()()
	N, C := x.Dim(0), x.Dim(-1)
	v := make([]float64, N*C)
	scaledAddForward(v, b.get(x), b.get(y), b.get(s), N, C)
	b.put(out, v)
}

func (b *reference) ScaledAddBackward(dy, ds, dout, y, s *backend.Tensor) {
	defer b.begin()()
	N, C := y.Dim(0), y.Dim(-1)
	var dyv []float64
	if dy != nil {
		dyv = make([]float64, N*C)
	}
	dsv := b.acc(ds)
	scaledAddBackward(dyv, dsv, b.get(dout), b.get(y), b.get(s), N, C)
	b.put(dy, dyv)
	b.put(ds, dsv)
}

func (b *reference) ReluSqForward(out, x *backend.Tensor) {
	defer b.begin()()
	v := make([]float64, x.Len())
	reluSqForward(v, b.get(x))
	b.put(out, v)
}

func (b *reference) ReluSqBackward(dx, dout, x *backend.Tensor) {
	defer b.begin()()
	v := make([]float64, x.Len())
	reluSqBackward(v, b.get(dout), b.get(x))
	b.put(dx, v)
}

func (b *reference) SoftcapCEForward(loss, logits, targets *backend.Tensor, cap float32) {
	defer b.begin()()
	N, V := logits.Dim(0), logits.Dim(1)
	v := make([]float64, N)
	softcapCEForward(v, b.get(logits), b.getIDs(targets), N, V, float64(cap))
	b.put(loss, v)
}

func (b *reference) SoftcapCEBackward(dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	defer b.begin()()
	N, V := logits.Dim(0), logits.Dim(1)
	v := make([]float64, N*V)
	softcapCEBackward(v, b.get(logits), b.getIDs(targets), N, V, float64(cap), float64(scale))
	b.put(dlogits, v)
}

func (b *reference) AdamStep(p, g, m, v *backend.Tensor, hp backend.AdamParams) {
	defer b.begin()()
	pv, mv, vv := b.acc(p), b.acc(m), b.acc(v)
	adamStep(pv, b.get(g), mv, vv, float64(hp.LR), float64(hp.Beta1), float64(hp.Beta2), float64(hp.Eps), hp.Step)
	b.put(p, pv)
	b.put(m, mv)
	b.put(v, vv)
}

func (b *reference) MuonMomentum(buf, geff, g *backend.Tensor, momentum float32) {
	defer b.begin()()
	bv, gv := b.acc(buf), b.get(g)
	e := make([]float64, len(gv))
	muonMomentum(bv, e, gv, float64(momentum))
	b.put(buf, bv)
	b.put(geff, e)
}

func (b *reference) NewtonSchulz(out, g *backend.Tensor, steps int) {
	defer b.begin()()
	R, C := g.Dim(0), g.Dim(1)
	v := make([]float64, R*C)
	newtonSchulz(v, b.get(g), R, C, steps)
	b.put(out, v)
}

// truncateTo rounds x toward zero to dt (BF16 or F16), as a kernel that
// drops the low bits of its float32 result instead of rounding would:
// within an ulp of the right value, so only the check of the rounding
// itself (roundedOnce) catches it.
func truncateTo(dt backend.DType, x float32) float64 {
	r := roundTo(dt, float64(x))
	if math.Abs(r) > math.Abs(float64(x)) {
		r = math.Copysign(math.Abs(r)-ulp(dt, float64(x)), r)
	}
	return r
}

// --- fused ops: the sequences that define them ------------------------------------

func (b *reference) ResidMixRMSNormForward(mix, h, rstd, x, x0, mixW *backend.Tensor) {
	u := b.unfused()
	u.ResidMixForward(mix, x, x0, mixW)
	u.RMSNormForward(h, rstd, mix)
}

func (b *reference) ScaledAddRMSNormForward(out, h, rstd, x, y, s *backend.Tensor) {
	u := b.unfused()
	u.ScaledAddForward(out, x, y, s)
	u.RMSNormForward(h, rstd, out)
}

func (b *reference) QKNormRopePairForward(qOut, qRstd, q, qGain, kOut, kRstd, k, kGain *backend.Tensor, seqLen int, base float32) {
	u := b.unfused()
	u.QKNormRopeForward(qOut, qRstd, q, qGain, seqLen, base)
	u.QKNormRopeForward(kOut, kRstd, k, kGain, seqLen, base)
}

func (b *reference) QKNormRopePairBackward(dq, dqGain, dqOut, q, qRstd, qGain, dk, dkGain, dkOut, k, kRstd, kGain *backend.Tensor, seqLen int, base float32) {
	u := b.unfused()
	u.QKNormRopeBackward(dq, dqGain, dqOut, q, qRstd, qGain, seqLen, base)
	u.QKNormRopeBackward(dk, dkGain, dkOut, k, kRstd, kGain, seqLen, base)
}

func (b *reference) RMSNormResidMixBackward(dx, dx0, dmix, dout, xm, rstd, dres, x, x0, mixW *backend.Tensor) {
	u := b.unfused()
	dm := b.New(dx.DType, dx.Shape...)
	u.RMSNormBackward(dm, dout, xm, rstd, dres)
	u.ResidMixBackward(dx, dx0, dmix, dm, x, x0, mixW)
}

func (b *reference) SoftcapCEForwardBackward(loss, dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	u := b.unfused()
	u.SoftcapCEForward(loss, logits, targets, cap)
	u.SoftcapCEBackward(dlogits, logits, targets, cap, scale)
}

func (b *reference) LinearReluSqForward(h, a, x, w *backend.Tensor) {
	u := b.unfused()
	u.LinearForward(h, x, w)
	u.ReluSqForward(a, h)
}

func (b *reference) LinearScaledAddForward(y, out, x, w, res, s *backend.Tensor) {
	u := b.unfused()
	u.LinearForward(y, x, w)
	u.ScaledAddForward(out, res, y, s)
}

func (b *reference) LinearReluSqBackward(dh, dw, dout, a, h, w *backend.Tensor) {
	u := b.unfused()
	da := b.New(dh.DType, dh.Shape...)
	u.LinearBackward(da, dw, dout, a, w, false)
	u.ReluSqBackward(dh, da, h)
}

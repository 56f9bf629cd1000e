package cpu

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/vmath"
)

// The fused ops (see backend.Backend). Each runs its sequence's row code
// on each group of rows while the group is in cache, so the bits are the
// sequence's: the elementwise rows are rounded into their stored tensor
// and normalised from it; RMSNorm's backward rows are rounded to CD in
// scratch and fed to the resid mix's backward, whose column sums keep
// their fixed chunks of rows; the cross-entropy's forward and backward
// share one sum of exponentials per row.

// ResidMixRMSNormForward is ResidMixForward(mix, x, x0, mixW) then
// RMSNormForward(h, rstd, mix), in one pass over the rows.
func (b *Backend) ResidMixRMSNormForward(mix, h, rstd, x, x0, mixW *backend.Tensor) {
	const op = "ResidMixRMSNormForward"
	wantCD(op, []string{"mix", "h", "x", "x0"}, mix, h, x, x0)
	wantF32(op, []string{"rstd", "mixW"}, rstd, mixW)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	for i, t := range []*backend.Tensor{mix, h, x0} {
		wantShape(op, []string{"mix", "h", "x0"}[i], t, N, C)
	}
	wantShape(op, "rstd", rstd, N)
	wantShape(op, "mixW", mixW, 2, C)
	m := f32s(mixW)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runRows(N, rowLoop{kind: rowResidMixNorm, C: C, out: mix, h: h, x: x, y: x0, r: f32s(rstd), v0: m[:C], v1: m[C:]})
}

// ScaledAddRMSNormForward is ScaledAddForward(out, x, y, s) then
// RMSNormForward(h, rstd, out), in one pass over the rows. out may alias x.
func (b *Backend) ScaledAddRMSNormForward(out, h, rstd, x, y, s *backend.Tensor) {
	const op = "ScaledAddRMSNormForward"
	wantCD(op, []string{"out", "h", "x", "y"}, out, h, x, y)
	wantF32(op, []string{"rstd", "s"}, rstd, s)
	N, C := scaledShapes(op, x, s)
	for i, t := range []*backend.Tensor{out, h, y} {
		wantShape(op, []string{"out", "h", "y"}[i], t, N, C)
	}
	wantShape(op, "rstd", rstd, N)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runRows(N, rowLoop{kind: rowScaledAddNorm, C: C, out: out, h: h, x: x, y: y, r: f32s(rstd), v0: b.gains(s, C)})
}

// QKNormRopePairForward is QKNormRopeForward of q, then of k. Here a
// launch is a parallel loop over rows, which costs one barrier; the two
// loops are kept, each the unfused op's.
func (b *Backend) QKNormRopePairForward(qOut, qRstd, q, qGain, kOut, kRstd, k, kGain *backend.Tensor, seqLen int, base float32) {
	b.QKNormRopeForward(qOut, qRstd, q, qGain, seqLen, base)
	b.QKNormRopeForward(kOut, kRstd, k, kGain, seqLen, base)
}

// QKNormRopePairBackward is QKNormRopeBackward of q, then of k (two loops,
// as in the forward).
func (b *Backend) QKNormRopePairBackward(dq, dqGain, dqOut, q, qRstd, qGain, dk, dkGain, dkOut, k, kRstd, kGain *backend.Tensor, seqLen int, base float32) {
	b.QKNormRopeBackward(dq, dqGain, dqOut, q, qRstd, qGain, seqLen, base)
	b.QKNormRopeBackward(dk, dkGain, dkOut, k, kRstd, kGain, seqLen, base)
}

// RMSNormResidMixBackward is RMSNormBackward(dm, dout, xm, rstd, dres)
// then ResidMixBackward(dx, dx0, dmix, dm, x, x0, mixW) with dm never
// stored: each group of rows of dm is computed and rounded to CD in
// scratch, then used as the resid mix backward's dout.
func (b *Backend) RMSNormResidMixBackward(dx, dx0, dmix, dout, xm, rstd, dres, x, x0, mixW *backend.Tensor) {
	const op = "RMSNormResidMixBackward"
	wantCD(op, []string{"dx", "dout", "xm", "dres", "x", "x0"}, dx, dout, xm, dres, x, x0)
	wantF32(op, []string{"dx0", "dmix", "rstd", "mixW"}, dx0, dmix, rstd, mixW)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	for i, t := range []*backend.Tensor{dx, dx0, dout, xm, x0} {
		wantShape(op, []string{"dx", "dx0", "dout", "xm", "x0"}[i], t, N, C)
	}
	if dres != nil {
		wantShape(op, "dres", dres, N, C)
	}
	wantShape(op, "rstd", rstd, N)
	wantShape(op, "dmix", dmix, 2, C)
	wantShape(op, "mixW", mixW, 2, C)
	m := f32s(mixW)
	b.mu.Lock()
	defer b.mu.Unlock()
	sums := b.reduceCols(N, 2*C, colReducer{kind: colRMSResidMix, C: C, g: dout, x: x, x0: x0, dx: dx,
		dx0: f32s(dx0), m0: m[:C], m1: m[C:], xm: xm, dres: dres, rstd: f32s(rstd)})
	addInto(f32s(dmix), sums)
}

// dmRows returns rows [n, n+g) (elements [i, i+m)) of RMSNormBackward's
// output from the reducer's xm, dout (g), rstd and dres, rounded to dx's
// dtype and widened, computed by the code RMSNormBackward runs on them.
func (r *colReducer) dmRows(w, i, m, n, g int) []float32 {
	b := r.b
	rs := r.rstd[n : n+g]
	dm := b.buf(w, bufDm, m)
	if f, ok := half16(r.xm, r.g, r.dres, r.dx); ok {
		var res []uint16
		if r.dres != nil {
			res = u16s(r.dres)[i : i+m]
		}
		h := b.hbuf(w, m)
		if vmath.RMSGradRows16(f, h, u16s(r.g)[i:i+m], u16s(r.xm)[i:i+m], res, rs, b.buf(w, bufDmScratch, g)) {
			widen16(r.dx.DType, dm, h)
			return dm
		}
	}
	xs := view(r.xm, i, m, b.buf(w, bufDmX, m))
	gs := view(r.g, i, m, b.buf(w, bufDmG, m))
	var res []float32
	if r.dres != nil {
		res = view(r.dres, i, m, b.buf(w, bufDmRes, m))
	}
	var ms [rowGroup]float64
	rmsBackRows(dm, gs, xs, res, rs, b.buf(w, bufDmScratch, m), ms[:g])
	if r.dx.DType != backend.F32 {
		h := b.hbuf(w, m)
		narrow16(r.dx.DType, h, dm)
		widen16(r.dx.DType, dm, h)
	}
	return dm
}

// widen16 and narrow16 convert between float32 and 16-bit dt storage.
func widen16(dt backend.DType, dst []float32, src []uint16) {
	if dt == backend.BF16 {
		vmath.FromBF16(dst, src)
	} else {
		vmath.FromF16(dst, src)
	}
}

func narrow16(dt backend.DType, dst []uint16, src []float32) {
	if dt == backend.BF16 {
		vmath.ToBF16(dst, src)
	} else {
		vmath.ToF16(dst, src)
	}
}

// SoftcapCEForwardBackward is SoftcapCEForward then SoftcapCEBackward in
// one pass over each row: its sum of exponentials serves the loss and the
// gradient.
func (b *Backend) SoftcapCEForwardBackward(loss, dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	const op = "SoftcapCEForwardBackward"
	wantCD(op, []string{"dlogits", "logits"}, dlogits, logits)
	wantF32(op, []string{"loss"}, loss)
	N, V, tg := ceShapes(op, logits, targets)
	wantShape(op, "loss", loss, N)
	wantShape(op, "dlogits", dlogits, N, V)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runCE(N, ceLoop{backward: true, V: V, cap: cap, scale: scale, logits: logits, dlogits: dlogits, tg: tg, loss: f32s(loss)})
}

// LinearReluSqForward is LinearForward(h, x, w) then ReluSqForward(a, h):
// the unfused sequence of this backend's own ops (the product dominates;
// the relu² pass over h is an elementwise loop while h is still hot).
func (b *Backend) LinearReluSqForward(h, a, x, w *backend.Tensor) {
	b.LinearForward(h, x, w)
	b.ReluSqForward(a, h)
}

// LinearScaledAddForward is LinearForward(y, x, w) then
// ScaledAddForward(out, res, y, s): the unfused sequence of this backend's
// own ops (the residual add is an elementwise loop over the stored y).
func (b *Backend) LinearScaledAddForward(y, out, x, w, res, s *backend.Tensor) {
	b.LinearForward(y, x, w)
	b.ScaledAddForward(out, res, y, s)
}

// LinearReluSqBackward is LinearBackward(da, dw, dout, a, w, false) then
// ReluSqBackward(dh, da, h), the unfused sequence of this backend's own
// ops, with da stored (rounded to CD, as the sequence stores it) in dh
// itself and turned into dh in place: ReluSqBackward reads each element of
// its dout before it writes that element of dx, and nothing else is
// allocated (the memory plan's peak stays the run's).
func (b *Backend) LinearReluSqBackward(dh, dw, dout, a, h, w *backend.Tensor) {
	b.LinearBackward(dh, dw, dout, a, w, false)
	b.ReluSqBackward(dh, dh, h)
}

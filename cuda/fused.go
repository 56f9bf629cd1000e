package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// The fused ops of the contract over cuda/kernels/fused.cu,
// qk_norm_rope.cu's pair kernels and softcap_ce.cu's softcap_ce_fused:
// one launch each (two for the pair's backward with a dgain and for
// RMSNormResidMixBackward, whose column sums need every row block's
// partials first), bit for bit the unfused sequence, which the kernels
// compute with the unfused kernels' own row code (golf_rows.cuh, the
// per-head functions of qk_norm_rope.cu).

// ResidMixRMSNormForward: ResidMixForward(mix, x, x0, mixW) then
// RMSNormForward(h, rstd, mix), one warp per row (resid_mix_rmsnorm_fwd).
func (b *Backend) ResidMixRMSNormForward(mix, h, rstd, x, x0, mixW *backend.Tensor) {
	const op = "ResidMixRMSNormForward"
	N, C := residMixShape(op, x, mixW)
	normFloat(op, x.DType, mix, h, x0)
	checkDType(op, backend.F32, rstd)
	ewCheckShape(op, N, C, mix, h, x0)
	normShape(op, "rstd", rstd, N)
	if N == 0 || C == 0 {
		return
	}
	b.a.rmsnorm = shaders.RMSNormArgs{Rows: uint32(N), Cols: uint32(C), Eps: backend.RMSNormEps}
	rows := rowsPerBlock(b.threads("resid_mix_rmsnorm", "fwd", x.DType))
	b.launch("resid_mix_rmsnorm", "fwd", x.DType, [3]int{blocks(N, rows), 1, 1}, x, x0, mixW, mix, h, rstd,
		structArg(&b.a.rmsnorm))
}

// ScaledAddRMSNormForward: ScaledAddForward(out, x, y, s) then
// RMSNormForward(h, rstd, out), one warp per row (scaled_add_rmsnorm_fwd);
// out may alias x, s nil means 1.
func (b *Backend) ScaledAddRMSNormForward(out, h, rstd, x, y, s *backend.Tensor) {
	const op = "ScaledAddRMSNormForward"
	normFloat(op, x.DType, out, h, y)
	checkDType(op, backend.F32, rstd)
	N, C := scaledAddShape(op, x, s)
	ewCheckShape(op, N, C, out, h, y)
	normShape(op, "rstd", rstd, N)
	if N == 0 || C == 0 {
		return
	}
	hasS := uint32(0)
	if s != nil {
		hasS = 1
	}
	b.a.scaledAdd = shaders.ScaledAddArgs{Rows: uint32(N), Cols: uint32(C), HasS: hasS}
	b.a.rmsnorm = shaders.RMSNormArgs{Rows: uint32(N), Cols: uint32(C), Eps: backend.RMSNormEps}
	rows := rowsPerBlock(b.threads("scaled_add_rmsnorm", "fwd", x.DType))
	b.launch("scaled_add_rmsnorm", "fwd", x.DType, [3]int{blocks(N, rows), 1, 1}, x, y, s, out, h, rstd,
		structArg(&b.a.scaledAdd), structArg(&b.a.rmsnorm))
}

// qkPairShapes checks the pair's q and k (each as QKNormRopeForward's x)
// and returns N, D and each side's heads.
func qkPairShapes(op string, q, qRstd, qGain, k, kRstd, kGain *backend.Tensor, seqLen int) (N, Hq, Hk, D int) {
	N, Hq, D = qkRopeShapes(op, q, qRstd, qGain, seqLen)
	Nk, Hk, Dk := qkRopeShapes(op, k, kRstd, kGain, seqLen)
	if Nk != N || Dk != D || k.DType != q.DType {
		panic(fmt.Sprintf("cuda: %s: q %v and k %v differ in rows, head dim or dtype", op, q, k))
	}
	return N, Hq, Hk, D
}

// ropeArgs is the RopeArgs of one side of a pair.
func ropeArgs(N, H, D, seqLen int, base float32, gain *backend.Tensor) shaders.RopeArgs {
	a := shaders.RopeArgs{Rows: uint32(N), Heads: uint32(H), HeadDim: uint32(D), SeqLen: uint32(seqLen), Base: base,
		Eps: backend.RMSNormEps}
	if gain != nil {
		a.HasGain = 1
	}
	return a
}

// QKNormRopePairForward: QKNormRopeForward of q, then of k, in one launch
// (qk_norm_rope_pair_fwd: the q heads' blocks, then the k heads').
func (b *Backend) QKNormRopePairForward(qOut, qRstd, q, qGain, kOut, kRstd, k, kGain *backend.Tensor, seqLen int, base float32) {
	const op = "QKNormRopePairForward"
	N, Hq, Hk, D := qkPairShapes(op, q, qRstd, qGain, k, kRstd, kGain, seqLen)
	checkDType(op, q.DType, qOut, kOut)
	normShape(op, "qOut", qOut, N, Hq, D)
	normShape(op, "kOut", kOut, N, Hk, D)
	if N*(Hq+Hk) == 0 {
		return
	}
	rope := b.qkRopeTable(seqLen, D, base)
	b.a.rope = ropeArgs(N, Hq, D, seqLen, base, qGain)
	b.a.ropeK = ropeArgs(N, Hk, D, seqLen, base, kGain)
	heads := qkHeadsPerBlock(b.threads("qk_norm_rope_pair", "fwd", q.DType), D)
	grid := blocks(N*Hq, heads) + blocks(N*Hk, heads)
	b.launch("qk_norm_rope_pair", "fwd", q.DType, [3]int{grid, 1, 1}, q, qGain, qOut, qRstd, k, kGain, kOut, kRstd, rope,
		structArg(&b.a.rope), structArg(&b.a.ropeK))
}

// QKNormRopePairBackward: QKNormRopeBackward of q, then of k: one launch
// for dq, dk and the per-head partials of both (qk_norm_rope_pair_bwd), and
// one for the dgains that are not nil (qk_norm_rope_pair_dgain), each summed
// as qk_norm_rope_dgain sums it.
func (b *Backend) QKNormRopePairBackward(dq, dqGain, dqOut, q, qRstd, qGain, dk, dkGain, dkOut, k, kRstd, kGain *backend.Tensor, seqLen int, base float32) {
	const op = "QKNormRopePairBackward"
	N, Hq, Hk, D := qkPairShapes(op, q, qRstd, qGain, k, kRstd, kGain, seqLen)
	checkDType(op, q.DType, dq, dqOut, dk, dkOut)
	normShape(op, "dq", dq, N, Hq, D)
	normShape(op, "dqOut", dqOut, N, Hq, D)
	normShape(op, "dk", dk, N, Hk, D)
	normShape(op, "dkOut", dkOut, N, Hk, D)
	for _, g := range []struct {
		name        string
		dgain, gain *backend.Tensor
		heads       int
	}{{"dqGain", dqGain, qGain, Hq}, {"dkGain", dkGain, kGain, Hk}} {
		if g.dgain == nil {
			continue
		}
		if g.gain == nil {
			panic(fmt.Sprintf("cuda: %s: %s given without its gain", op, g.name))
		}
		checkDType(op, backend.F32, g.dgain)
		normShape(op, g.name, g.dgain, g.heads)
	}
	if N*(Hq+Hk) == 0 {
		return
	}
	rope := b.qkRopeTable(seqLen, D, base)
	s := b.qkRope()
	part := b.scratch(&s.partial, N*(Hq+Hk))
	qPart := &backend.Tensor{Shape: []int{N, Hq}, DType: backend.F32, Offset: part.Offset, Data: part.Data}
	kPart := &backend.Tensor{Shape: []int{N, Hk}, DType: backend.F32, Offset: part.Offset + N*Hq, Data: part.Data}
	b.a.rope = ropeArgs(N, Hq, D, seqLen, base, qGain)
	b.a.ropeK = ropeArgs(N, Hk, D, seqLen, base, kGain)
	heads := qkHeadsPerBlock(b.threads("qk_norm_rope_pair", "bwd", q.DType), D)
	grid := blocks(N*Hq, heads) + blocks(N*Hk, heads)
	b.launch("qk_norm_rope_pair", "bwd", q.DType, [3]int{grid, 1, 1}, dqOut, q, qRstd, qGain, dq, qPart, dkOut, k, kRstd,
		kGain, dk, kPart, rope, structArg(&b.a.rope), structArg(&b.a.ropeK))
	if dqGain == nil && dkGain == nil {
		return
	}
	// A side without a dgain gets no blocks: 0 heads.
	if dqGain == nil {
		b.a.rope.Heads = 0
	}
	if dkGain == nil {
		b.a.ropeK.Heads = 0
	}
	grid = int(b.a.rope.Heads + b.a.ropeK.Heads)
	b.launch("qk_norm_rope_pair", "dgain", q.DType, [3]int{grid, 1, 1}, qPart, dqGain, kPart, dkGain,
		structArg(&b.a.rope), structArg(&b.a.ropeK))
}

// RMSNormResidMixBackward: RMSNormBackward(dm, dout, xm, rstd, dres) then
// ResidMixBackward(dx, dx0, dmix, dm, x, x0, mixW) with dm never stored:
// rmsnorm_resid_mix_bwd over resid_mix_bwd's RB row blocks writes dx, dx0
// and the row blocks' partials, then resid_mix_dmix adds them into dmix.
func (b *Backend) RMSNormResidMixBackward(dx, dx0, dmix, dout, xm, rstd, dres, x, x0, mixW *backend.Tensor) {
	const op = "RMSNormResidMixBackward"
	N, C := residMixShape(op, x, mixW)
	normFloat(op, x.DType, dx, dout, xm, x0)
	checkDType(op, backend.F32, dx0, dmix, rstd)
	ewCheckShape(op, N, C, dx, dx0, dout, xm, x0)
	ewCheckShape(op, 2, C, dmix)
	normShape(op, "rstd", rstd, N)
	hasRes := uint32(0)
	if dres != nil {
		checkDType(op, x.DType, dres)
		ewCheckShape(op, N, C, dres)
		hasRes = 1
	}
	if N == 0 || C == 0 {
		return
	}
	part := b.scratch(&b.res.cols, ColumnRowBlocks*2*C)
	b.a.rmsnormBwd = shaders.RMSNormBwdArgs{Rows: uint32(N), Cols: uint32(C), HasRes: hasRes}
	b.a.residMix = shaders.ResidMixArgs{Rows: uint32(N), Cols: uint32(C)}
	b.launch("rmsnorm_resid_mix", "bwd", x.DType, [3]int{ColumnRowBlocks, 1, 1}, dout, xm, rstd, dres, x, x0, mixW, dx, dx0,
		part, structArg(&b.a.rmsnormBwd), structArg(&b.a.residMix))
	b.residMixDmix(part, dmix, x.DType, C)
}

// SoftcapCEForwardBackward: SoftcapCEForward then SoftcapCEBackward in one
// pass over the logits (softcap_ce_fused: one warp per row, the row's
// log-sum-exp computed once).
func (b *Backend) SoftcapCEForwardBackward(loss, dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	const op = "SoftcapCEForwardBackward"
	N, V := softcapCEShapes(op, logits, targets)
	checkDType(op, backend.F32, loss)
	checkDType(op, logits.DType, dlogits)
	normShape(op, "loss", loss, N)
	normShape(op, "dlogits", dlogits, N, V)
	if N == 0 || V == 0 {
		return
	}
	b.a.ce = shaders.CEArgs{Rows: uint32(N), Vocab: uint32(V), Cap: cap, Scale: scale}
	rows := rowsPerBlock(b.threads("softcap_ce", "fused", logits.DType))
	b.launch("softcap_ce", "fused", logits.DType, [3]int{blocks(N, rows), 1, 1}, logits, targets, loss, dlogits,
		structArg(&b.a.ce))
}

// LinearReluSqForward: LinearForward(h, x, w) then ReluSqForward(a, h),
// the unfused sequence of this backend's own ops (cuBLASLt's product, then
// relu_sq_fwd over the stored h).
func (b *Backend) LinearReluSqForward(h, a, x, w *backend.Tensor) {
	b.LinearForward(h, x, w)
	b.ReluSqForward(a, h)
}

// LinearScaledAddForward: LinearForward(y, x, w) then
// ScaledAddForward(out, res, y, s), the unfused sequence of this backend's
// own ops (cuBLASLt's product, then scaled_add_fwd over the stored y).
func (b *Backend) LinearScaledAddForward(y, out, x, w, res, s *backend.Tensor) {
	b.LinearForward(y, x, w)
	b.ScaledAddForward(out, res, y, s)
}

// LinearReluSqBackward: LinearBackward(da, dw, dout, a, w, false) then
// ReluSqBackward(dh, da, h), the unfused sequence of this backend's own
// ops, with da stored (rounded to CD, as the sequence stores it) in dh
// itself and turned into dh in place: each thread of relu_sq_bwd loads its
// chunk of dout before it stores that chunk of dx, and nothing is
// allocated (the memory plan's peak stays the run's).
func (b *Backend) LinearReluSqBackward(dh, dw, dout, a, h, w *backend.Tensor) {
	b.LinearBackward(dh, dw, dout, a, w, false)
	b.ReluSqBackward(dh, dh, h)
}

package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// The fused ops of the contract, bit for bit the unfused sequences that
// define them, in one kernel each (and a second where column or head sums
// cross threadgroups, as in the unfused ops):
//
//	ResidMixRMSNormForward    resid_mix_rmsnorm_fwd           (shaders/fused.metal)
//	ScaledAddRMSNormForward   scaled_add_rmsnorm_fwd          (shaders/fused.metal)
//	RMSNormResidMixBackward   rmsnorm_resid_mix_bwd, then     (shaders/fused.metal)
//	                          resid_mix_dmix
//	QKNormRopePairForward     qk_norm_rope_pair_fwd           (shaders/qk_norm_rope.metal)
//	QKNormRopePairBackward    qk_norm_rope_pair_bwd, then     (shaders/qk_norm_rope.metal)
//	                          qk_norm_rope_pair_dgain
//	SoftcapCEForwardBackward  softcap_ce_fused                (shaders/softcap_ce.metal)
//	LinearReluSqForward       gemm_nt_relu_sq                 (shaders/linear.metal)
//	LinearReluSqBackward      gemm_nn_drelu_sq, then the      (shaders/linear.metal)
//	                          weight gradient's gemm_f32_tn
//	LinearScaledAddForward    gemm_nt_scaled_add              (shaders/linear.metal)
//
// The fused kernels compute with the unfused kernels' own row and element
// functions (shaders/golf_rows.h and the per-head and log-sum-exp functions
// of their files). A row sum's order depends on the threadgroup size, so a
// fused row kernel is dispatched with exactly the size the unfused kernel
// of that sum gets (rowThreads of that kernel's pipeline for the rows of
// 4-element chunks, normThreads for the others). Where the fused
// pipeline cannot run that many threads, or where two unfused kernels whose
// sums the fused kernel reproduces would get different sizes (register
// pressure lowering one pipeline's limit below 256 threads could cause
// either), the op runs the unfused sequence instead. The q/k pair's
// per-head sums are one team's (8 threads), whatever the threadgroup, so its
// forward and backward kernels size their threadgroups freely.

func init() {
	for op := range backend.FusedOps {
		supported[op] = true
	}
}

// fusedRowThreads returns the threadgroup size for fused row kernel p that
// reproduces the row sums of the unfused kernels us over rows of cols
// elements, or of cols 4-element chunks (rowChunks) for the kernels of
// golf_rows.h, and whether p can run it (false: run the unfused sequence).
func fusedRowThreads(p Pipeline, cols int, us ...Pipeline) (int, bool) {
	t := normThreads(us[0], cols)
	for _, u := range us[1:] {
		if normThreads(u, cols) != t {
			return 0, false
		}
	}
	return t, p.MaxThreads() >= t
}

// ResidMixRMSNormForward is ResidMixForward(mix, x, x0, mixW) followed by
// RMSNormForward(h, rstd, mix), in one kernel: each row's mix is rounded
// and stored, and its RMSNorm computed from the rounded values.
//
//	mix, h, x, x0 CD (N, C), rstd F32 (N), mixW F32 (2, C)
func (b *Backend) ResidMixRMSNormForward(mix, h, rstd, x, x0, mixW *backend.Tensor) {
	const op = "ResidMixRMSNormForward"
	N, C := residMixShape(op, x, mixW)
	checkDType(op, x.DType, mix, h, x0)
	checkDType(op, backend.F32, rstd)
	ewCheckShape(op, N, C, mix, h, x0)
	normShape(op, "rstd", rstd, N)
	if N == 0 || C == 0 {
		return
	}
	p := b.pipe("resid_mix_rmsnorm", "fwd", x.DType)
	threads, ok := fusedRowThreads(p, rowChunks(C), b.pipe("rmsnorm", "fwd", x.DType))
	if !ok {
		b.ResidMixForward(mix, x, x0, mixW)
		b.RMSNormForward(h, rstd, mix)
		return
	}
	b.a.rmsnorm = shaders.RMSNormArgs{Rows: uint32(N), Cols: uint32(C), Eps: backend.RMSNormEps}
	b.begin()
	b.arg(x)
	b.arg(x0)
	b.arg(mixW)
	b.arg(mix)
	b.arg(h)
	b.arg(rstd)
	bytesArg(b, &b.a.rmsnorm)
	b.alignedArg(vecAligned(C, x, x0, mixW, mix, h))
	b.dispatch(p, [3]int{N, 1, 1}, [3]int{threads, 1, 1})
}

// ScaledAddRMSNormForward is ScaledAddForward(out, x, y, s) followed by
// RMSNormForward(h, rstd, out), in one kernel. out may alias x; s (F32
// (C)) nil means 1.
//
//	out, h, x, y CD (N, C), rstd F32 (N)
func (b *Backend) ScaledAddRMSNormForward(out, h, rstd, x, y, s *backend.Tensor) {
	const op = "ScaledAddRMSNormForward"
	normFloat(op, x.DType, out, h, y)
	N, C := scaledAddShape(op, x, s)
	ewCheckShape(op, N, C, out, h, y)
	checkDType(op, backend.F32, rstd)
	normShape(op, "rstd", rstd, N)
	if N == 0 || C == 0 {
		return
	}
	p := b.pipe("scaled_add_rmsnorm", "fwd", x.DType)
	threads, ok := fusedRowThreads(p, rowChunks(C), b.pipe("rmsnorm", "fwd", x.DType))
	if !ok {
		b.ScaledAddForward(out, x, y, s)
		b.RMSNormForward(h, rstd, out)
		return
	}
	hasS := uint32(0)
	if s != nil {
		hasS = 1
	} else {
		s = rstd // bound but never read
	}
	b.a.addNorm = shaders.AddNormArgs{Rows: uint32(N), Cols: uint32(C), Eps: backend.RMSNormEps, HasS: hasS}
	b.begin()
	b.arg(x)
	b.arg(y)
	b.arg(s)
	b.arg(out)
	b.arg(h)
	b.arg(rstd)
	bytesArg(b, &b.a.addNorm)
	b.alignedArg(vecAligned(C, x, y, s, out, h))
	b.dispatch(p, [3]int{N, 1, 1}, [3]int{threads, 1, 1})
}

// RMSNormResidMixBackward is RMSNormBackward(dm, dout, xm, rstd, dres)
// followed by ResidMixBackward(dx, dx0, dmix, dm, x, x0, mixW), with dm
// rounded to CD but never stored: one kernel over resid_mix_bwd's row
// blocks writes dx, dx0 and the blocks' column sums, then resid_mix_dmix
// adds those into dmix, as ResidMixBackward does. dres (CD (N, C)) may be
// nil. No output may alias an input or another output.
//
//	dx CD (N, C), dx0 F32 (N, C), dmix F32 (2, C)
//	dout, xm, x, x0 CD (N, C), rstd F32 (N), mixW F32 (2, C)
func (b *Backend) RMSNormResidMixBackward(dx, dx0, dmix, dout, xm, rstd, dres, x, x0, mixW *backend.Tensor) {
	const op = "RMSNormResidMixBackward"
	N, C := residMixShape(op, x, mixW)
	checkDType(op, x.DType, dx, dout, xm, x0)
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
	p := b.pipe("rmsnorm_resid_mix", "bwd", x.DType)
	threads, ok := fusedRowThreads(p, rowChunks(C), b.pipe("rmsnorm", "bwd", x.DType))
	if !ok {
		dm := b.fusedDm(x.DType, N, C)
		b.RMSNormBackward(dm, dout, xm, rstd, dres)
		b.ResidMixBackward(dx, dx0, dmix, dm, x, x0, mixW)
		return
	}
	if dres == nil {
		dres = dout // bound but never read
	}
	blocks := ewColBlocks(N) // resid_mix_bwd's row blocks
	part := b.partials(blocks * 2 * C)
	b.a.rmsnormBwd = shaders.RMSNormBwdArgs{Rows: uint32(N), Cols: uint32(C), HasRes: hasRes}
	b.begin()
	b.arg(dout)
	b.arg(xm)
	b.arg(rstd)
	b.arg(dres)
	b.arg(x)
	b.arg(x0)
	b.arg(mixW)
	b.arg(dx)
	b.arg(dx0)
	b.arg(part)
	bytesArg(b, &b.a.rmsnormBwd)
	b.alignedArg(vecAligned(C, dout, xm, dres, x, x0, mixW, dx, dx0, part))
	b.dispatch(p, [3]int{blocks, 1, 1}, [3]int{threads, 1, 1})

	f := b.pipe("resid_mix", "dmix", x.DType)
	b.a.residMix = shaders.ResidMixArgs{Rows: uint32(blocks), Cols: uint32(2 * C)}
	b.begin()
	b.arg(part)
	b.arg(dmix)
	bytesArg(b, &b.a.residMix)
	b.dispatch1D(f, 2*C)
}

// qkPairShapes checks the two sides of a q/k pair call (each as
// qkRopeShapes) and that they share the rows, head dim and dtype; it
// returns N, Hq, Hk and D.
func qkPairShapes(op string, q, qRstd, qGain, k, kRstd, kGain *backend.Tensor, seqLen int) (N, Hq, Hk, D int) {
	N, Hq, D = qkRopeShapes(op, q, qRstd, qGain, seqLen)
	Nk, Hk, Dk := qkRopeShapes(op, k, kRstd, kGain, seqLen)
	checkDType(op, q.DType, k)
	if Nk != N || Dk != D {
		panic(fmt.Sprintf("metal: %s: q %v and k %v differ in rows or head dim", op, q, k))
	}
	return N, Hq, Hk, D
}

// qkDgainShape checks a dgain of H heads, which may be nil, and needs its
// gain.
func qkDgainShape(op, name string, dgain, gain *backend.Tensor, H int) {
	if dgain == nil {
		return
	}
	if gain == nil {
		panic(fmt.Sprintf("metal: %s: %s given without its gain", op, name))
	}
	checkDType(op, backend.F32, dgain)
	normShape(op, name, dgain, H)
}

// ropePairArgs returns the pair's argument struct, and the gains to bind
// (a gain that is nil is bound to rope, never read).
func ropePairArgs(N, Hq, Hk, D, seqLen int, rope, qGain, kGain *backend.Tensor) (shaders.RopePairArgs, *backend.Tensor, *backend.Tensor) {
	a := shaders.RopePairArgs{Rows: uint32(N), QHeads: uint32(Hq), KHeads: uint32(Hk), HeadDim: uint32(D),
		SeqLen: uint32(seqLen), Eps: backend.RMSNormEps, QHasGain: 1, KHasGain: 1}
	if qGain == nil {
		qGain, a.QHasGain = rope, 0
	}
	if kGain == nil {
		kGain, a.KHasGain = rope, 0
	}
	return a, qGain, kGain
}

// QKNormRopePairForward is QKNormRopeForward of q, then of k, in one
// launch over the heads of both (q and k share N and D; their head counts
// may differ):
//
//	qOut, q CD (N, Hq, D), qRstd F32 (N, Hq), qGain F32 (Hq) or nil
//	kOut, k CD (N, Hk, D), kRstd F32 (N, Hk), kGain F32 (Hk) or nil
func (b *Backend) QKNormRopePairForward(qOut, qRstd, q, qGain, kOut, kRstd, k, kGain *backend.Tensor, seqLen int, base float32) {
	const op = "QKNormRopePairForward"
	N, Hq, Hk, D := qkPairShapes(op, q, qRstd, qGain, k, kRstd, kGain, seqLen)
	checkDType(op, q.DType, qOut, kOut)
	normShape(op, "qOut", qOut, N, Hq, D)
	normShape(op, "kOut", kOut, N, Hk, D)
	heads := N * (Hq + Hk)
	if heads == 0 {
		return
	}
	rope := b.qkRopeTable(seqLen, D, base)
	var gq, gk *backend.Tensor
	b.a.ropePair, gq, gk = ropePairArgs(N, Hq, Hk, D, seqLen, rope, qGain, kGain)
	p := b.pipe("qk_norm_rope_pair", "fwd", q.DType)
	b.begin()
	b.arg(q)
	b.arg(k)
	b.arg(rope)
	b.arg(gq)
	b.arg(gk)
	b.arg(qOut)
	b.arg(kOut)
	b.arg(qRstd)
	b.arg(kRstd)
	bytesArg(b, &b.a.ropePair)
	b.alignedArg(vecAligned(D/2, q, k, qOut, kOut))
	t := qkRopeThreads(p, heads)
	b.dispatch(p, qkRopeGroups(heads, t), [3]int{t, 1, 1})
}

// QKNormRopePairBackward is QKNormRopeBackward of q, then of k: one launch
// over the heads of both writes dq, dk and every head's dgain partial, and
// one more adds the partials into whichever of dqGain and dkGain is given
// (each summed as QKNormRopeBackward sums it).
func (b *Backend) QKNormRopePairBackward(dq, dqGain, dqOut, q, qRstd, qGain, dk, dkGain, dkOut, k, kRstd, kGain *backend.Tensor, seqLen int, base float32) {
	const op = "QKNormRopePairBackward"
	N, Hq, Hk, D := qkPairShapes(op, q, qRstd, qGain, k, kRstd, kGain, seqLen)
	checkDType(op, q.DType, dq, dqOut, dk, dkOut)
	normShape(op, "dq", dq, N, Hq, D)
	normShape(op, "dqOut", dqOut, N, Hq, D)
	normShape(op, "dk", dk, N, Hk, D)
	normShape(op, "dkOut", dkOut, N, Hk, D)
	qkDgainShape(op, "dqGain", dqGain, qGain, Hq)
	qkDgainShape(op, "dkGain", dkGain, kGain, Hk)
	heads := N * (Hq + Hk)
	if heads == 0 {
		return
	}
	var pd Pipeline
	var dgThreads int
	if dqGain != nil || dkGain != nil {
		pd = b.pipe("qk_norm_rope_pair", "dgain", q.DType)
		var ok bool
		if dgThreads, ok = fusedRowThreads(pd, N, b.pipe("qk_norm_rope", "dgain", q.DType)); !ok {
			b.QKNormRopeBackward(dq, dqGain, dqOut, q, qRstd, qGain, seqLen, base)
			b.QKNormRopeBackward(dk, dkGain, dkOut, k, kRstd, kGain, seqLen, base)
			return
		}
	}
	rope := b.qkRopeTable(seqLen, D, base)
	partial := b.qkRopePartial(heads)
	var gq, gk *backend.Tensor
	b.a.ropePair, gq, gk = ropePairArgs(N, Hq, Hk, D, seqLen, rope, qGain, kGain)
	p := b.pipe("qk_norm_rope_pair", "bwd", q.DType)
	b.begin()
	b.arg(dqOut)
	b.arg(dkOut)
	b.arg(q)
	b.arg(k)
	b.arg(qRstd)
	b.arg(kRstd)
	b.arg(rope)
	b.arg(gq)
	b.arg(gk)
	b.arg(dq)
	b.arg(dk)
	b.arg(partial)
	bytesArg(b, &b.a.ropePair)
	b.alignedArg(vecAligned(D/2, dqOut, dkOut, q, k, dq, dk))
	t := qkRopeThreads(p, heads)
	b.dispatch(p, qkRopeGroups(heads, t), [3]int{t, 1, 1})
	if pd == nil {
		return
	}
	groups := 0
	dgq, dgk := partial, partial // unbound slots point at a tensor never written
	if dqGain != nil {
		b.a.ropePair.QHasDgain, dgq = 1, dqGain
		groups += Hq
	}
	if dkGain != nil {
		b.a.ropePair.KHasDgain, dgk = 1, dkGain
		groups += Hk
	}
	b.begin()
	b.arg(partial)
	b.arg(dgq)
	b.arg(dgk)
	bytesArg(b, &b.a.ropePair)
	b.dispatch(pd, [3]int{groups, 1, 1}, [3]int{dgThreads, 1, 1})
}

// SoftcapCEForwardBackward is SoftcapCEForward(loss, logits, targets, cap)
// followed by SoftcapCEBackward(dlogits, logits, targets, cap, scale), in
// one kernel that computes each row's log-sum-exp once.
//
//	loss F32 (N), dlogits CD (N, V) (overwritten), logits CD (N, V), targets I32 (N)
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
	p := b.pipe("softcap_ce", "fused", logits.DType)
	threads, ok := fusedRowThreads(p, V, b.pipe("softcap_ce", "fwd", logits.DType), b.pipe("softcap_ce", "bwd", logits.DType))
	if !ok {
		b.SoftcapCEForward(loss, logits, targets, cap)
		b.SoftcapCEBackward(dlogits, logits, targets, cap, scale)
		return
	}
	b.a.ce = shaders.CEArgs{Rows: uint32(N), Vocab: uint32(V), Cap: cap, Scale: scale}
	b.begin()
	b.arg(logits)
	b.arg(targets)
	b.arg(loss)
	b.arg(dlogits)
	bytesArg(b, &b.a.ce)
	b.dispatch(p, [3]int{N, 1, 1}, [3]int{threads, 1, 1})
}

// LinearReluSqForward is LinearForward(h, x, w) followed by
// ReluSqForward(a, h), in one GEMM (gemm_nt_relu_sq): its epilogue rounds
// each h to CD, stores it, and stores relu(h)² computed from the rounded
// value (relu_sq.metal's element function). A product that gemmSlice
// splits (few output tiles, a long k) runs the unfused sequence instead:
// its rounding happens after the slices' reduction.
//
//	h, a CD (N, O), x CD (N, I), w CD (O, I)
func (b *Backend) LinearReluSqForward(h, a, x, w *backend.Tensor) {
	const op = "LinearReluSqForward"
	N, I, O := linearShapes(op, x, w)
	linearWantShape(op, "h", h, N, O)
	linearWantShape(op, "a", a, N, O)
	checkDType(op, x.DType, h, a, w)
	if N == 0 || O == 0 {
		return
	}
	b.a.gemm = shaders.GemmArgs{M: uint32(N), N: uint32(O), K: uint32(I),
		Lda: uint32(I), Ldb: uint32(I), Ldc: uint32(O), TransB: 1, Alpha: 1}
	if gemmSlice(&b.a.gemm) != 0 {
		b.LinearForward(h, x, w)
		b.ReluSqForward(a, h)
		return
	}
	b.gemmEpilogue(b.pipe("gemm", "nt_relu_sq", x.DType), x, w, h, x.DType, []*backend.Tensor{a}, nil)
}

// LinearReluSqBackward is LinearBackward(da, dw, dout, a, w, false)
// followed by ReluSqBackward(dh, da, h) with da never stored: dx's GEMM
// (gemm_nn_drelu_sq) rounds each da to CD in its epilogue and stores
// dh = 2·max(h, 0)·da from it (relu_sq.metal's element function), then
// dw += doutᵀ·a runs as LinearBackward's. A dx product that gemmSlice
// splits runs the unfused sequence instead, da in a scratch (fusedDm).
//
//	dh, a, h CD (N, I), dout CD (N, O), w CD (O, I), dw F32 (O, I) or nil
func (b *Backend) LinearReluSqBackward(dh, dw, dout, a, h, w *backend.Tensor) {
	const op = "LinearReluSqBackward"
	N, I, O := linearShapes(op, a, w)
	linearWantShape(op, "dout", dout, N, O)
	linearWantShape(op, "dh", dh, N, I)
	linearWantShape(op, "h", h, N, I)
	checkDType(op, a.DType, dout, w, dh, h)
	if dw != nil {
		linearWantShape(op, "dw", dw, O, I)
		checkDType(op, backend.F32, dw)
	}
	if N > 0 && I > 0 {
		b.a.gemm = shaders.GemmArgs{M: uint32(N), N: uint32(I), K: uint32(O),
			Lda: uint32(O), Ldb: uint32(I), Ldc: uint32(I), Alpha: 1}
		if gemmSlice(&b.a.gemm) != 0 {
			da := b.fusedDm(a.DType, N, I)
			b.LinearBackward(da, nil, dout, a, w, false)
			b.ReluSqBackward(dh, da, h)
		} else {
			b.gemmEpilogue(b.pipe("gemm", "nn_drelu_sq", a.DType), dout, w, dh, a.DType, nil, []*backend.Tensor{h})
		}
	}
	if dw != nil {
		b.LinearBackward(nil, dw, dout, a, w, false)
	}
}

// LinearScaledAddForward is LinearForward(y, x, w) followed by
// ScaledAddForward(out, res, y, s), in one GEMM (gemm_nt_scaled_add): its
// epilogue rounds each y to CD, stores it, and stores res + s⊙y computed
// from the rounded value (golf_rows.h's scaled_add_elem, scaled_add_fwd's
// expression). out may alias res (each element is read and then written
// by one thread); s (F32 (O)) nil means 1. A product that gemmSlice
// splits runs the unfused sequence instead.
//
//	y, out, res CD (N, O), x CD (N, I), w CD (O, I)
func (b *Backend) LinearScaledAddForward(y, out, x, w, res, s *backend.Tensor) {
	const op = "LinearScaledAddForward"
	N, I, O := linearShapes(op, x, w)
	linearWantShape(op, "y", y, N, O)
	linearWantShape(op, "out", out, N, O)
	linearWantShape(op, "res", res, N, O)
	checkDType(op, x.DType, y, out, res, w)
	scaledAddShape(op, res, s)
	if N == 0 || O == 0 {
		return
	}
	b.a.gemm = shaders.GemmArgs{M: uint32(N), N: uint32(O), K: uint32(I),
		Lda: uint32(I), Ldb: uint32(I), Ldc: uint32(O), TransB: 1, Alpha: 1}
	if gemmSlice(&b.a.gemm) != 0 {
		b.LinearForward(y, x, w)
		b.ScaledAddForward(out, res, y, s)
		return
	}
	hasS := s != nil
	if !hasS {
		s = res // bound but never read
	}
	b.gemmEpilogue(b.pipe("gemm", "nt_scaled_add", x.DType), x, w, y, x.DType,
		[]*backend.Tensor{out}, []*backend.Tensor{res, s}, hasS)
}

// gemmEpilogue dispatches fused GEMM p (gemm_nt_relu_sq,
// gemm_nn_drelu_sq, gemm_nt_scaled_add) over the args in b.a.gemm (one
// matrix, no split k, alpha = 1, beta = 0; c is bound to d and never
// read): a and bm the operands, d the output, then the epilogue's stored
// tensors of d's shape (paired: e), the tensors it reads (read: h; or res
// and s), and its flags, each a uint 0 or 1 (gemm_nt_scaled_add's has_s).
// Bit 2 of aligned (paired stores) needs d and every paired tensor on
// whole pairs; the read tensors are read element by element.
func (b *Backend) gemmEpilogue(p Pipeline, a, bm, d *backend.Tensor, in backend.DType, paired, read []*backend.Tensor, flags ...bool) {
	g := &b.a.gemm
	g.Aligned, g.SliceK = 0, 0
	if gemmAligned(a, g.Lda, in) {
		g.Aligned |= 1
	}
	if gemmAligned(bm, g.Ldb, in) {
		g.Aligned |= 2
	}
	pairs := d.Offset%2 == 0 && g.Ldc%2 == 0
	for _, t := range paired {
		pairs = pairs && t.Offset%2 == 0
	}
	if pairs {
		g.Aligned |= 4
	}
	threads := gemmThreadsPortable
	if b.caps.Flavour == Simd {
		threads = gemmThreadsSimd
	}
	if p.MaxThreads() < threads {
		panic(fmt.Sprintf("metal: kernel %s runs at most %d threads per threadgroup, it needs %d",
			p.Name(), p.MaxThreads(), threads))
	}
	b.begin()
	b.arg(a)
	b.arg(bm)
	b.arg(d)
	b.arg(d)
	bytesArg(b, g)
	for _, t := range paired {
		b.arg(t)
	}
	for _, t := range read {
		b.arg(t)
	}
	for _, f := range flags {
		b.alignedArg(f)
	}
	b.dispatch(p, [3]int{(int(g.N) + gemmTile - 1) / gemmTile, (int(g.M) + gemmTile - 1) / gemmTile, 1}, [3]int{threads, 1, 1})
}

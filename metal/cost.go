package metal

import (
	"math"
	"unsafe"

	"github.com/golf-ml/golf/shaders"
)

// The kernels' FLOP and byte annotations: what one dispatch of each kernel
// does, computed from its argument struct (the figures of the shaders'
// "Baseline" notes). Bytes are compulsory traffic: every tensor the kernel
// reads is read once and every one it writes is written once (an
// accumulator, read and written, counts twice); re-reads of tiles are
// assumed to hit the caches. FLOPs count the useful arithmetic (an FMA is
// two). They feed the command-buffer policy (stream.go) and the
// predicted-time model (predict.go).

// Cost is the work of one dispatch.
type Cost struct {
	FLOPs float64 // floating-point operations
	Bytes float64 // bytes moved to and from device memory
}

// Add returns c + d.
func (c Cost) Add(d Cost) Cost { return Cost{c.FLOPs + d.FLOPs, c.Bytes + d.Bytes} }

// kernelInfo is what a runtime knows of a pipeline for costing it.
type kernelInfo struct {
	kernel Kernel // registry entry; zero for a kernel outside the registry
	elem   string // "float", "half" or "bfloat"
	es     float64
	cost   costFunc // nil outside the registry
	family *Family  // the predicted-time model's family; nil outside the registry
}

// costFunc gives a dispatch's cost from its argument struct (the inline
// bytes bound to the dispatch) and the kernel's element size es; ok is
// false when the bytes are not the struct the kernel takes.
type costFunc func(args []byte, es float64) (c Cost, ok bool)

// as copies args into a T when they have T's size.
func as[T any](args []byte) (v T, ok bool) {
	if len(args) != int(unsafe.Sizeof(v)) {
		return v, false
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), len(args)), args)
	return v, true
}

// costOf wraps a formula over T as a costFunc.
func costOf[T any](f func(a T, es float64) Cost) costFunc {
	return func(args []byte, es float64) (Cost, bool) {
		a, ok := as[T](args)
		if !ok {
			return Cost{}, false
		}
		return f(a, es), true
	}
}

// attnPairs is the number of causal (query, key) pairs of an attention
// call: B·H·T(T+1)/2.
func attnPairs(a shaders.AttentionArgs) float64 {
	T := float64(a.SeqLen)
	return float64(a.Batch) * float64(a.Heads) * T * (T + 1) / 2
}

// attnRows returns N = B·T, and the elements of q-shaped (N·H·D) and
// k-shaped (N·Hkv·D) tensors.
func attnRows(a shaders.AttentionArgs) (n, qElems, kElems float64) {
	n = float64(a.Batch) * float64(a.SeqLen)
	return n, n * float64(a.Heads) * float64(a.HeadDim), n * float64(a.KvHeads) * float64(a.HeadDim)
}

// attnDeltaRows is the (query row, head) δs the dk/dv kernel computes with
// OwnDelta (simd only): each key tile at k0 (attTiles' dkvBK rows) stages
// the query rows k0 .. T − 1 of every head, Σ over tiles of T − k0 per
// head and sequence.
func attnDeltaRows(a shaders.AttentionArgs) float64 {
	_, _, bk := attTiles(Simd, int(a.HeadDim))
	bkv := float64(bk)
	T := float64(a.SeqLen)
	nt := math.Ceil(T / bkv)
	return float64(a.Batch) * float64(a.Heads) * (nt*T - bkv*nt*(nt-1)/2)
}

func b2f(v uint32) float64 {
	if v != 0 {
		return 1
	}
	return 0
}

// kernelCosts has one formula per kernel of the registry
// (TestEveryKernelHasCost).
var kernelCosts = map[Kernel]costFunc{
	{"adam", "step"}: costOf(func(a shaders.AdamArgs, _ float64) Cost {
		n := float64(a.N)
		return Cost{12 * n, 7 * 4 * n} // p, g, m, v read; p, m, v written
	}),
	{"attention", "fwd"}: costOf(func(a shaders.AttentionArgs, es float64) Cost {
		n, q, k := attnRows(a)
		return Cost{4 * float64(a.HeadDim) * attnPairs(a), (2*q+2*k)*es + 4*n*float64(a.Heads)}
	}),
	{"attention", "delta"}: costOf(func(a shaders.AttentionArgs, es float64) Cost {
		n, q, _ := attnRows(a)
		return Cost{2 * q, 2*q*es + 4*n*float64(a.Heads)}
	}),
	{"attention", "dq"}: costOf(func(a shaders.AttentionArgs, es float64) Cost {
		n, q, k := attnRows(a)
		return Cost{6 * float64(a.HeadDim) * attnPairs(a), (3*q+2*k)*es + 8*n*float64(a.Heads)}
	}),
	{"attention", "dkv"}: costOf(func(a shaders.AttentionArgs, es float64) Cost {
		n, q, k := attnRows(a)
		return Cost{8 * float64(a.HeadDim) * attnPairs(a), (2*q+4*k)*es + 8*n*float64(a.Heads)}
	}),
	{"attention", "dkv_ds"}: costOf(func(a shaders.AttentionArgs, es float64) Cost {
		n, q, k := attnRows(a)
		c := Cost{8 * float64(a.HeadDim) * attnPairs(a), (2*q+4*k)*es + 8*n*float64(a.Heads) + 4*attnPairs(a)}
		if a.OwnDelta != 0 {
			// δ of every query tile each key tile stages (2·D FLOPs a
			// row): out read, δ not.
			c = c.Add(Cost{2 * float64(a.HeadDim) * attnDeltaRows(a), q*es - 4*n*float64(a.Heads)})
		}
		return c
	}),
	{"attention", "dq_ds"}: costOf(func(a shaders.AttentionArgs, es float64) Cost {
		_, q, k := attnRows(a)
		return Cost{2 * float64(a.HeadDim) * attnPairs(a), (q+k)*es + 4*attnPairs(a)}
	}),
	{"cast_from_float", ""}:  castCost(4),
	{"cast_from_half", ""}:   castCost(2),
	{"cast_from_bfloat", ""}: castCost(2),
	{"axpy", ""}: costOf(func(a shaders.ScalarArgs, es float64) Cost {
		n := float64(a.N)
		return Cost{2 * n, n*es + 8*n}
	}),
	{"embedding", "fwd"}: costOf(func(a shaders.EmbeddingArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{0, 4*float64(a.Rows) + 2*rc*es}
	}),
	{"embedding", "bwd"}: costOf(func(a shaders.EmbeddingArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{rc, 4*float64(a.Rows) + rc*es + 8*float64(a.Vocab)*float64(a.Cols)}
	}),
	{"gemm", "nn"}: gemmCost(false), {"gemm", "nt"}: gemmCost(false),
	{"gemm", "tn"}: gemmCost(false), {"gemm", "tt"}: gemmCost(false),
	{"gemm", "reduce"}: gemmReduceCost(false),
	{"gemm", "nt_sym"}: gemmSymCost(), {"gemm", "nn_sym"}: gemmSymCost(),
	{"gemm", "nt_relu_sq"}: gemmEpilogueCost(), {"gemm", "nn_drelu_sq"}: gemmEpilogueCost(),
	{"gemm", "nt_scaled_add"}: gemmScaledAddCost(), {"gemm_f32", "reduce"}: gemmReduceCost(true),
	{"gemm_f32", "nn"}: gemmCost(true), {"gemm_f32", "nt"}: gemmCost(true),
	{"gemm_f32", "tn"}: gemmCost(true), {"gemm_f32", "tt"}: gemmCost(true),
	{"muon", "momentum"}: costOf(func(a shaders.MomentumArgs, _ float64) Cost {
		n := float64(a.N)
		return Cost{4 * n, 16 * n}
	}),
	{"muon", "momentum_sumsq"}: costOf(func(a shaders.MuonSumsqArgs, es float64) Cost {
		// buf read and written (F32), g read, geff written; one partial
		// per threadgroup. FLOPs: the momentum's 4 and the square's 2.
		n := float64(a.N)
		return Cost{6 * n, 8*n + 2*n*es + 4*float64(a.Parts)}
	}),
	{"muon", "axpy_t"}: costOf(func(a shaders.MuonAxpyArgs, es float64) Cost {
		// X read, w (F32) read and written; a multiply and an add.
		n := float64(a.Rows) * float64(a.Cols)
		return Cost{2 * n, n*es + 8*n}
	}),
	{"newton_schulz", "sumsq"}: costOf(func(a shaders.NSArgs, es float64) Cost {
		n := nsCount(a) * float64(a.Rows) * float64(a.Cols)
		return Cost{2 * n, n * es}
	}),
	{"newton_schulz", "norm"}: costOf(func(a shaders.NSArgs, _ float64) Cost {
		k, p := nsCount(a), float64(a.Parts)
		return Cost{k * p, k * (4*p + 4)}
	}),
	{"newton_schulz", "scale_t"}: costOf(func(a shaders.NSArgs, es float64) Cost {
		n := nsCount(a) * float64(a.Rows) * float64(a.Cols)
		return Cost{n, n*es + 4*n}
	}),
	{"newton_schulz", "scale4"}: costOf(func(a shaders.NSArgs, es float64) Cost {
		n := nsCount(a) * float64(a.Rows) * float64(a.Cols)
		return Cost{n, n*es + 4*n}
	}),
	{"newton_schulz", "store"}: costOf(func(a shaders.NSArgs, es float64) Cost {
		n := nsCount(a) * float64(a.Rows) * float64(a.Cols)
		return Cost{0, 4*n + n*es}
	}),
	{"qk_norm_rope", "fwd"}: costOf(func(a shaders.RopeArgs, es float64) Cost {
		rh := float64(a.Rows) * float64(a.Heads)
		return Cost{7 * rh * float64(a.HeadDim), 2*rh*float64(a.HeadDim)*es + 4*rh}
	}),
	{"qk_norm_rope", "bwd"}: costOf(func(a shaders.RopeArgs, es float64) Cost {
		rh := float64(a.Rows) * float64(a.Heads)
		return Cost{20 * rh * float64(a.HeadDim), 3*rh*float64(a.HeadDim)*es + 8*rh}
	}),
	{"qk_norm_rope", "dgain"}: costOf(func(a shaders.RopeArgs, _ float64) Cost {
		rh := float64(a.Rows) * float64(a.Heads)
		return Cost{rh, 4*rh + 4*float64(a.Heads)}
	}),
	{"qk_norm_rope_pair", "fwd"}: costOf(func(a shaders.RopePairArgs, es float64) Cost {
		rh := float64(a.Rows) * float64(a.QHeads+a.KHeads)
		return Cost{7 * rh * float64(a.HeadDim), 2*rh*float64(a.HeadDim)*es + 4*rh}
	}),
	{"qk_norm_rope_pair", "bwd"}: costOf(func(a shaders.RopePairArgs, es float64) Cost {
		rh := float64(a.Rows) * float64(a.QHeads+a.KHeads)
		return Cost{20 * rh * float64(a.HeadDim), 3*rh*float64(a.HeadDim)*es + 8*rh}
	}),
	{"qk_norm_rope_pair", "dgain"}: costOf(func(a shaders.RopePairArgs, _ float64) Cost {
		h := b2f(a.QHasDgain)*float64(a.QHeads) + b2f(a.KHasDgain)*float64(a.KHeads)
		rh := float64(a.Rows) * h
		return Cost{rh, 4*rh + 8*h} // dgain read and written
	}),
	{"reduce", "partial"}: costOf(func(a shaders.ReduceArgs, es float64) Cost {
		n := float64(a.N)
		return Cost{2 * n, n * es}
	}),
	{"reduce", "final"}: costOf(func(a shaders.ReduceArgs, _ float64) Cost {
		n := float64(a.N)
		return Cost{n, 4*n + 8}
	}),
	{"relu_sq", "fwd"}: costOf(func(a shaders.EltwiseArgs, es float64) Cost {
		n := float64(a.N)
		return Cost{2 * n, 2 * n * es}
	}),
	{"relu_sq", "bwd"}: costOf(func(a shaders.EltwiseArgs, es float64) Cost {
		n := float64(a.N)
		return Cost{3 * n, 3 * n * es}
	}),
	{"relu_sq", "fwd4"}: costOf(func(a shaders.EltwiseArgs, es float64) Cost {
		n := float64(a.N)
		return Cost{2 * n, 2 * n * es}
	}),
	{"relu_sq", "bwd4"}: costOf(func(a shaders.EltwiseArgs, es float64) Cost {
		n := float64(a.N)
		return Cost{3 * n, 3 * n * es}
	}),
	{"resid_mix", "fwd"}: costOf(func(a shaders.ResidMixArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{3 * rc, 3*rc*es + 8*float64(a.Cols)}
	}),
	{"resid_mix", "bwd"}: costOf(func(a shaders.ResidMixArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{6 * rc, 4*rc*es + 8*rc + 8*float64(a.Cols)} // dx0 F32 read and written
	}),
	{"resid_mix", "dmix"}: costOf(func(a shaders.ResidMixArgs, _ float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{rc, 4*rc + 8*float64(a.Cols)}
	}),
	{"resid_mix_rmsnorm", "fwd"}: costOf(func(a shaders.RMSNormArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		// x, x0 read; mix, h written (mix's re-read hits the cache).
		return Cost{6 * rc, 4*rc*es + 4*float64(a.Rows) + 8*float64(a.Cols)}
	}),
	{"rmsnorm", "fwd"}: costOf(func(a shaders.RMSNormArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{3 * rc, 2*rc*es + 4*float64(a.Rows)}
	}),
	{"rmsnorm", "bwd"}: costOf(func(a shaders.RMSNormBwdArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{8 * rc, (3+b2f(a.HasRes))*rc*es + 4*float64(a.Rows)}
	}),
	{"rmsnorm_resid_mix", "bwd"}: costOf(func(a shaders.RMSNormBwdArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		// dout, xm, dres (when given), x, x0 read and dx written in CD; dx0
		// F32 read and written; rstd, the mix weights, and the row blocks'
		// column sums written for resid_mix_dmix. dm is never stored.
		blocks := float64(ewColBlocks(int(a.Rows)))
		return Cost{14 * rc, (5+b2f(a.HasRes))*rc*es + 8*rc + 4*float64(a.Rows) + 8*float64(a.Cols) + 8*blocks*float64(a.Cols)}
	}),
	{"scale", ""}: costOf(func(a shaders.ScalarArgs, _ float64) Cost {
		n := float64(a.N)
		return Cost{n, 8 * n}
	}),
	{"scaled_add", "fwd"}: costOf(func(a shaders.ScaledAddArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{2 * rc, 3*rc*es + 4*float64(a.Cols)}
	}),
	{"scaled_add", "bwd"}: costOf(func(a shaders.ScaledAddArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{3 * rc, (1+b2f(a.HasDs)+b2f(a.HasDy))*rc*es + 4*float64(a.Cols)}
	}),
	{"scaled_add", "ds"}: costOf(func(a shaders.ScaledAddArgs, _ float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{rc, 4*rc + 8*float64(a.Cols)}
	}),
	{"scaled_add_rmsnorm", "fwd"}: costOf(func(a shaders.AddNormArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		// x, y read; out, h written (out's re-read hits the cache).
		return Cost{5 * rc, 4*rc*es + 4*float64(a.Rows) + 4*b2f(a.HasS)*float64(a.Cols)}
	}),
	{"softcap_ce", "fwd"}: costOf(func(a shaders.CEArgs, es float64) Cost {
		rv := float64(a.Rows) * float64(a.Vocab)
		return Cost{30 * rv, rv*es + 8*float64(a.Rows)}
	}),
	{"softcap_ce", "bwd"}: costOf(func(a shaders.CEArgs, es float64) Cost {
		rv := float64(a.Rows) * float64(a.Vocab)
		return Cost{55 * rv, 2*rv*es + 4*float64(a.Rows)}
	}),
	{"softcap_ce", "fused"}: costOf(func(a shaders.CEArgs, es float64) Cost {
		rv := float64(a.Rows) * float64(a.Vocab)
		// logits read once, dlogits written; targets read, loss written.
		return Cost{55 * rv, 2*rv*es + 8*float64(a.Rows)}
	}),
	{"zero", ""}: costOf(func(a shaders.EltwiseArgs, es float64) Cost {
		return Cost{0, float64(a.N) * es}
	}),
}

// castCost is a cast from a source of element size src: read, convert,
// write.
func castCost(src float64) costFunc {
	return costOf(func(a shaders.EltwiseArgs, es float64) Cost {
		return Cost{0, float64(a.N) * (src + es)}
	})
}

// nsCount is the number of matrices of a Newton–Schulz dispatch (0 is 1).
func nsCount(a shaders.NSArgs) float64 { return float64(max(a.Count, 1)) }

// gemmCost is d = alpha·op(a)·op(b) + beta·c: 2·M·N·K FLOPs; a and b read,
// d written, c read when beta ≠ 0; d and c are float for gemm_f32; each of
// a batch's products counts in full. A split-K slice dispatch (slice_k ≠
// 0) writes its float partials instead: one M×N float matrix per slice
// (gemmReduceCost reads them back).
func gemmCost(f32Out bool) costFunc {
	return costOf(func(a shaders.GemmArgs, es float64) Cost {
		return gemmCostOf(a, es, f32Out, float64(a.M)*float64(a.N))
	})
}

// gemmSymCost is a symmetric product (gemm_<dir>_sym, M = N): the FLOPs of
// the tiles it computes, those on and above the diagonal, 2·K per element
// of them. With T = ⌈M/64⌉ tiles of heights h_0, …, h_{T−1} (64, the last
// M − 64·(T−1)), tile (I, J) holds h_I·h_J elements and the computed ones
// I ≤ J hold (Σh)²/2 + Σh²/2 = (M² + Σh²)/2 (about M²/2 + 32·M: 0.5625·M²
// at M = 512, against M² for the full product). The bytes do not shrink:
// every row of op(a) and column of op(b) still feeds some computed tile
// (so each is read once, as for the full product), every element of d is
// written (the off-diagonal tiles twice over, once mirrored) and every
// element of c read when beta ≠ 0, so the compulsory traffic is the full
// product's; the split-K partials, written mirrored too, are whole M×M
// matrices.
func gemmSymCost() costFunc {
	return costOf(func(a shaders.GemmArgs, es float64) Cost {
		return gemmCostOf(a, es, false, gemmSymElems(a.M))
	})
}

// gemmSymElems is (M² + Σh²)/2, the elements of the tiles on and above the
// diagonal of an M×M product (gemmSymCost).
func gemmSymElems(m uint32) float64 {
	full, rem := float64(m/gemmTile), float64(m%gemmTile)
	sq := full*gemmTile*gemmTile + rem*rem
	return (float64(m)*float64(m) + sq) / 2
}

// gemmCostOf is gemmCost with the FLOPs of elems computed outputs.
func gemmCostOf(a shaders.GemmArgs, es float64, f32Out bool, elems float64) Cost {
	m, n, k := float64(a.M), float64(a.N), float64(a.K)
	if a.SliceK != 0 {
		return Cost{2 * elems * k, (m*k+k*n)*es + gemmSlices(a)*m*n*4}
	}
	out := es
	if f32Out {
		out = 4
	}
	cRead := 0.0
	if a.Beta != 0 {
		cRead = 1
	}
	z := float64(max(a.Batch, 1))
	return Cost{z * 2 * elems * k, z * ((m*k+k*n)*es + (1+cRead)*m*n*out)}
}

// gemmEpilogueCost is a fused GEMM epilogue (gemm_nt_relu_sq,
// gemm_nn_drelu_sq): the product's cost (gemmCost; one matrix, no split
// k) and the epilogue's extra M×N tensor of the element type, written
// (relu(h)²) or read (h), with its few FLOPs per output (relu² 2, its
// backward 2; the max a compare).
func gemmEpilogueCost() costFunc {
	return costOf(func(a shaders.GemmArgs, es float64) Cost {
		mn := float64(a.M) * float64(a.N)
		return gemmCostOf(a, es, false, mn).Add(Cost{2 * mn, mn * es})
	})
}

// gemmScaledAddCost is the residual epilogue (gemm_nt_scaled_add): the
// product's cost (gemmCost; one matrix, no split k), res read and out
// written (two M×N tensors of the element type) and s read (N floats),
// with the scaled add's FMA per output.
func gemmScaledAddCost() costFunc {
	return costOf(func(a shaders.GemmArgs, es float64) Cost {
		mn := float64(a.M) * float64(a.N)
		return gemmCostOf(a, es, false, mn).Add(Cost{2 * mn, 2*mn*es + 4*float64(a.N)})
	})
}

// gemmSlices is the number of k slices of a split-K product.
func gemmSlices(a shaders.GemmArgs) float64 {
	return float64((a.K + a.SliceK - 1) / a.SliceK)
}

// gemmReduceCost is split-K's reduction: the slices' float partials read
// and summed (slices − 1 adds per output, and alpha, beta), c read when
// beta ≠ 0, d written; d and c are float for gemm_f32.
func gemmReduceCost(f32Out bool) costFunc {
	return costOf(func(a shaders.GemmArgs, es float64) Cost {
		mn, s := float64(a.M)*float64(a.N), gemmSlices(a)
		out := es
		if f32Out {
			out = 4
		}
		cRead := 0.0
		if a.Beta != 0 {
			cRead = 1
		}
		return Cost{(s + 2) * mn, s*mn*4 + (1+cRead)*mn*out}
	})
}

// elemSize is the size of an MSL element type.
func elemSize(elem string) float64 {
	if elem == "float" {
		return 4
	}
	return 2
}

// hostNameInfo maps every host name of the registry to its kernel.
var hostNameInfo = func() map[string]kernelInfo {
	m := map[string]kernelInfo{}
	for _, k := range Kernels {
		for _, f := range []Flavour{Simd, Portable} {
			for _, e := range ElemTypes {
				m[KernelName(k.Op, k.Dir, f, e)] = kernelInfo{kernel: k, elem: e, es: elemSize(e), cost: kernelCosts[k], family: familyOf(k, f, e)}
			}
		}
	}
	return m
}()

// infoOf returns the costing facts of a pipeline by host name; a kernel
// outside the registry is costed by the bytes bound to it alone.
func infoOf(name string) kernelInfo {
	if ki, ok := hostNameInfo[name]; ok {
		return ki
	}
	return kernelInfo{es: 4}
}

// dispatchCost is the cost of one dispatch: the kernel's formula over its
// argument struct, or, for a kernel without one (or arguments that are not
// its struct), the bytes of every bound buffer range and no FLOPs.
func dispatchCost(ki kernelInfo, args []Arg) (c Cost, known bool) {
	if ki.cost != nil {
		for _, a := range args {
			if a.Bytes != nil {
				if c, ok := ki.cost(a.Bytes, ki.es); ok {
					return c, true
				}
			}
		}
	}
	for _, a := range args {
		if a.Buf != nil {
			c.Bytes += float64(max(a.Buf.Len()-a.Offset, 0))
		}
	}
	return c, false
}

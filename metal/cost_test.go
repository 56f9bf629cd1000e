package metal

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/shaders"
)

// TestEveryKernelHasCost: each registry kernel has a FLOP/byte formula, so
// the command-buffer policy and the prediction never fall back to bound
// bytes for a kernel of the library.
func TestEveryKernelHasCost(t *testing.T) {
	for _, k := range Kernels {
		assert.NotNil(t, kernelCosts[k], "kernel %s/%s has no cost formula in cost.go", k.Op, k.Dir)
	}
	assert.Len(t, kernelCosts, len(Kernels), "cost.go has formulas for kernels outside the registry")
}

func argBytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// TestKernelCosts checks formulas at the baseline shapes against the
// figures of the shaders' notes, written out here.
func TestKernelCosts(t *testing.T) {
	cost := func(name string, args any, extra ...Arg) Cost {
		t.Helper()
		var b []byte
		switch a := args.(type) {
		case *shaders.GemmArgs:
			b = argBytes(a)
		case *shaders.AttentionArgs:
			b = argBytes(a)
		case *shaders.CEArgs:
			b = argBytes(a)
		case *shaders.EltwiseArgs:
			b = argBytes(a)
		case *shaders.RMSNormArgs:
			b = argBytes(a)
		case *shaders.RMSNormBwdArgs:
			b = argBytes(a)
		case *shaders.AddNormArgs:
			b = argBytes(a)
		case *shaders.ResidMixArgs:
			b = argBytes(a)
		case *shaders.MuonSumsqArgs:
			b = argBytes(a)
		case *shaders.MuonAxpyArgs:
			b = argBytes(a)
		case *shaders.ScalarArgs:
			b = argBytes(a)
		case *shaders.NSArgs:
			b = argBytes(a)
		}
		c, known := dispatchCost(infoOf(name), append(extra, Arg{Bytes: b}))
		require.True(t, known, name)
		return c
	}
	// The MLP's first matmul, (8192, 512)·(1024, 512)ᵀ in bf16:
	// 8.59 GFLOP; x 8.39 MB + w 1.05 MB read, out 16.8 MB written.
	c := cost("gemm_nt_simd_bfloat", &shaders.GemmArgs{M: 8192, N: 1024, K: 512, TransB: 1, Alpha: 1})
	assert.Equal(t, 8589934592.0, c.FLOPs)
	assert.Equal(t, 8388608.0+1048576+16777216, c.Bytes)
	// Its weight gradient accumulates into an F32 (1024, 512): read + write.
	c = cost("gemm_f32_tn_portable_bfloat", &shaders.GemmArgs{M: 1024, N: 512, K: 8192, TransA: 1, Alpha: 1, Beta: 1})
	assert.Equal(t, 8589934592.0, c.FLOPs)
	assert.Equal(t, 16777216.0+8388608+2*2097152, c.Bytes)
	// Split in 2 slices of k (gemmSlice of a (512, 512) weight gradient):
	// the slices write two float partials of 1 MB, the reduction reads
	// them, reads and writes the F32 dw, and adds.
	split := shaders.GemmArgs{M: 512, N: 512, K: 8192, TransA: 1, Alpha: 1, Beta: 1, SliceK: 4096}
	c = cost("gemm_f32_tn_simd_bfloat", &split)
	assert.Equal(t, 2*512*512*8192.0, c.FLOPs)
	assert.Equal(t, 2*8388608.0+2*1048576, c.Bytes)
	c = cost("gemm_f32_reduce_simd_bfloat", &split)
	assert.Equal(t, 4*512*512.0, c.FLOPs)
	assert.Equal(t, 2*1048576.0+2*1048576, c.Bytes)
	// Newton–Schulz's symmetric X·Xᵀ of a batch of 3 (512, 1024) float
	// iterates: 36 of the 64 tiles computed (2·1024 FLOPs per element of
	// them), the full bytes (X read, A written); and a ragged 200×200 A·A
	// with beta·A: tiles of heights 64, 64, 64, 8, (200² + 3·64² + 8²)/2
	// elements computed, A read twice over (a and c), B written.
	xxt := shaders.GemmArgs{M: 512, N: 512, K: 1024, TransB: 1, Alpha: 1, Batch: 3}
	c = cost("gemm_nt_sym_simd_float", &xxt)
	assert.Equal(t, 3*2*36*64*64*1024.0, c.FLOPs)
	assert.Equal(t, 3*(2*512*1024+512*512)*4.0, c.Bytes)
	assert.Equal(t, 3*(2*512*1024+512*512)*4.0, cost("gemm_nt_simd_float", &xxt).Bytes)
	aa := shaders.GemmArgs{M: 200, N: 200, K: 200, Alpha: 2, Beta: -1}
	c = cost("gemm_nn_sym_portable_float", &aa)
	assert.Equal(t, 2*200*(200*200+3*64*64+8*8)/2.0, c.FLOPs)
	assert.Equal(t, 4*200*200*4.0, c.Bytes)
	// Attention forward at B=8, T=1024, H=8, Hkv=4, D=64: 33,587,200
	// causal pairs, 4·D FLOPs each; q, out 8.39 MB, k, v 4.19 MB, lse 262 KB.
	at := &shaders.AttentionArgs{Batch: 8, SeqLen: 1024, Heads: 8, KvHeads: 4, HeadDim: 64}
	c = cost("attention_fwd_simd_bfloat", at)
	assert.Equal(t, 4*64*33587200.0, c.FLOPs)
	assert.Equal(t, 2*8388608.0+2*4194304+262144, c.Bytes)
	c = cost("attention_dkv_simd_bfloat", at)
	assert.Equal(t, 8*64*33587200.0, c.FLOPs)
	// Softcapped cross-entropy backward, N=8192, V=1024 bf16: logits read,
	// dlogits written, targets read.
	c = cost("softcap_ce_bwd_simd_bfloat", &shaders.CEArgs{Rows: 8192, Vocab: 1024})
	assert.Equal(t, 55*8388608.0, c.FLOPs)
	assert.Equal(t, 2*16777216.0+32768, c.Bytes)
	// The fused ops at the baseline (N=8192, C=512, V=1024, bf16) move
	// what their sequences move less the intermediate's round trip.
	const rc = 8192 * 512
	fused := cost("resid_mix_rmsnorm_fwd_simd_bfloat", &shaders.RMSNormArgs{Rows: 8192, Cols: 512}).Bytes
	unfused := cost("resid_mix_fwd_simd_bfloat", &shaders.ResidMixArgs{Rows: 8192, Cols: 512}).Bytes +
		cost("rmsnorm_fwd_simd_bfloat", &shaders.RMSNormArgs{Rows: 8192, Cols: 512}).Bytes
	assert.Equal(t, unfused-2*rc, fused, "resid mix + rmsnorm: mix not read back")
	fused = cost("scaled_add_rmsnorm_fwd_simd_bfloat", &shaders.AddNormArgs{Rows: 8192, Cols: 512, HasS: 1}).Bytes
	assert.Equal(t, 4*2*rc+4*8192+4*512.0, fused)
	fused = cost("rmsnorm_resid_mix_bwd_portable_bfloat", &shaders.RMSNormBwdArgs{Rows: 8192, Cols: 512, HasRes: 1}).Bytes
	unfused = cost("rmsnorm_bwd_portable_bfloat", &shaders.RMSNormBwdArgs{Rows: 8192, Cols: 512, HasRes: 1}).Bytes +
		cost("resid_mix_bwd_portable_bfloat", &shaders.ResidMixArgs{Rows: 8192, Cols: 512}).Bytes
	// The unfused resid_mix_bwd's formula leaves out its partials (the
	// fused one counts them): dm's store and load are the difference.
	assert.Equal(t, unfused-2*2*rc, fused-128*2*512*4, "rmsnorm + resid mix backward: dm not stored")
	c = cost("softcap_ce_fused_simd_bfloat", &shaders.CEArgs{Rows: 8192, Vocab: 1024})
	assert.Equal(t, 2*16777216.0+2*32768, c.Bytes, "softcap CE fused: logits read once")
	// A cast from float to half: 4 bytes in, 2 out.
	c = cost("cast_from_float_simd_half", &shaders.EltwiseArgs{N: 1000})
	assert.Equal(t, 6000.0, c.Bytes)
	c = cost("cast_from_bfloat_simd_float", &shaders.EltwiseArgs{N: 1000})
	assert.Equal(t, 6000.0, c.Bytes)
	// Muon's momentum of a 1024×512 F32 matrix fused with its norm's first
	// pass (64 threadgroups): buf read and written, g read, geff written,
	// 64 float partials; 4 FLOPs of momentum and 2 of the square an
	// element.
	c = cost("muon_momentum_sumsq_portable_float", &shaders.MuonSumsqArgs{N: 524288, Momentum: 0.95, Z: 2, Parts: 64})
	assert.Equal(t, 6*524288.0, c.FLOPs)
	assert.Equal(t, 4*4*524288.0+64*4, c.Bytes)
	// Newton–Schulz's four-per-thread scaling of 3 bf16 512×1024
	// gradients into F32 iterates: 2 bytes read and 4 written an element,
	// one division.
	c = cost("newton_schulz_scale4_simd_bfloat", &shaders.NSArgs{Rows: 512, Cols: 1024, Count: 3})
	assert.Equal(t, 3*524288.0, c.FLOPs)
	assert.Equal(t, 3*524288*6.0, c.Bytes)
	// Its transposing scale_t of a tall matrix costs the same.
	c = cost("newton_schulz_scale_t_portable_bfloat", &shaders.NSArgs{Rows: 1024, Cols: 512, Count: 3})
	assert.Equal(t, 3*524288.0, c.FLOPs)
	assert.Equal(t, 3*524288*6.0, c.Bytes)
	// Muon's update of a 1024×512 F32 weight from its transposed F32
	// iterate: X read, w read and written (12 bytes an element), a
	// multiply and an add; the store and the axpy it replaces move 20.
	c = cost("muon_axpy_t_simd_float", &shaders.MuonAxpyArgs{Rows: 1024, Cols: 512, Z: 3, Alpha: -0.02})
	assert.Equal(t, 2*524288.0, c.FLOPs)
	assert.Equal(t, 12*524288.0, c.Bytes)
	storeAxpy := cost("newton_schulz_store_simd_float", &shaders.NSArgs{Rows: 1024, Cols: 512, Count: 1}).Bytes +
		cost("axpy_simd_float", &shaders.ScalarArgs{N: 524288, Alpha: -0.02}).Bytes
	assert.Equal(t, 20*524288.0, storeAxpy)
}

// TestDispatchCostFallback: a kernel outside the registry, or arguments
// that are not its struct, are costed by the bytes bound to them.
func TestDispatchCostFallback(t *testing.T) {
	buf := &dwBuffer{n: 1000}
	c, known := dispatchCost(infoOf("not_a_kernel"), []Arg{{Buf: buf, Offset: 200}, {Bytes: []byte{1, 2, 3, 4}}})
	assert.False(t, known)
	assert.Equal(t, Cost{0, 800}, c)
	c, known = dispatchCost(infoOf("gemm_nn_simd_float"), []Arg{{Buf: buf}, {Bytes: []byte{1, 2, 3, 4}}})
	assert.False(t, known, "4 bytes are not a GemmArgs")
	assert.Equal(t, Cost{0, 1000}, c)
}

// TestChipPredict checks the model's formula on numbers worked by hand.
func TestChipPredict(t *testing.T) {
	m1, ok := ChipOf("Apple M1")
	require.True(t, ok)
	m3, ok := ChipOf("Apple M3")
	require.True(t, ok)
	// 1 GFLOP, 1 MB: compute-bound on both; bf16 slower on the M1 only.
	c := Cost{FLOPs: 1e9, Bytes: 1e6}
	assert.InEpsilon(t, 1e9/(8*128*2*1.278e9*0.6)+4e-6, m1.Predict(c, false), 1e-12)
	assert.InEpsilon(t, 1.65*1e9/(8*128*2*1.278e9*0.6)+4e-6, m1.Predict(c, true), 1e-12)
	assert.InEpsilon(t, 1e9/(10*128*2*1.398e9*0.6)+4e-6, m3.Predict(c, true), 1e-12)
	// 1 MFLOP, 100 MB: bandwidth-bound.
	c = Cost{FLOPs: 1e6, Bytes: 1e8}
	assert.InEpsilon(t, 1e8/(100e9*0.8)+4e-6, m3.Predict(c, false), 1e-12)
}

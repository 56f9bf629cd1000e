package metal

import "strings"

// Family is a class of kernels that share a structure, and with it the
// fraction of a chip's peaks the predicted-time model (predict.go) lets
// them reach. Every registry kernel, in each flavour and element type,
// belongs to exactly one family (familyOf).
type Family struct {
	Name string
	// Compute is the fraction of the FLOP peak a compute-bound dispatch
	// of the family reaches, Bandwidth the fraction of the memory
	// bandwidth a bandwidth-bound one reaches.
	Compute, Bandwidth float64
	// Structure is what golf's kernel has and lacks against the
	// comparable published kernel; Source the published figure (with
	// where it is published) or, where none was found, the assumption.
	Structure, Source string
}

// The families. Published figures, as percentages of the chip's FLOP
// peak (cores × 128 × 2 × clock, peak.go):
//
//   - MLX's Steel GEMM in bf16 on a 60-core M3 Ultra: 16.4–18.9 TFLOP/s at
//     M = 4,096–15,731, N = 4,096–5,376, K = 2,688–14,336 (ml-explore/mlx
//     issue #3196, https://github.com/ml-explore/mlx/issues/3196), that is
//     76–88% of 21.5 TFLOP/s; in float32 on an M2 Ultra 11.6–20.5 TFLOP/s at batch × 1,024-sized shapes
//     (ml-explore/mlx pull request #424,
//     https://github.com/ml-explore/mlx/pull/424), 43–75% of 27.2.
//   - metal-flash-attention (philipturner/metal-flash-attention, README):
//     GEMM 93.3% of the ALU peak in fp16 and 87.2% in fp32; dense attention
//     (forward) 90.5% in an earlier version of its README. No backward
//     figure was found in a citable form.
//
// Nothing citable was found for the sustained bandwidth of streaming
// kernels on Apple GPUs: the bandwidth fractions are assumptions, graded
// by the width of the kernels' loads.
var (
	famGEMM16 = &Family{"gemm simd, 16-bit operands", 0.70, 0.80,
		"has: tiles staged in the compute dtype, double-buffered (each k-step's 16-byte device loads issued before the previous step's MMAs, one barrier per k-step, 12 KB of threadgroup memory), one 16-byte device load per operand per thread per k-step on the aligned fast path, transposes as compile-time variants, unguarded MMAs on interior tiles, the epilogue from registers (each lane's two elements through thread_elements(), alpha/beta and one rounding, one 4-byte store per pair), split-K for the weight gradients; lacks: threadgroup swizzling for cache locality, tiles tuned per shape, a measurement on hardware",
		"MLX Steel bf16 GEMM 76–88% on a 60-core M3 Ultra (github.com/ml-explore/mlx/issues/3196); metal-flash-attention fp16 GEMM 93.3% (github.com/philipturner/metal-flash-attention README); 0.70 assumed: below MLX's 76% low end for the short K = 512 of the activations' products and the missing swizzle"}
	famGEMM32 = &Family{"gemm simd, float (Newton–Schulz)", 0.55, 0.80,
		"has: the same double-buffered tiles, two 16-byte loads per operand per k-step, compile-time transposes, the batched grid (one dispatch per product for all matrices of a shape), the register epilogue, X·Xᵀ and A·A as symmetric products (only the tiles on and above the diagonal computed, each off-diagonal tile stored twice: counted in the FLOPs, not in the efficiency); lacks: float staging at half the bytes per fragment, large grids (36 threadgroups per 512² symmetric product), 24 KB of threadgroup memory per threadgroup, which limits occupancy",
		"metal-flash-attention fp32 GEMM 87.2% (github.com/philipturner/metal-flash-attention README); MLX float32 GEMM 43–75% on an M2 Ultra (github.com/ml-explore/mlx/pull/424); 0.55 assumed for small batched products"}
	famGEMMPortable = &Family{"gemm portable", 0.25, 0.80,
		"scalar float multiply-adds from float threadgroup tiles, 4×4 outputs per thread, no simdgroup_matrix",
		"no published figure for a scalar tiled GEMM on Apple GPUs found; 0.25 assumed"}
	famAttnFwd = &Family{"attention forward simd", 0.65, 0.80,
		"has: K/V tiles double-buffered in the 16-bit instantiations (the next tile's 16-byte loads issued before the current tile's MMAs, one barrier per tile, 18.4 KB of threadgroup memory in bf16 at D = 64), the head dim a compile-time constant (64 and 128 instantiations), K/V tiles staged in the compute dtype by one unchecked 16-byte load per 8 elements (shifts and masks, no division), 16 query rows per simdgroup so each K and V fragment feeds two MMAs, Q, O, S and P in registers (the softmax on each lane's thread_elements(), a row's max and sum over its four lanes by two simd_shuffle_xor, P in place of S), the causal mask only on tiles the diagonal crosses (tiles above it skipped per simdgroup), a lazy rescale (O rescaled element-wise only when a row max grows by more than 2^8; no diagonal-matrix product), the epilogue from registers (vec<T, 2> stores); lacks: key tiles larger than 32 (16 at D = 128), 128-bit fragment layouts of metal-flash-attention; P enters P·V as a float operand (float × T products, not rounded to T)",
		"metal-flash-attention dense attention 90.5% (github.com/philipturner/metal-flash-attention, an earlier version of its README); 0.65 assumed: 0.60 (the middle of the 0.55–0.65 the scores-in-registers structure could justify with single-buffered tiles) and 0.05 for the double buffering, as the GEMM's rose with its own; tiles of 32 keys still keep it well below the published kernel"}
	famAttnFwd32 = &Family{"attention forward simd, float", 0.60, 0.80,
		"the 16-bit forward's structure with its K/V tiles staged one at a time (two barriers per tile: double-buffered float tiles would pass 32 KB)",
		"as the 16-bit forward; 0.60 assumed, without the double buffering's 0.05"}
	famAttnDq = &Family{"attention backward dQ simd", 0.50, 0.80,
		"has: the forward's compile-time head dim, 16-byte staging in the compute dtype, diagonal-only masking and two MMAs per K/V fragment; 64×(16 or 8) tiles on 4 simdgroups in 4.6 KB (bf16) of threadgroup memory; S, dP and dS in registers (P and dS computed on each lane's thread_elements(), dS in place of dP as the float operand of dS·K), dq stored from registers; lacks: double buffering; holds Q, dout and the dQ accumulator in registers (high register pressure at D = 128, unverified on hardware); S and dP recomputed (as in dK/dV)",
		"no backward figure of metal-flash-attention found in a citable form; 0.50 assumed, the middle of 0.45–0.55 for a kernel of this structure (it was the low end while the scores went through threadgroup memory three times a tile)"}
	famAttnDkv = &Family{"attention backward dK/dV simd", 0.55, 0.80,
		"as dQ, and double-buffered in the 16-bit instantiations (each step's Q, dout, lse and δ staged during the previous step, one barrier per step, 9.5 KB in bf16): 64 key rows on 4 simdgroups, K, V and both accumulators in registers, Pᵀ and dSᵀ in registers (in place of Sᵀ and dPᵀ), Q/dout tiles of 16 (or 8) rows in 4.7 KB (bf16) of threadgroup memory, P and dP recomputed, the mask on diagonal tiles and the sequence's last tile only, dk and dv stored from registers; dkv_ds also stores dS (one float store per element a lane owns, counted in its bytes), which makes the dQ kernel a 2·D-FLOP product, and at D = 64 and 128 computes each staged query tile's δ from dout and out (one 16-byte load of each per thread and tile, the δ pass's in-order lane sum; its FLOPs and out's bytes counted), so the backward has no δ pass",
		"no backward figure of metal-flash-attention found in a citable form; 0.55 assumed: 0.50 as the recomputing dQ, and 0.05 for the double buffering (the δ lane sums assumed hidden behind the MMAs, as the staging is)"}
	famAttnDkv32 = &Family{"attention backward dK/dV simd, float", 0.50, 0.80,
		"the 16-bit kernel's structure with one Q/dout tile staged at a time (two barriers per step)",
		"as the 16-bit kernel; 0.50 assumed, without the double buffering's 0.05"}
	famAttnDqDS = &Family{"attention backward dQ from stored dS simd", 0.60, 0.80,
		"has: the forward's K tiles (32 keys at D = 64) staged in the compute dtype by 16-byte loads, double-buffered in the 16-bit instantiations (one barrier per tile, 9.2 KB in bf16), each lane's two dS elements of every 8×8 block loaded straight into thread_elements() (one 8-byte load), two MMAs per K fragment, the diagonal mask by select on diagonal tiles only, dq stored from registers, no softmax work; lacks: dS through threadgroup memory (each load's latency is the lane's own), dS a float operand (float × T products)",
		"no published figure for this kernel; 0.60 assumed: 0.55, as the float Newton–Schulz GEMMs (a float operand), and 0.05 for the double buffering"}
	famAttnDqDS32 = &Family{"attention backward dQ from stored dS simd, float", 0.55, 0.80,
		"the 16-bit kernel's structure with one K tile staged at a time (two barriers per tile)",
		"as the 16-bit kernel; 0.55 assumed, without the double buffering's 0.05"}
	famAttnPortable = &Family{"attention portable", 0.10, 0.80,
		"scalar dot products from threadgroup tiles, no simdgroup_matrix",
		"no published figure; 0.10 assumed"}
	famAttnDelta = &Family{"attention delta", 0.30, 0.65,
		"the δ pass where dK/dV does not compute δ itself (the recomputing path, other head dims, the portable flavour); simd flavour at D = 64 and 128: one 16-byte load of dout and of out per thread, a row's 8–32 threads consecutive (coalesced), the sum carried through the row's lanes in order; other head dims and the portable flavour: one thread per (row, head)",
		"no published figure; 65% of the bandwidth assumed (as the scalar element-wise kernels': the serial in-order sum through the lanes costs latency)"}
	famRowsVec = &Family{"row kernels, 4 per thread (norms, mixes, scaled adds, q/k RoPE, their fusions)", 0.30, 0.80,
		"four consecutive elements per thread with one vector load or store per tensor (8 bytes in half and bfloat, 16 in float; golf_rows.h) where every tensor starts on a 4-element boundary and the row width is a multiple of 4 (the baseline's), element by element otherwise; RMSNorm's backward and the fused norms one threadgroup per row of C/4 threads (two passes per row, the second assumed to hit the cache), the backward column sums one thread per 4-column chunk over row blocks; q/k RMSNorm + RoPE one team of 8 threads per head, 4 rotary pairs per thread (two vectors per tensor), the head's sums by simd_shuffle_xor within the team",
		"no citable figure for Apple GPUs found; 80% of the bandwidth assumed, as for the 4-per-thread element-wise kernels"}
	famRows = &Family{"row kernels, scalar (RMSNorm forward, cross-entropy, embedding)", 0.30, 0.60,
		"scalar 2-byte loads: the unfused RMSNorm forward in 4-element chunks per thread read element by element (its buffer slots are fixed by the emulator's tests; the model's other forward norms are the fused, vectorised kernels), the cross-entropy and the embedding one element per thread; RMSNorm and the cross-entropy make two passes per row (the second assumed to hit the cache)",
		"no citable figure for Apple GPUs found; 60% of the bandwidth assumed for scalar 2-byte loads"}
	famVector = &Family{"element-wise, 4 per thread", 0.30, 0.80,
		"four elements per thread with vector loads and stores (relu_sq fwd4/bwd4; zero, the casts, scale, axpy, Adam, Muon's momentum, alone or fused with the first pass of Newton–Schulz's norm (a grid-stride over 4-element chunks, each threadgroup's sum of squares by simd_sum or a threadgroup tree), Newton–Schulz's untransposed scale4 and split-K's sum of slices, where every tensor starts on a 4-element boundary, element by element otherwise; Newton–Schulz's transposing scale_t and Muon's transposed weight update axpy_t a 4×4 block per thread, one vector per block row where the sides are multiples of 4 and the tensors start on a 4-element boundary)",
		"no citable figure for Apple GPUs found; 80% of the bandwidth assumed (copy benchmarks of unified memory are commonly quoted at 80–90%)"}
	famEltwise = &Family{"element-wise, scalar (relu_sq unaligned, Newton–Schulz store)", 0.30, 0.65,
		"one element per thread, scalar loads (relu_sq's fwd/bwd for tensors off a 4-element boundary; Newton–Schulz's store, dispatched for a non-F32 output, a tall matrix outside Muon's update, or no iteration)",
		"no citable figure for Apple GPUs found; 65% of the bandwidth assumed"}
	famReduce = &Family{"reductions", 0.30, 0.50,
		"two-stage sums, partials per threadgroup then a final pass (reduce; Newton–Schulz's sum of squares, 4-element chunks per thread with vector loads where aligned, and its norm), the column partials of the ds, dmix and dgain kernels; small grids",
		"no citable figure for Apple GPUs found; 50% of the bandwidth assumed"}
)

// Families lists every family, in the order the prediction prints them.
var Families = []*Family{famGEMM16, famGEMM32, famGEMMPortable, famAttnFwd, famAttnFwd32, famAttnDq, famAttnDqDS, famAttnDqDS32, famAttnDkv, famAttnDkv32, famAttnPortable,
	famAttnDelta, famRowsVec, famRows, famVector, famEltwise, famReduce}

// familyOf is the family of kernel k in flavour f and element type elem;
// nil for a kernel outside the registry (costed by its bytes at the
// element-wise family's bandwidth).
func familyOf(k Kernel, f Flavour, elem string) *Family {
	switch {
	case k.Op == "gemm" || k.Op == "gemm_f32":
		switch {
		case k.Dir == "reduce":
			// Split-K's sum of slices: four outputs per thread, one
			// vector per slice (gemm_reduce).
			return famVector
		case f == Portable:
			return famGEMMPortable
		case elem == "float":
			return famGEMM32
		}
		return famGEMM16
	case k.Op == "attention":
		switch {
		case k.Dir == "delta":
			return famAttnDelta
		case f == Portable:
			return famAttnPortable
		case k.Dir == "dq":
			return famAttnDq
		}
		// The 16-bit kernels double-buffer their tiles, the float ones not
		// (attention.metal, attention_db).
		f32 := elem == "float"
		switch {
		case k.Dir == "fwd" && f32:
			return famAttnFwd32
		case k.Dir == "fwd":
			return famAttnFwd
		case k.Dir == "dq_ds" && f32:
			return famAttnDqDS32
		case k.Dir == "dq_ds":
			return famAttnDqDS
		case f32:
			return famAttnDkv32
		}
		return famAttnDkv
	case k.Op == "reduce", k.Op == "newton_schulz" && (k.Dir == "sumsq" || k.Dir == "norm"),
		k.Dir == "ds", k.Dir == "dmix", k.Dir == "dgain":
		return famReduce
	case k.Op == "relu_sq" && strings.HasSuffix(k.Dir, "4"), k.Op == "zero", k.Op == "axpy", k.Op == "scale",
		k.Op == "adam", k.Op == "muon", k.Op == "newton_schulz" && (k.Dir == "scale4" || k.Dir == "scale_t"), strings.HasPrefix(k.Op, "cast_from_"):
		return famVector
	case k.Op == "relu_sq", k.Op == "newton_schulz":
		return famEltwise
	case k.Op == "rmsnorm" && k.Dir == "fwd":
		return famRows
	case k.Op == "rmsnorm", k.Op == "resid_mix", k.Op == "scaled_add", k.Op == "resid_mix_rmsnorm",
		k.Op == "scaled_add_rmsnorm", k.Op == "rmsnorm_resid_mix", k.Op == "qk_norm_rope", k.Op == "qk_norm_rope_pair":
		return famRowsVec
	case k.Op == "":
		return nil
	}
	return famRows
}

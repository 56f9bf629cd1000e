// newton_schulz: the element-wise and reduction kernels of Muon's quintic
// Newton–Schulz orthogonalisation of g (R, C); its matrix products are the
// gemm kernels of linear.metal (float → float). The host
// (metal/newton_schulz.go) runs, with r = min(R, C), c = max(R, C):
//
//	sumsq:  partial[p] = Σ g² over the p-th threadgroup's grid-stride
//	        share of g's 4-element chunks
//	norm:   norm[0] = sqrt(Σp partial[p]) + NSEps          (one threadgroup)
//	scale4: X = g/norm[0] as (r, c) float, 4 elements per thread (R ≤ C)
//	scale_t: X = gᵀ/norm[0], a 4×4 block per thread (R > C: transposes)
//	        steps × (A = X·Xᵀ; B = NSC·A·A + NSB·A; X = B·X + NSA·X)  (gemm)
//	store:  out = X (transposed back when R > C), rounded to out's dtype
//
// Muon's update skips sumsq: muon_momentum_sumsq (muon.metal) writes the
// same partials, summed over the same chunks in the same order, as it
// stores the momentum-corrected g; for R > C it skips the store too,
// muon_axpy_t (muon.metal) updating each weight from the transposed X.
//
// Every kernel runs NSArgs.count matrices of the same shape side by side,
// the grid's z indexing the matrix: matrix z of g, X and out starts z·R·C
// elements in, its partials z·parts and its norm at norm[z]. Each matrix is
// computed exactly as it is alone (count = 1): the same threads visit the
// same elements in the same order. sumsq, scale4 and scale_t move whole
// chunks as vectors where the host's aligned argument is 1 (every matrix
// of g, and X, on a 4-element boundary, for scale_t R and C multiples of
// 4 too; golf_rows.h), else element by element, with the same bits.
//
// The norm never leaves the device (no host sync). Every sum has a fixed
// order (per-thread strides, then simd_sum and an in-order sum of the
// simdgroup sums, or a threadgroup-memory tree), so the result is
// deterministic. T is g's dtype (sumsq, scale4, scale_t) or out's (store);
// norm reads only float partials (T unused: every kernel exists in every
// dtype). NSEps = 1e-7 is backend.NSEps.
//
// Baseline (a 512×512 F32 gradient, n = 262,144 elements, 64 partials; a
// batch of count matrices is count times each figure):
//	sumsq  1.05 MB read, 0.5 MFLOP                        10.5 µs
//	       (not dispatched by Muon's update: fused into the momentum)
//	norm   256 B (dispatch-bound)                         ~0 µs
//	scale4 1.05 MB read + 1.05 MB written                 21 µs
//	       (scale_t, for a tall g, the same)
//	store  1.05 MB read + 1.05 MB written                 21 µs
//	       (skipped for an F32 out with R ≤ C: the last product writes
//	       out; and by Muon's update for R > C: muon_axpy_t reads X)
// against 1.12 ms for the 15 products of five steps: the element-wise
// passes are ~5 % of the call. Threads: 256 per threadgroup everywhere;
// threadgroup memory 32 B (simd) or 1 KB (portable) for the reductions,
// none for scale4, scale_t and store.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_rows.h"
using namespace metal;

#define NEWTON_SCHULZ_THREADS 256
#define NEWTON_SCHULZ_EPS 1e-7f

// newton_schulz_sumsq_part is thread tid of threadgroup group (of
// groups)'s share of Σ x[i]² over the n elements of x: its 4-element
// chunks c = group·256 + tid + s·(groups·256), s = 0, 1, … (chunk c is
// elements 4c .. 4c+3, the last possibly short), in order, the elements
// of a chunk in order; a chunk is one vector load where al (golf_rows.h).
// muon_momentum_sumsq (muon.metal) sums the same chunks in the same order.
template <typename T>
METAL_FUNC float newton_schulz_sumsq_part(device const T* x, uint n, uint group, uint groups, uint tid, bool al) {
  const uint chunks = (n + golf_vw - 1) / golf_vw;
  float s = 0.0f;
  for (uint c = group * NEWTON_SCHULZ_THREADS + tid; c < chunks; c += groups * NEWTON_SCHULZ_THREADS) {
    const uint i = golf_vw * c, len = golf_chunk_len(i, n);
    s = rmsnorm_sq_add4(s, golf_loadf4(x, i, len, al), len);
  }
  return s;
}

// newton_schulz_sumsq_simd: partial[z·groups + group] = Σ g[z·n + i]² over
// the group's chunks (newton_schulz_sumsq_part), n = R·C; simd_sum, then
// the 8 simdgroup sums in order. Grid: (groups, 1, count) threadgroups of
// 256 threads.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(NEWTON_SCHULZ_THREADS)]] void newton_schulz_sumsq_simd(
    device const T* g [[buffer(0)]],           // (count, n)
    device float* partial [[buffer(1)]],       // (count, groups)
    constant NSArgs& args [[buffer(2)]],
    constant uint& aligned [[buffer(3)]],      // 1: every matrix's chunks move as vectors
    uint3 group3 [[threadgroup_position_in_grid]],
    uint3 groups3 [[threadgroups_per_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[NEWTON_SCHULZ_THREADS / 32];
  const uint n = args.rows * args.cols, group = group3.x, groups = groups3.x;
  const float s = newton_schulz_sumsq_part(g + ulong(group3.z) * n, n, group, groups, tid, aligned != 0);
  const float total = golf_row_sum_simd(s, sums, lane, sg, NEWTON_SCHULZ_THREADS);
  if (tid == 0) {
    partial[group3.z * groups + group] = total;
  }
}

// newton_schulz_sumsq_portable: as newton_schulz_sumsq_simd, with a
// threadgroup-memory tree instead of simd_sum.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(NEWTON_SCHULZ_THREADS)]] void newton_schulz_sumsq_portable(
    device const T* g [[buffer(0)]],           // (count, n)
    device float* partial [[buffer(1)]],       // (count, groups)
    constant NSArgs& args [[buffer(2)]],
    constant uint& aligned [[buffer(3)]],      // 1: every matrix's chunks move as vectors
    uint3 group3 [[threadgroup_position_in_grid]],
    uint3 groups3 [[threadgroups_per_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float sums[NEWTON_SCHULZ_THREADS];
  const uint n = args.rows * args.cols, group = group3.x, groups = groups3.x;
  const float s = newton_schulz_sumsq_part(g + ulong(group3.z) * n, n, group, groups, tid, aligned != 0);
  const float total = golf_row_sum_portable(s, sums, tid, NEWTON_SCHULZ_THREADS);
  if (tid == 0) {
    partial[group3.z * groups + group] = total;
  }
}

// newton_schulz_norm_simd: norm[z] = sqrt(Σ partial[z·parts + 0..parts)) +
// NSEps. Grid: (1, 1, count) threadgroups of 256 threads.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(NEWTON_SCHULZ_THREADS)]] void newton_schulz_norm_simd(
    device const float* partial [[buffer(0)]], // (count, parts)
    device float* norm [[buffer(1)]],          // (count)
    constant NSArgs& args [[buffer(2)]],
    uint3 group3 [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[NEWTON_SCHULZ_THREADS / 32];
  device const float* pz = partial + group3.z * args.parts;
  float s = 0.0f;
  for (uint i = tid; i < args.parts; i += NEWTON_SCHULZ_THREADS) {
    s += pz[i];
  }
  s = simd_sum(s);
  if (lane == 0) {
    sums[sg] = s;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    float total = 0.0f;
    for (uint k = 0; k < NEWTON_SCHULZ_THREADS / 32; k++) {
      total += sums[k];
    }
    norm[group3.z] = sqrt(total) + NEWTON_SCHULZ_EPS;
  }
}

// newton_schulz_norm_portable: as newton_schulz_norm_simd, with a
// threadgroup-memory tree.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(NEWTON_SCHULZ_THREADS)]] void newton_schulz_norm_portable(
    device const float* partial [[buffer(0)]], // (count, parts)
    device float* norm [[buffer(1)]],          // (count)
    constant NSArgs& args [[buffer(2)]],
    uint3 group3 [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float sums[NEWTON_SCHULZ_THREADS];
  device const float* pz = partial + group3.z * args.parts;
  float s = 0.0f;
  for (uint i = tid; i < args.parts; i += NEWTON_SCHULZ_THREADS) {
    s += pz[i];
  }
  sums[tid] = s;
  golf_tree_sum(sums, tid, NEWTON_SCHULZ_THREADS);
  if (tid == 0) {
    norm[group3.z] = sqrt(sums[0]) + NEWTON_SCHULZ_EPS;
  }
}

// newton_schulz_scale_t: newton_schulz_scale4 for R > C, transposing: X
// (C, R) = gᵀ/norm[z], X[j, i] = g[i, j]/norm[z], the same division per
// element. One thread per 4×4 block, thread t taking rows 4·(t mod
// ⌈R/4⌉) + 0..3 of g and columns 4·(t div ⌈R/4⌉) + 0..3 (the last block
// of a side possibly short; the grid's x covers ⌈R/4⌉·⌈C/4⌉ threads, its
// z the matrices): it reads the block's four rows of g and writes its four
// rows of X; one vector load or store per row where the host's aligned
// argument is 1 (R and C multiples of 4, g and X on a 4-element
// boundary), else element by element, with the same bits. NSArgs rows,
// cols = R, C (a, b, c unused).
template <typename T, bool Simd>
[[kernel]] void newton_schulz_scale_t(
    device const T* g [[buffer(0)]],           // (count, R, C)
    device const float* norm [[buffer(1)]],    // (count)
    device float* x [[buffer(2)]],             // (count, C, R)
    constant NSArgs& args [[buffer(3)]],
    constant uint& aligned [[buffer(4)]],      // 1: every row of a block moves as one vector
    uint3 pos [[thread_position_in_grid]]) {
  const uint R = args.rows, C = args.cols, rb = (R + golf_vw - 1) / golf_vw;
  const uint i0 = golf_vw * (pos.x % rb), j0 = golf_vw * (pos.x / rb);
  if (j0 >= C) {
    return;
  }
  const uint ni = golf_chunk_len(i0, R), nj = golf_chunk_len(j0, C);
  const bool al = aligned != 0;
  const ulong base = ulong(pos.z) * (ulong(R) * C);
  const float nz = norm[pos.z];
  float4 gr[golf_vw];  // gr[b][a] = g[i0 + b, j0 + a]
  for (uint b = 0; b < golf_vw; b++) {
    gr[b] = b < ni ? golf_loadf4(g, base + ulong(i0 + b) * C + j0, nj, al) : float4(0.0f);
  }
  for (uint a = 0; a < nj; a++) {
    float4 v;
    for (uint b = 0; b < golf_vw; b++) {
      v[b] = gr[b][a] / nz;
    }
    golf_store4(x, base + ulong(j0 + a) * R + i0, ni, v, al);
  }
}

// newton_schulz_scale4: X = g/norm[z] as float (R, C) for R ≤ C (no
// transpose), four consecutive elements of X per thread (chunk t of
// matrix z: elements 4t .. 4t+3, the last possibly short; the grid's x
// covers ceil(R·C/4) threads, its z the matrices), the same division per
// element; one vector load and store per chunk where the host's aligned
// argument is 1 (g and X on a 4-element boundary and, for count > 1, R·C
// a multiple of 4), else element by element, with the same bits.
template <typename T, bool Simd>
[[kernel]] void newton_schulz_scale4(
    device const T* g [[buffer(0)]],           // (count, R, C)
    device const float* norm [[buffer(1)]],    // (count)
    device float* x [[buffer(2)]],             // (count, R, C)
    constant NSArgs& args [[buffer(3)]],
    constant uint& aligned [[buffer(4)]],      // 1: every chunk moves as one vector
    uint3 pos [[thread_position_in_grid]]) {
  const uint rc = args.rows * args.cols, i = golf_vw * pos.x;
  if (i >= rc) {
    return;
  }
  const uint n = golf_chunk_len(i, rc);
  const bool al = aligned != 0;
  const ulong base = ulong(pos.z) * rc;
  const float nz = norm[pos.z];
  float4 v = golf_loadf4(g, base + i, n, al);
  for (uint k = 0; k < golf_vw; k++) {
    v[k] = v[k] / nz;
  }
  golf_store4(x, base + i, n, v, al);
}

// newton_schulz_store: out = X, transposed back when R > C, one thread per
// element of out (the grid's x) and matrix (its z). NSArgs rows, cols = R, C.
template <typename T, bool Simd>
[[kernel]] void newton_schulz_store(
    device const float* x [[buffer(0)]],       // (count, r, c)
    device T* out [[buffer(1)]],               // (count, R, C)
    constant NSArgs& args [[buffer(2)]],
    uint3 pos [[thread_position_in_grid]]) {
  const uint R = args.rows, C = args.cols, idx = pos.x;
  if (idx >= R * C) {
    return;
  }
  uint src = idx;
  if (R > C) {
    const uint i = idx / C, j = idx % C;  // out (R, C) from X (C, R)
    src = j * R + i;
  }
  const ulong base = ulong(pos.z) * (R * C);
  out[base + idx] = static_cast<T>(x[base + src]);
}

#define instantiate_newton_schulz(tname, T)                                                      \
  instantiate_kernel("newton_schulz_sumsq_simd_" #tname, newton_schulz_sumsq_simd, T)            \
  instantiate_kernel("newton_schulz_sumsq_portable_" #tname, newton_schulz_sumsq_portable, T)    \
  instantiate_kernel("newton_schulz_norm_simd_" #tname, newton_schulz_norm_simd, T)              \
  instantiate_kernel("newton_schulz_norm_portable_" #tname, newton_schulz_norm_portable, T)      \
  instantiate_kernel("newton_schulz_scale_t_simd_" #tname, newton_schulz_scale_t, T, true)       \
  instantiate_kernel("newton_schulz_scale_t_portable_" #tname, newton_schulz_scale_t, T, false)  \
  instantiate_kernel("newton_schulz_scale4_simd_" #tname, newton_schulz_scale4, T, true)         \
  instantiate_kernel("newton_schulz_scale4_portable_" #tname, newton_schulz_scale4, T, false)    \
  instantiate_kernel("newton_schulz_store_simd_" #tname, newton_schulz_store, T, true)           \
  instantiate_kernel("newton_schulz_store_portable_" #tname, newton_schulz_store, T, false)

instantiate_newton_schulz(float, float)
instantiate_newton_schulz(half, half)
instantiate_newton_schulz(bfloat, bfloat)

// newton_schulz: the element-wise and reduction kernels of Muon's quintic
// Newton–Schulz orthogonalisation of g (R, C); its matrix products are the
// gemm kernels of linear.metal (float → float). The host
// (metal/newton_schulz.go) runs, with r = min(R, C), c = max(R, C):
//
//	sumsq:  partial[p] = Σ g² over the p-th grid-stride share of g
//	norm:   norm[0] = sqrt(Σp partial[p]) + NSEps          (one threadgroup)
//	scale:  X = g/norm[0] as (r, c) float (X = gᵀ/norm[0] when R > C)
//	        steps × (A = X·Xᵀ; B = NSC·A·A + NSB·A; X = B·X + NSA·X)  (gemm)
//	store:  out = X (transposed back when R > C), rounded to out's dtype
//
// The norm never leaves the device (no host sync). Every sum has a fixed
// order (per-thread strides, then simd_sum and an in-order sum of the
// simdgroup sums, or a threadgroup-memory tree), so the result is
// deterministic. T is g's dtype (sumsq, scale) or out's (store); norm reads
// only float partials (T unused: every kernel exists in every dtype).
// NSEps = 1e-7 is backend.NSEps.
//
// Baseline (a 512×512 F32 gradient, n = 262,144 elements, 64 partials):
//	sumsq  1.05 MB read, 0.5 MFLOP                        10.5 µs
//	norm   256 B (dispatch-bound)                         ~0 µs
//	scale  1.05 MB read + 1.05 MB written                 21 µs
//	store  1.05 MB read + 1.05 MB written                 21 µs
//	       (skipped for an F32 out with R ≤ C: the last product writes out)
// against 1.12 ms for the 15 products of five steps: the element-wise
// passes are ~5 % of the call. Threads: 256 per threadgroup everywhere;
// threadgroup memory 32 B (simd) or 1 KB (portable) for the reductions,
// none for scale and store.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_reduce.h"
using namespace metal;

#define NEWTON_SCHULZ_THREADS 256
#define NEWTON_SCHULZ_EPS 1e-7f

// newton_schulz_sumsq_simd: partial[group] = Σ g[i]² over
// i = group·256 + tid + s·(groups·256); ReduceArgs.n = R·C. Grid: groups
// threadgroups of 256 threads.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(NEWTON_SCHULZ_THREADS)]] void newton_schulz_sumsq_simd(
    device const T* g [[buffer(0)]],           // (n)
    device float* partial [[buffer(1)]],       // (groups)
    constant ReduceArgs& args [[buffer(2)]],
    uint group [[threadgroup_position_in_grid]],
    uint groups [[threadgroups_per_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[NEWTON_SCHULZ_THREADS / 32];
  float s = 0.0f;
  for (uint i = group * NEWTON_SCHULZ_THREADS + tid; i < args.n; i += groups * NEWTON_SCHULZ_THREADS) {
    const float v = static_cast<float>(g[i]);
    s += v * v;
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
    partial[group] = total;
  }
}

// newton_schulz_sumsq_portable: as newton_schulz_sumsq_simd, with a
// threadgroup-memory tree instead of simd_sum.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(NEWTON_SCHULZ_THREADS)]] void newton_schulz_sumsq_portable(
    device const T* g [[buffer(0)]],           // (n)
    device float* partial [[buffer(1)]],       // (groups)
    constant ReduceArgs& args [[buffer(2)]],
    uint group [[threadgroup_position_in_grid]],
    uint groups [[threadgroups_per_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float sums[NEWTON_SCHULZ_THREADS];
  float s = 0.0f;
  for (uint i = group * NEWTON_SCHULZ_THREADS + tid; i < args.n; i += groups * NEWTON_SCHULZ_THREADS) {
    const float v = static_cast<float>(g[i]);
    s += v * v;
  }
  sums[tid] = s;
  golf_tree_sum(sums, tid, NEWTON_SCHULZ_THREADS);
  if (tid == 0) {
    partial[group] = sums[0];
  }
}

// newton_schulz_norm_simd: norm[0] = sqrt(Σ partial[0..n)) + NSEps, with
// ReduceArgs.n the number of partials. One threadgroup of 256 threads.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(NEWTON_SCHULZ_THREADS)]] void newton_schulz_norm_simd(
    device const float* partial [[buffer(0)]], // (n)
    device float* norm [[buffer(1)]],          // (1)
    constant ReduceArgs& args [[buffer(2)]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[NEWTON_SCHULZ_THREADS / 32];
  float s = 0.0f;
  for (uint i = tid; i < args.n; i += NEWTON_SCHULZ_THREADS) {
    s += partial[i];
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
    norm[0] = sqrt(total) + NEWTON_SCHULZ_EPS;
  }
}

// newton_schulz_norm_portable: as newton_schulz_norm_simd, with a
// threadgroup-memory tree.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(NEWTON_SCHULZ_THREADS)]] void newton_schulz_norm_portable(
    device const float* partial [[buffer(0)]], // (n)
    device float* norm [[buffer(1)]],          // (1)
    constant ReduceArgs& args [[buffer(2)]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float sums[NEWTON_SCHULZ_THREADS];
  float s = 0.0f;
  for (uint i = tid; i < args.n; i += NEWTON_SCHULZ_THREADS) {
    s += partial[i];
  }
  sums[tid] = s;
  golf_tree_sum(sums, tid, NEWTON_SCHULZ_THREADS);
  if (tid == 0) {
    norm[0] = sqrt(sums[0]) + NEWTON_SCHULZ_EPS;
  }
}

// newton_schulz_scale: X = g/norm[0] as float (r, c), one thread per
// element of X; when R > C, X[i, j] = g[j, i] (X is (C, R)). NSArgs rows,
// cols = R, C (a, b, c unused).
template <typename T, bool Simd>
[[kernel]] void newton_schulz_scale(
    device const T* g [[buffer(0)]],           // (R, C)
    device const float* norm [[buffer(1)]],    // (1)
    device float* x [[buffer(2)]],             // (r, c)
    constant NSArgs& args [[buffer(3)]],
    uint idx [[thread_position_in_grid]]) {
  const uint R = args.rows, C = args.cols;
  if (idx >= R * C) {
    return;
  }
  uint src = idx;
  if (R > C) {
    const uint i = idx / R, j = idx % R;  // X (C, R)
    src = j * C + i;
  }
  x[idx] = static_cast<float>(g[src]) / norm[0];
}

// newton_schulz_store: out = X, transposed back when R > C, one thread per
// element of out. NSArgs rows, cols = R, C.
template <typename T, bool Simd>
[[kernel]] void newton_schulz_store(
    device const float* x [[buffer(0)]],       // (r, c)
    device T* out [[buffer(1)]],               // (R, C)
    constant NSArgs& args [[buffer(2)]],
    uint idx [[thread_position_in_grid]]) {
  const uint R = args.rows, C = args.cols;
  if (idx >= R * C) {
    return;
  }
  uint src = idx;
  if (R > C) {
    const uint i = idx / C, j = idx % C;  // out (R, C) from X (C, R)
    src = j * R + i;
  }
  out[idx] = static_cast<T>(x[src]);
}

#define instantiate_newton_schulz(tname, T)                                                      \
  instantiate_kernel("newton_schulz_sumsq_simd_" #tname, newton_schulz_sumsq_simd, T)            \
  instantiate_kernel("newton_schulz_sumsq_portable_" #tname, newton_schulz_sumsq_portable, T)    \
  instantiate_kernel("newton_schulz_norm_simd_" #tname, newton_schulz_norm_simd, T)              \
  instantiate_kernel("newton_schulz_norm_portable_" #tname, newton_schulz_norm_portable, T)      \
  instantiate_kernel("newton_schulz_scale_simd_" #tname, newton_schulz_scale, T, true)           \
  instantiate_kernel("newton_schulz_scale_portable_" #tname, newton_schulz_scale, T, false)      \
  instantiate_kernel("newton_schulz_store_simd_" #tname, newton_schulz_store, T, true)           \
  instantiate_kernel("newton_schulz_store_portable_" #tname, newton_schulz_store, T, false)

instantiate_newton_schulz(float, float)
instantiate_newton_schulz(half, half)
instantiate_newton_schulz(bfloat, bfloat)

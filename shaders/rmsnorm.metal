// rmsnorm: RMSNorm without a weight, forward and backward.
//
//	rstd[n]  = 1/sqrt(mean_c x[n,c]² + eps)                          (forward)
//	out[n,c] = x[n,c]·rstd[n]
//	dx[n,c]  = dres[n,c] + rstd[n]·(dout[n,c] − x̂[n,c]·mean_c'(dout·x̂))  (backward, x̂ = x·rstd)
//	x, out, dout, dres, dx T (N, C); rstd float (N)
//
// One threadgroup per row (grid = N threadgroups, any threadgroup size up
// to 1024); each thread strides over the row's 4-element chunks
// (golf_rows.h). The backward moves a chunk with one vector load or store
// per tensor where the host's aligned argument is 1, element by element
// else (the same bits); the forward always element by element: its
// buffer slots are fixed (internal/kemu/msl's tests dispatch it as a
// fixture), so it has no aligned argument, and it runs once a step (the
// model's other norms are fused.metal's). Sums are float32, results
// rounded once on store to T. Two flavours differ only in how the
// per-thread partial sums are combined:
//   simd:     simd_sum within each simdgroup, then every thread adds the
//             ≤ 32 simdgroup sums from threadgroup memory (in order);
//   portable: a tree reduction in threadgroup memory (no simd functions).
// The row code is golf_rows.h's, shared with the fused kernels
// (fused.metal) that reproduce these kernels' bits.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_rows.h"
using namespace metal;

// rmsnorm_fwd_simd: the forward pass, simd flavour.
// Baseline (N = 8192, C = 512, bf16): 3·N·C ≈ 12.6 MFLOP; bytes: x read
// twice (the second pass mostly from cache) and out written, 2·N·C·2 + 4·N
// ≈ 16.8 MB; 128 B threadgroup memory, 128 threads (one chunk each); roofline
// max(3.5 µs, 168 µs) ≈ 0.17 ms (bandwidth).
template <typename T>
[[kernel]] void rmsnorm_fwd_simd(
    device const T* x [[buffer(0)]],          // (N, C)
    device T* out [[buffer(1)]],              // (N, C)
    device float* rstd [[buffer(2)]],         // (N)
    constant RMSNormArgs& args [[buffer(3)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[32];  // one sum of squares per simdgroup
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.cols;
  const float ss = rmsnorm_sumsq_part(x, base, args.cols, tid, nthreads, false);
  const float rs = rmsnorm_rstd(golf_row_sum_simd(ss, partial, lane, sg, nthreads), args.cols, args.eps);
  if (tid == 0) {
    rstd[row] = rs;
  }
  rmsnorm_fwd_store(x, out, base, args.cols, rs, tid, nthreads, false);
}

// rmsnorm_fwd_portable: the forward pass, portable flavour (a tree
// reduction in threadgroup memory: 4 KB; otherwise as the simd flavour).
template <typename T>
[[kernel]] void rmsnorm_fwd_portable(
    device const T* x [[buffer(0)]],          // (N, C)
    device T* out [[buffer(1)]],              // (N, C)
    device float* rstd [[buffer(2)]],         // (N)
    constant RMSNormArgs& args [[buffer(3)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];  // one partial sum per thread
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.cols;
  const float ss = rmsnorm_sumsq_part(x, base, args.cols, tid, nthreads, false);
  const float rs = rmsnorm_rstd(golf_row_sum_portable(ss, scratch, tid, nthreads), args.cols, args.eps);
  if (tid == 0) {
    rstd[row] = rs;
  }
  rmsnorm_fwd_store(x, out, base, args.cols, rs, tid, nthreads, false);
}

// rmsnorm_bwd_store writes one row of the backward pass,
// dx = dres + rs·(dout − x·rs·m) with m = mean(dout·x̂) of the row.
template <typename T>
inline void rmsnorm_bwd_store(
    device const T* dout, device const T* x, device const T* dres, device T* dx,
    constant RMSNormBwdArgs& args, ulong base, float rs, float m, uint tid, uint nthreads, bool aligned) {
  for (uint c = golf_vw * tid; c < args.cols; c += golf_vw * nthreads) {
    const uint n = golf_chunk_len(c, args.cols);
    golf_storef4(dx, base + c, n, rmsnorm_bwd_chunk(dout, x, dres, args.has_res, base + c, n, rs, m, aligned), aligned);
  }
}

// rmsnorm_bwd_simd: the backward pass, simd flavour, with x̂ = x·rstd:
//
//	dx[n,c] = dres[n,c] + rstd[n]·(dout[n,c] − x̂[n,c]·mean_c'(dout[n,c']·x̂[n,c']))
//
// One threadgroup per row, like the forward; dres is read only when
// has_res = 1 and may be the same buffer as dx (each thread reads its
// chunk of dres before it writes that of dx, and no other thread touches
// the chunk).
// Baseline (N = 8192, C = 512, bf16): 8·N·C ≈ 34 MFLOP; bytes: dout and x
// read twice (the second pass mostly from cache) and dx written, 3·N·C·2 ≈
// 25.2 MB without dres, 33.6 MB with it; 128 B threadgroup memory, 128
// threads (one 4-element chunk each); roofline max(9 µs, 252–336 µs) ≈ 0.25–0.34 ms (bandwidth).
template <typename T>
[[kernel]] void rmsnorm_bwd_simd(
    device const T* dout [[buffer(0)]],       // (N, C)
    device const T* x [[buffer(1)]],          // (N, C)
    device const float* rstd [[buffer(2)]],   // (N)
    device const T* dres [[buffer(3)]],       // (N, C) when has_res, may be dx
    device T* dx [[buffer(4)]],               // (N, C)
    constant RMSNormBwdArgs& args [[buffer(5)]],
    constant uint& aligned [[buffer(6)]],     // 1: every chunk moves as one vector
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[32];  // one Σ dout·x̂ per simdgroup
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.cols;
  const float rs = rstd[row];
  const float dot = rmsnorm_bwd_dot_part(dout, x, base, args.cols, rs, tid, nthreads, aligned != 0);
  const float total = golf_row_sum_simd(dot, partial, lane, sg, nthreads);
  rmsnorm_bwd_store(dout, x, dres, dx, args, base, rs, total / static_cast<float>(args.cols), tid, nthreads,
                    aligned != 0);
}

// rmsnorm_bwd_portable: the backward pass, portable flavour (a tree
// reduction in threadgroup memory: 4 KB).
template <typename T>
[[kernel]] void rmsnorm_bwd_portable(
    device const T* dout [[buffer(0)]],       // (N, C)
    device const T* x [[buffer(1)]],          // (N, C)
    device const float* rstd [[buffer(2)]],   // (N)
    device const T* dres [[buffer(3)]],       // (N, C) when has_res, may be dx
    device T* dx [[buffer(4)]],               // (N, C)
    constant RMSNormBwdArgs& args [[buffer(5)]],
    constant uint& aligned [[buffer(6)]],     // 1: every chunk moves as one vector
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];  // one partial Σ dout·x̂ per thread
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.cols;
  const float rs = rstd[row];
  const float dot = rmsnorm_bwd_dot_part(dout, x, base, args.cols, rs, tid, nthreads, aligned != 0);
  const float total = golf_row_sum_portable(dot, scratch, tid, nthreads);
  rmsnorm_bwd_store(dout, x, dres, dx, args, base, rs, total / static_cast<float>(args.cols), tid, nthreads,
                    aligned != 0);
}

#define instantiate_rmsnorm(tname, T)                                        \
  instantiate_kernel("rmsnorm_fwd_simd_" #tname, rmsnorm_fwd_simd, T)         \
  instantiate_kernel("rmsnorm_fwd_portable_" #tname, rmsnorm_fwd_portable, T) \
  instantiate_kernel("rmsnorm_bwd_simd_" #tname, rmsnorm_bwd_simd, T)         \
  instantiate_kernel("rmsnorm_bwd_portable_" #tname, rmsnorm_bwd_portable, T)

instantiate_rmsnorm(float, float)
instantiate_rmsnorm(half, half)
instantiate_rmsnorm(bfloat, bfloat)

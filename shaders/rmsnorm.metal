// rmsnorm: RMSNorm without a weight, forward.
//
//	rstd[n]  = 1/sqrt(mean_c x[n,c]² + eps)
//	out[n,c] = x[n,c]·rstd[n]
//	x, out T (N, C); rstd float (N)
//
// One threadgroup per row (grid = N threadgroups, any threadgroup size up
// to 1024); each thread strides over the row. The sum of squares is float32,
// rounded once on store to T. Two flavours differ only in how the
// per-thread partial sums are combined:
//   simd:     simd_sum within each simdgroup, then every thread adds the
//             ≤ 32 simdgroup sums from threadgroup memory (in order);
//   portable: a tree reduction in threadgroup memory (no simd functions).
// Bytes per row: 3·C·sizeof(T) + 4 (x read twice, out written once).
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

// rmsnorm_fwd_simd: the simd flavour.
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
  float ss = 0.0f;
  for (uint c = tid; c < args.cols; c += nthreads) {
    const float v = static_cast<float>(x[base + c]);
    ss += v * v;
  }
  ss = simd_sum(ss);
  if (lane == 0) {
    partial[sg] = ss;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint nsg = (nthreads + 31) / 32;
  float total = 0.0f;
  for (uint s = 0; s < nsg; s++) {
    total += partial[s];
  }
  const float rs = 1.0f / sqrt(total / static_cast<float>(args.cols) + args.eps);
  if (tid == 0) {
    rstd[row] = rs;
  }
  for (uint c = tid; c < args.cols; c += nthreads) {
    out[base + c] = static_cast<T>(static_cast<float>(x[base + c]) * rs);
  }
}

// rmsnorm_fwd_portable: the portable flavour.
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
  float ss = 0.0f;
  for (uint c = tid; c < args.cols; c += nthreads) {
    const float v = static_cast<float>(x[base + c]);
    ss += v * v;
  }
  scratch[tid] = ss;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint width = 1;
  while (width < nthreads) {
    width <<= 1;
  }
  for (uint s = width / 2; s > 0; s >>= 1) {
    if (tid < s && tid + s < nthreads) {
      scratch[tid] += scratch[tid + s];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  const float rs = 1.0f / sqrt(scratch[0] / static_cast<float>(args.cols) + args.eps);
  if (tid == 0) {
    rstd[row] = rs;
  }
  for (uint c = tid; c < args.cols; c += nthreads) {
    out[base + c] = static_cast<T>(static_cast<float>(x[base + c]) * rs);
  }
}

#define instantiate_rmsnorm(tname, T)                                        \
  instantiate_kernel("rmsnorm_fwd_simd_" #tname, rmsnorm_fwd_simd, T)         \
  instantiate_kernel("rmsnorm_fwd_portable_" #tname, rmsnorm_fwd_portable, T)

instantiate_rmsnorm(float, float)
instantiate_rmsnorm(half, half)
instantiate_rmsnorm(bfloat, bfloat)

// The control: a kernel using every construct the rules allow — address
// spaces, threadgroup memory in a kernel, barriers with the thread count
// read from the builtin, half and bfloat, vectors, helpers, constants.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

constant constexpr uint ok_tile = 64;

template <typename P>
inline float ok_sum(P tile, uint n) {
  float s = 0.0f;
  for (uint i = 0; i < n; i++) {
    s += tile[i];
  }
  return s;
}

template <typename T>
[[kernel]] void ok_kernel(
    device const T* x [[buffer(0)]],
    device float2* out [[buffer(1)]],
    constant EltwiseArgs& args [[buffer(2)]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float tile[ok_tile];
  tile[tid % ok_tile] = tid < args.n ? static_cast<float>(x[tid]) : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const half h = half(1.0f);
  out[tid] = float2(ok_sum(tile, min(nthreads, ok_tile)), float(h));
}

instantiate_kernel("ok_kernel_float", ok_kernel, float)
instantiate_kernel("ok_kernel_half", ok_kernel, half)
instantiate_kernel("ok_kernel_bfloat", ok_kernel, bfloat)

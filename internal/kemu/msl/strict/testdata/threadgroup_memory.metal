// want: threadgroup-memory more than 32768
// 24 KiB + 12 KiB of threadgroup memory: more than an Apple GPU has.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

template <typename T>
[[kernel]] void bad_tg_memory(
    device T* out [[buffer(0)]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float a[6144];
  threadgroup float2 b[1536];
  a[tid] = float(tid);
  b[tid] = float2(float(tid), 0.0f);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = static_cast<T>(a[(tid + 1) % nthreads] + b[tid].x);
}

instantiate_kernel("bad_tg_memory_float", bad_tg_memory, float)

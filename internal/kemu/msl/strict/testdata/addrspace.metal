// want: compile no known conversion from '__attribute__((address_space(3))) float[64]' to 'device float const *'
// A threadgroup pointer passed where a device pointer is expected: g++
// (the emulator) accepts it, Apple's compiler does not.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

inline float load_device(device const float* p, uint i) {
  return p[i];
}

[[kernel]] void bad_addrspace(
    device float* out [[buffer(0)]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float tile[64];
  tile[tid % 64] = float(tid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = load_device(tile, (tid + 1) % nthreads);
}

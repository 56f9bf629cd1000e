// want: threads checked nowhere
// A kernel laid out for 128 threads (it strides by 128) that says so
// nowhere: a host dispatching 256 would go unnoticed.
#include <metal_stdlib>
using namespace metal;

[[kernel]] void bad_threads(
    device float* out [[buffer(0)]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float tile[512];
  for (uint i = tid; i < 512; i += 128) {
    tile[i] = float(i);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = tile[511 - tid];
}

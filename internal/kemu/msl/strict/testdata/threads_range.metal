// want: threads must be a constant from 1 to 1024
#include <metal_stdlib>
using namespace metal;

[[kernel]] [[max_total_threads_per_threadgroup(2048)]] void bad_threads_range(
    device float* out [[buffer(0)]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float tile[2048];
  tile[tid] = float(tid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = tile[2047 - tid];
}

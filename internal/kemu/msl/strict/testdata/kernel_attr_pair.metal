// want: kernel-attributes a position and its size must have the same type
// A ushort position in the threadgroup with a uint threadgroup size.
#include <metal_stdlib>
using namespace metal;

[[kernel]] void mixed_pair(
    device float* out [[buffer(0)]],
    ushort tid [[thread_position_in_threadgroup]],
    uint n [[threads_per_threadgroup]]) {
  out[tid] = float(n);
}

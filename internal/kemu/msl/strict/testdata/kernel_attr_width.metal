// want: kernel-attributes must all have one vector width
// A scalar grid position with a 3-vector threadgroup position: MSL wants
// one vector width for all the position and size attributes of a kernel.
#include <metal_stdlib>
using namespace metal;

[[kernel]] void mixed_width(
    device float* out [[buffer(0)]],
    uint gid [[thread_position_in_grid]],
    uint3 tg [[threadgroup_position_in_grid]]) {
  out[gid] = float(tg.x);
}

// want: kernel-attributes must be ushort or uint
// A signed grid position: the position and size attributes are ushort or
// uint (scalars or vectors).
#include <metal_stdlib>
using namespace metal;

[[kernel]] void signed_position(
    device float* out [[buffer(0)]],
    int gid [[thread_position_in_grid]]) {
  out[gid] = float(gid);
}

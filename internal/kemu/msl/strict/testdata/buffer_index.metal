// want: kernel-signature buffer index 31
// Metal has 31 buffer argument slots, [[buffer(0)]] to [[buffer(30)]].
#include <metal_stdlib>
using namespace metal;

[[kernel]] void bad_buffer_index(
    device float* out [[buffer(31)]],
    uint i [[thread_position_in_grid]]) {
  out[i] = 0.0f;
}

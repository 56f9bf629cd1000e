// want: compile no matching function for call to 'simd_shuffle_down'
// Metal has no bfloat shuffle (candle and MLX shuffle the bits as ushort).
#include <metal_stdlib>
using namespace metal;

inline bfloat from_below(bfloat x) {
  return simd_shuffle_down(x, 1);
}

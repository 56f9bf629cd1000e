// Planted violation: a bfloat shuffle. Apple's metal_simdgroup declares the
// SIMD-group functions for char, uchar, short, ushort, int, uint, half and
// float only (shuffle a bfloat's bits as ushort).
#include <metal_stdlib>
using namespace metal;

inline bfloat from_below(bfloat x) {
  return simd_shuffle_down(x, 1);
}

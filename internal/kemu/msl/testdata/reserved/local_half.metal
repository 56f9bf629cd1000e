// Planted violation: a local constant named half.
#include <metal_stdlib>
using namespace metal;

inline uint pairs(uint head_dim) {
  const uint half = head_dim / 2;
  return half;
}

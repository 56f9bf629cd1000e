// want: compile no matching function for call to 'simd_sum'
// simd_sum of a bool: the reductions take integers and floats only (count
// with simd_sum(uint(flag)), or vote with simd_any).
#include <metal_stdlib>
using namespace metal;

inline uint count_hits(bool hit) {
  return uint(simd_sum(hit));
}

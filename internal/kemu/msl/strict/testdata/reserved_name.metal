// want: reserved-name "float4"
// An MSL vector type name used as a variable: legal C++ (it hides the
// type), not MSL.
#include <metal_stdlib>
using namespace metal;

inline uint count4(uint n) {
  const uint float4 = n / 4;
  return float4;
}

// want: bfloat-conversion implicit conversion from int to bfloat
// An integer literal initialising a bfloat: no implicit conversion from
// an integer to bfloat either.
#include <metal_stdlib>
using namespace metal;

inline float zero_or(bool keep, float x) {
  bfloat z = 0;
  return keep ? x : static_cast<float>(z);
}

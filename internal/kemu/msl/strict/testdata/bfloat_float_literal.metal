// want: bfloat-conversion implicit conversion from float to bfloat
// A float literal initialising a bfloat (MSL has no bfloat literal suffix:
// write static_cast<bfloat>(0.5f) or bfloat(0.5f)).
#include <metal_stdlib>
using namespace metal;

inline float half_of(float x) {
  const bfloat k = 0.5f;
  return x * static_cast<float>(k);
}

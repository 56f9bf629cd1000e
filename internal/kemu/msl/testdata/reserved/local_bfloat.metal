// Planted violation: a local variable named bfloat.
#include <metal_stdlib>
using namespace metal;

inline float widen(float x) {
  float bfloat = x * 2.0f;
  return bfloat;
}

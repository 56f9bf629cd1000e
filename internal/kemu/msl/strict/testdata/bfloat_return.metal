// want: bfloat-conversion implicit conversion from float to bfloat
// A float returned from a function returning bfloat.
#include <metal_stdlib>
using namespace metal;

inline bfloat twice(float x) {
  return x * 2.0f;
}

// Planted violation: a float returned from a function returning bfloat.
#include <metal_stdlib>
using namespace metal;

inline bfloat twice(float x) {
  return x * 2.0f;
}

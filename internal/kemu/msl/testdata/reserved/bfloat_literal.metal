// Planted violation: an integer literal initialising a bfloat.
#include <metal_stdlib>
using namespace metal;

inline float zero_or(bool keep, float x) {
  bfloat z = 0;
  return keep ? x : static_cast<float>(z);
}

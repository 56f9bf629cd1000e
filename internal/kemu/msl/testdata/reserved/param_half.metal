// Planted violation: a parameter named half (the defect qk_norm_rope.metal
// had). Apple's compiler rejects it; so must the emulator build.
#include <metal_stdlib>
using namespace metal;

inline float pairs_sum(device const float* x, uint half) {
  float s = 0.0f;
  for (uint i = 0; i < half; i++) {
    s += x[i] + x[i + half];
  }
  return s;
}

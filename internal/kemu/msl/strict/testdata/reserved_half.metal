// want: compile cannot combine with previous
// A parameter named half (what qk_norm_rope.metal once had).
#include <metal_stdlib>
using namespace metal;

inline float pair_sum(device const float* x, uint half) {
  return x[0] + x[half];
}

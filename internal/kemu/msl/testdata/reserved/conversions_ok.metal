// The control of the conversion fixtures: explicit conversions to bfloat,
// bfloat arithmetic (bfloat op bfloat and bfloat op integer are bfloat),
// bfloat widened to float implicitly, and SIMD-group functions on the types
// Apple declares them for.
#include <metal_stdlib>
using namespace metal;

inline float conversions(device bfloat* out, float f, bfloat a, bfloat b, int n) {
  const bfloat s = static_cast<bfloat>(f);
  const bfloat t = bfloat(f);
  const bfloat u = (bfloat)f;
  const bfloat prod = a * b;
  const bfloat scaled = a * n + 2;
  out[0] = a * b;
  out[1] = static_cast<bfloat>(f * 2.0f);
  const float wide = a;
  const float mixed = a * f;
  return wide + mixed + s + t + u + prod + scaled;
}

inline float simd_types(float f, half h, int i, uint2 v, bfloat b) {
  const ushort bits = simd_shuffle_down(as_type<ushort>(b), 1);
  return simd_sum(f) + float(simd_sum(h)) + float(simd_max(i)) + float(simd_sum(v).x) +
         float(as_type<bfloat>(bits));
}

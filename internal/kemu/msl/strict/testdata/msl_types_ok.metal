// The control of the bfloat-conversion rule, the element types of the
// SIMD-group functions and matrices, and the kernel-attributes rule: every
// form here is MSL that Apple's compiler takes.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

// Explicit conversions to bfloat, bfloat arithmetic (bfloat in MSL), and
// bfloat widened to float implicitly.
inline float bfloat_forms(device bfloat* out, float f, bfloat a, bfloat b, int n) {
  const bfloat s = static_cast<bfloat>(f);
  const bfloat t = bfloat(f);
  const bfloat u = (bfloat)f;
  const bfloat prod = a * b;
  const bfloat sum = a + b * b - prod / a;
  const bfloat neg = -a;
  const bfloat scaled = a * n + 2;
  const bfloat pick = f > 0.0f ? a * b : b;
  const bfloat big = max(a, b);
  const bfloat mag = fabs(-a);  // fabs of a bfloat: the bfloat overload in MSL
  const bfloat2 v = bfloat2(a, b) * bfloat2(b, a);
  const bfloat2 w = a;
  out[0] = a * b;
  out[1] = static_cast<bfloat>(f * 2.0f);
  const float wide = a;
  const float mixed = a * f;
  return wide + mixed + s + t + u + sum + neg + scaled + pick + big + mag + v.x + w.y;
}

inline bfloat bfloat_return(bfloat a, bfloat b) {
  return a * b;
}

// SIMD-group functions on the types Apple declares them for.
inline float simd_forms(float f, half h, int i, uint2 u, bfloat b) {
  const float sf = simd_sum(f);
  const half sh = simd_sum(h);
  const int si = simd_max(i);
  const uint2 su = simd_sum(u);
  const float xf = simd_shuffle_xor(f, 1);
  const ushort bits = simd_shuffle_down(as_type<ushort>(b), 1);  // a bfloat shuffle
  return sf + float(sh) + float(si) + float(su.x + su.y) + xf + float(as_type<bfloat>(bits));
}

// A float simdgroup MMA, and half operands into a float accumulator.
inline void matrix_forms(device const float* a, device const half* h, device float* d) {
  simdgroup_float8x8 ma;
  simdgroup_float8x8 mb;
  simdgroup_load(ma, a);
  simdgroup_load(mb, a + 64);
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_multiply_accumulate(acc, ma, mb, acc);
  simdgroup_half8x8 ha;
  simdgroup_load(ha, h);
  simdgroup_multiply_accumulate(acc, ha, ha, acc);
  simdgroup_store(acc, d);
}

// Consistent uint3 position and size attributes.
[[kernel]] void attributes_ok(
    device float* out [[buffer(0)]],
    constant EltwiseArgs& args [[buffer(1)]],
    uint3 gid [[thread_position_in_grid]],
    uint3 grid [[threads_per_grid]],
    uint3 tid [[thread_position_in_threadgroup]],
    uint3 ntg [[threads_per_threadgroup]],
    uint3 tg [[threadgroup_position_in_grid]],
    uint3 ngroups [[threadgroups_per_grid]]) {
  const uint i = gid.x + grid.x * gid.y;
  if (i < args.n) {
    out[i] = float(tid.x + ntg.x + tg.x + ngroups.x);
  }
}

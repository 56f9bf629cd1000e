// want: bfloat-conversion implicit conversion from float to bfloat
// A kernel template that stores a float through device T*: fine for
// T = float, a compile error on a Mac for T = bfloat (the pattern is
// dependent, so only the instantiation shows the conversion).
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

template <typename T>
[[kernel]] void store_scaled(
    device const float* x [[buffer(0)]],
    device T* out [[buffer(1)]],
    constant ScalarArgs& args [[buffer(2)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= args.n) {
    return;
  }
  const float v = x[i] * args.alpha;
  out[i] = v;
}

instantiate_kernel("store_scaled_float", store_scaled, float)
instantiate_kernel("store_scaled_bfloat", store_scaled, bfloat)

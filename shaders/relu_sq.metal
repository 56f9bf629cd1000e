// relu_sq: the squared ReLU of the MLP, forward and backward.
//
//	out = max(x, 0)²          (forward)
//	dx  = 2·max(x, 0)·dout    (backward)
//
// Elementwise over n elements in T (float, half, bfloat), one thread per
// element, computed in float and rounded once on store. max(x, 0) is written
// as x <= 0 ? 0 : x so that NaN passes through and -0 becomes +0, as Go's
// max does in the CPU backend. The simd and portable flavours are the same
// code (Simd is unused); both names exist so the host builds every kernel
// name one way.
// Bytes per element: 2·sizeof(T) forward, 3·sizeof(T) backward.
//
// Baseline (the MLP hidden activation, N·F = 8192·1024 = 8.39 M elements,
// bf16), no threadgroup memory, 256 threads per threadgroup, roofline on a
// base M2 = max(FLOPs/3.6e12, bytes/1e11):
//	forward   16.8 MFLOP, 33.6 MB   max(4.7 µs, 336 µs) ≈ 0.34 ms (bandwidth)
//	backward  25.2 MFLOP, 50.3 MB   max(7.0 µs, 503 µs) ≈ 0.50 ms (bandwidth)
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

// relu_sq_fwd: out[i] = max(x[i], 0)².
template <typename T, bool Simd>
[[kernel]] void relu_sq_fwd(
    device const T* x [[buffer(0)]],          // (n)
    device T* out [[buffer(1)]],              // (n)
    constant EltwiseArgs& args [[buffer(2)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= args.n) {
    return;
  }
  const float v = static_cast<float>(x[i]);
  const float r = v <= 0.0f ? 0.0f : v;
  out[i] = static_cast<T>(r * r);
}

// relu_sq_bwd: dx[i] = 2·max(x[i], 0)·dout[i].
template <typename T, bool Simd>
[[kernel]] void relu_sq_bwd(
    device const T* dout [[buffer(0)]],       // (n)
    device const T* x [[buffer(1)]],          // (n)
    device T* dx [[buffer(2)]],               // (n)
    constant EltwiseArgs& args [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= args.n) {
    return;
  }
  const float v = static_cast<float>(x[i]);
  const float r = v <= 0.0f ? 0.0f : v;
  dx[i] = static_cast<T>(2.0f * r * static_cast<float>(dout[i]));
}

#define instantiate_relu_sq(tname, T)                                        \
  instantiate_kernel("relu_sq_fwd_simd_" #tname, relu_sq_fwd, T, true)     \
  instantiate_kernel("relu_sq_fwd_portable_" #tname, relu_sq_fwd, T, false) \
  instantiate_kernel("relu_sq_bwd_simd_" #tname, relu_sq_bwd, T, true)     \
  instantiate_kernel("relu_sq_bwd_portable_" #tname, relu_sq_bwd, T, false)

instantiate_relu_sq(float, float)
instantiate_relu_sq(half, half)
instantiate_relu_sq(bfloat, bfloat)

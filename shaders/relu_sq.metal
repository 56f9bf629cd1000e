// relu_sq: the squared ReLU of the MLP, forward and backward.
//
//	out = max(x, 0)²          (forward)
//	dx  = 2·max(x, 0)·dout    (backward)
//
// Elementwise over n elements in T (float, half, bfloat), computed in float
// and rounded once on store: relu_sq_fwd/bwd one thread per element,
// relu_sq_fwd4/bwd4 four per thread with vector loads and stores (the
// host's choice when every tensor starts on a 4-element boundary, so the
// vectors are aligned), the last n mod 4 by one more thread through scalar
// pointers to the same tensors. Both compute each element with the same
// functions (golf_relu_sq.h, which linear.metal's fused GEMM epilogues
// call too), so they give the same bits. max(x, 0) is written
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
#include "golf_relu_sq.h"  // relu_sq_fwd_elem, relu_sq_bwd_elem (shared with linear.metal's epilogues)
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
  out[i] = static_cast<T>(relu_sq_fwd_elem(static_cast<float>(x[i])));
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
  dx[i] = static_cast<T>(relu_sq_bwd_elem(static_cast<float>(x[i]), static_cast<float>(dout[i])));
}

// relu_sq_fwd4: out = max(x, 0)², elements 4i..4i+3 per thread i < n/4
// through x4, out4; thread n/4 does the last n mod 4 through x, out (x4
// and x, out4 and out bound to the same tensors).
// Baseline as relu_sq_fwd, with a quarter of the threads and 16-byte (float)
// or 8-byte (half, bfloat) loads and stores.
template <typename T, bool Simd>
[[kernel]] void relu_sq_fwd4(
    device const vec<T, 4>* x4 [[buffer(0)]],  // (n/4)
    device vec<T, 4>* out4 [[buffer(1)]],      // (n/4)
    device const T* x [[buffer(2)]],           // (n), the tensor of x4
    device T* out [[buffer(3)]],               // (n), the tensor of out4
    constant EltwiseArgs& args [[buffer(4)]],
    uint i [[thread_position_in_grid]]) {
  const uint nv = args.n / 4;
  if (i < nv) {
    const vec<T, 4> v = x4[i];
    vec<T, 4> r;
    for (uint k = 0; k < 4; k++) {
      r[k] = static_cast<T>(relu_sq_fwd_elem(static_cast<float>(v[k])));
    }
    out4[i] = r;
  } else if (i == nv) {
    for (uint j = 4 * nv; j < args.n; j++) {
      out[j] = static_cast<T>(relu_sq_fwd_elem(static_cast<float>(x[j])));
    }
  }
}

// relu_sq_bwd4: dx = 2·max(x, 0)·dout, four elements per thread as
// relu_sq_fwd4. Baseline as relu_sq_bwd.
template <typename T, bool Simd>
[[kernel]] void relu_sq_bwd4(
    device const vec<T, 4>* dout4 [[buffer(0)]],  // (n/4)
    device const vec<T, 4>* x4 [[buffer(1)]],     // (n/4)
    device vec<T, 4>* dx4 [[buffer(2)]],          // (n/4)
    device const T* dout [[buffer(3)]],           // (n), the tensor of dout4
    device const T* x [[buffer(4)]],              // (n), the tensor of x4
    device T* dx [[buffer(5)]],                   // (n), the tensor of dx4
    constant EltwiseArgs& args [[buffer(6)]],
    uint i [[thread_position_in_grid]]) {
  const uint nv = args.n / 4;
  if (i < nv) {
    const vec<T, 4> v = x4[i];
    const vec<T, 4> d = dout4[i];
    vec<T, 4> r;
    for (uint k = 0; k < 4; k++) {
      r[k] = static_cast<T>(relu_sq_bwd_elem(static_cast<float>(v[k]), static_cast<float>(d[k])));
    }
    dx4[i] = r;
  } else if (i == nv) {
    for (uint j = 4 * nv; j < args.n; j++) {
      dx[j] = static_cast<T>(relu_sq_bwd_elem(static_cast<float>(x[j]), static_cast<float>(dout[j])));
    }
  }
}

#define instantiate_relu_sq(tname, T)                                        \
  instantiate_kernel("relu_sq_fwd_simd_" #tname, relu_sq_fwd, T, true)     \
  instantiate_kernel("relu_sq_fwd_portable_" #tname, relu_sq_fwd, T, false) \
  instantiate_kernel("relu_sq_bwd_simd_" #tname, relu_sq_bwd, T, true)     \
  instantiate_kernel("relu_sq_bwd_portable_" #tname, relu_sq_bwd, T, false) \
  instantiate_kernel("relu_sq_fwd4_simd_" #tname, relu_sq_fwd4, T, true)     \
  instantiate_kernel("relu_sq_fwd4_portable_" #tname, relu_sq_fwd4, T, false) \
  instantiate_kernel("relu_sq_bwd4_simd_" #tname, relu_sq_bwd4, T, true)     \
  instantiate_kernel("relu_sq_bwd4_portable_" #tname, relu_sq_bwd4, T, false)

instantiate_relu_sq(float, float)
instantiate_relu_sq(half, half)
instantiate_relu_sq(bfloat, bfloat)

// adam: one Adam step with bias correction (as MLX), in place.
//
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	p −= lr·(m/bias1) / (sqrt(v/bias2) + eps)
//	p, m, v float (n); g T (n)
//
// bias1 = 1−β1^t and bias2 = 1−β2^t are computed on the host in float64
// and passed as floats. One thread per element, float32 arithmetic. The
// host binds float (F32) tensors only; the half and bfloat instantiations
// exist because every kernel exists in every dtype, and the simd and
// portable flavours are the same code.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

// adam_step: one element per thread.
// Baseline (the V·C = 1024·512 = 524,288-element embedding, F32): ≈ 12
// FLOP per element ≈ 6.3 MFLOP; bytes: p, g, m, v read and p, m, v
// written, 28·n ≈ 14.7 MB; no threadgroup memory, 256 threads; roofline
// max(2 µs, 147 µs) ≈ 0.15 ms (bandwidth).
template <typename T, bool Simd>
[[kernel]] void adam_step(
    device float* p [[buffer(0)]],            // (n)
    device const T* g [[buffer(1)]],          // (n)
    device float* m [[buffer(2)]],            // (n)
    device float* v [[buffer(3)]],            // (n)
    constant AdamArgs& args [[buffer(4)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= args.n) {
    return;
  }
  const float gi = static_cast<float>(g[i]);
  const float mi = args.beta1 * m[i] + (1.0f - args.beta1) * gi;
  const float vi = args.beta2 * v[i] + (1.0f - args.beta2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  p[i] -= args.lr * (mi / args.bias1) / (sqrt(vi / args.bias2) + args.eps);
}

#define instantiate_adam(tname, T)                                         \
  instantiate_kernel("adam_step_simd_" #tname, adam_step, T, true)       \
  instantiate_kernel("adam_step_portable_" #tname, adam_step, T, false)

instantiate_adam(float, float)
instantiate_adam(half, half)
instantiate_adam(bfloat, bfloat)

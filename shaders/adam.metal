// adam: one Adam step with bias correction (as MLX), in place.
//
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	p −= lr·(m/bias1) / (sqrt(v/bias2) + eps)
//	p, m, v float (n); g T (n)
//
// bias1 = 1−β1^t and bias2 = 1−β2^t are computed on the host in float64
// and passed as floats. Four consecutive elements per thread (elements
// 4t .. 4t+3 of thread t, the last chunk possibly short), float32
// arithmetic; a whole chunk moves as one vector load or store where the
// host's aligned argument is 1 (every tensor on a 4-element boundary;
// golf_rows.h), else element by element, with the same bits. The
// host binds float (F32) tensors only; the half and bfloat instantiations
// exist because every kernel exists in every dtype, and the simd and
// portable flavours are the same code.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_rows.h"
using namespace metal;

// adam_step: four elements per thread.
// Baseline (the V·C = 1024·512 = 524,288-element embedding, F32): ≈ 12
// FLOP per element ≈ 6.3 MFLOP; bytes: p, g, m, v read and p, m, v
// written, 28·n ≈ 14.7 MB; no threadgroup memory, 256 threads, n/4 of
// them; roofline
// max(2 µs, 147 µs) ≈ 0.15 ms (bandwidth).
template <typename T, bool Simd>
[[kernel]] void adam_step(
    device float* p [[buffer(0)]],            // (n)
    device const T* g [[buffer(1)]],          // (n)
    device float* m [[buffer(2)]],            // (n)
    device float* v [[buffer(3)]],            // (n)
    constant AdamArgs& args [[buffer(4)]],
    constant uint& aligned [[buffer(5)]],     // 1: every chunk moves as one vector
    uint t [[thread_position_in_grid]]) {
  const ulong i = ulong(golf_vw) * t;
  if (i >= args.n) {
    return;
  }
  const uint n = uint(min(ulong(golf_vw), ulong(args.n) - i));
  const bool al = aligned != 0;
  const float4 gi = golf_loadf4(g, i, n, al);
  float4 mi = golf_load4(static_cast<device const float*>(m), i, n, al);
  float4 vi = golf_load4(static_cast<device const float*>(v), i, n, al);
  float4 pi = golf_load4(static_cast<device const float*>(p), i, n, al);
  for (uint k = 0; k < golf_vw; k++) {
    mi[k] = args.beta1 * mi[k] + (1.0f - args.beta1) * gi[k];
    vi[k] = args.beta2 * vi[k] + (1.0f - args.beta2) * gi[k] * gi[k];
    pi[k] -= args.lr * (mi[k] / args.bias1) / (sqrt(vi[k] / args.bias2) + args.eps);
  }
  golf_store4(m, i, n, mi, al);
  golf_store4(v, i, n, vi, al);
  golf_store4(p, i, n, pi, al);
}

#define instantiate_adam(tname, T)                                         \
  instantiate_kernel("adam_step_simd_" #tname, adam_step, T, true)       \
  instantiate_kernel("adam_step_portable_" #tname, adam_step, T, false)

instantiate_adam(float, float)
instantiate_adam(half, half)
instantiate_adam(bfloat, bfloat)

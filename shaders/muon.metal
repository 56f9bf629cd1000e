// muon: the Nesterov momentum of Muon, before Newton–Schulz.
//
//	buf = μ·buf + g;  geff = g + μ·buf
//	buf float (n); g, geff T (n); geff may be g
//
// One thread per element, float32 arithmetic; each thread reads g[i]
// before it writes geff[i], so geff may alias g. The host binds float
// (F32) tensors only; the half and bfloat instantiations exist because
// every kernel exists in every dtype, and the simd and portable flavours
// are the same code.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

// muon_momentum: one element per thread.
// Baseline (a 1024×512 MLP matrix, n = 524,288, F32): 4 FLOP per element
// ≈ 2.1 MFLOP; bytes: buf, g read and buf, geff written, 16·n ≈ 8.4 MB;
// no threadgroup memory, 256 threads; roofline max(0.6 µs, 84 µs) ≈
// 0.08 ms (bandwidth).
template <typename T, bool Simd>
[[kernel]] void muon_momentum(
    device float* buf [[buffer(0)]],          // (n)
    device const T* g [[buffer(1)]],          // (n)
    device T* geff [[buffer(2)]],             // (n), may be g
    constant MomentumArgs& args [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= args.n) {
    return;
  }
  const float gi = static_cast<float>(g[i]);
  const float bi = args.momentum * buf[i] + gi;
  buf[i] = bi;
  geff[i] = static_cast<T>(gi + args.momentum * bi);
}

#define instantiate_muon(tname, T)                                                \
  instantiate_kernel("muon_momentum_simd_" #tname, muon_momentum, T, true)      \
  instantiate_kernel("muon_momentum_portable_" #tname, muon_momentum, T, false)

instantiate_muon(float, float)
instantiate_muon(half, half)
instantiate_muon(bfloat, bfloat)

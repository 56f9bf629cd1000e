// muon: the Nesterov momentum of Muon, before Newton–Schulz.
//
//	buf = μ·buf + g;  geff = g + μ·buf
//	buf float (n); g, geff T (n); geff may be g
//
// Four consecutive elements per thread (elements 4t .. 4t+3 of thread t,
// the last chunk possibly short), float32 arithmetic; a whole chunk moves
// as one vector load or store where the host's aligned argument is 1
// (every tensor on a 4-element boundary; golf_rows.h), else element by
// element, with the same bits. Each thread reads its chunk of g before it
// writes that of geff, so geff may alias g. The host binds float
// (F32) tensors only; the half and bfloat instantiations exist because
// every kernel exists in every dtype, and the simd and portable flavours
// are the same code.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_rows.h"
using namespace metal;

// muon_momentum: four elements per thread.
// Baseline (a 1024×512 MLP matrix, n = 524,288, F32): 4 FLOP per element
// ≈ 2.1 MFLOP; bytes: buf, g read and buf, geff written, 16·n ≈ 8.4 MB;
// no threadgroup memory, 256 threads, n/4 of them; roofline max(0.6 µs, 84 µs) ≈
// 0.08 ms (bandwidth).
template <typename T, bool Simd>
[[kernel]] void muon_momentum(
    device float* buf [[buffer(0)]],          // (n)
    device const T* g [[buffer(1)]],          // (n)
    device T* geff [[buffer(2)]],             // (n), may be g
    constant MomentumArgs& args [[buffer(3)]],
    constant uint& aligned [[buffer(4)]],     // 1: every chunk moves as one vector
    uint t [[thread_position_in_grid]]) {
  const ulong i = ulong(golf_vw) * t;
  if (i >= args.n) {
    return;
  }
  const uint n = uint(min(ulong(golf_vw), ulong(args.n) - i));
  const bool al = aligned != 0;
  const float4 gi = golf_loadf4(g, i, n, al);
  float4 bi = golf_load4(static_cast<device const float*>(buf), i, n, al);
  float4 e;
  for (uint k = 0; k < golf_vw; k++) {
    bi[k] = args.momentum * bi[k] + gi[k];
    e[k] = gi[k] + args.momentum * bi[k];
  }
  golf_store4(buf, i, n, bi, al);
  golf_storef4(geff, i, n, e, al);
}

#define instantiate_muon(tname, T)                                                \
  instantiate_kernel("muon_momentum_simd_" #tname, muon_momentum, T, true)      \
  instantiate_kernel("muon_momentum_portable_" #tname, muon_momentum, T, false)

instantiate_muon(float, float)
instantiate_muon(half, half)
instantiate_muon(bfloat, bfloat)

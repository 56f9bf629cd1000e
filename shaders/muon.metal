// muon: the Nesterov momentum of Muon, before Newton–Schulz, and the
// weight update from a transposed Newton–Schulz result, after it.
//
//	buf = μ·buf + g;  geff = g + μ·buf
//	buf float (n); g, geff T (n); geff may be g
//
// The momentum kernels give each thread 4-element chunks (chunk c is elements
// 4c .. 4c+3, the last chunk possibly short), float32 arithmetic
// (muon_momentum4, so both compute the same bits); a whole chunk moves as
// one vector load or store where the host's aligned argument is 1 (every
// tensor on a 4-element boundary; golf_rows.h), else element by element,
// with the same bits. Each thread reads its chunk of g before it writes
// that of geff, so geff may alias g. The host binds float (F32) tensors
// only; the half and bfloat instantiations exist because every kernel
// exists in every dtype.
//
//	momentum:        one chunk per thread (chunk t of thread t).
//	momentum_sumsq:  the momentum of matrix z of a Newton–Schulz batch
//	                 fused with the first pass of its norm: grid (parts, 1,
//	                 1) threadgroups of 256 threads, thread tid of group g
//	                 taking chunks g·256 + tid + s·(parts·256), s = 0, 1, …
//	                 — newton_schulz_sumsq's partition and order — and
//	                 writing partial[z·parts + g] = Σ geff² over its
//	                 group's chunks (of the stored values), which
//	                 newton_schulz_norm then reads as it reads sumsq's.
//	axpy_t:          w += α·Xᵀ, w float (R, C), X T (C, R): matrix z of a
//	                 batch's Newton–Schulz iterate for R > C, which stays
//	                 transposed (no store back into (R, C)).
// The simd and portable flavours of momentum and axpy_t are the same code;
// those of momentum_sumsq differ in the threadgroup sum, as sumsq's do.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_rows.h"
using namespace metal;

#define MUON_SUMSQ_THREADS 256

// muon_momentum4 updates a chunk's momentum b in place, b = μ·b + g, and
// returns geff = g + μ·b, lane by lane.
METAL_FUNC float4 muon_momentum4(thread float4& b, float4 g, float mu) {
  float4 e;
  for (uint k = 0; k < golf_vw; k++) {
    b[k] = mu * b[k] + g[k];
    e[k] = g[k] + mu * b[k];
  }
  return e;
}

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
  const float4 e = muon_momentum4(bi, gi, args.momentum);
  golf_store4(buf, i, n, bi, al);
  golf_storef4(geff, i, n, e, al);
}

// muon_momentum_sumsq_part runs the momentum of thread tid's chunks of
// threadgroup group (of parts) and returns its share of Σ geff², each
// stored value read back as float, in chunk and lane order.
template <typename T>
METAL_FUNC float muon_momentum_sumsq_part(
    device float* buf, device const T* g, device T* geff, constant MuonSumsqArgs& args,
    uint group, uint tid, bool al) {
  const uint chunks = (args.n + golf_vw - 1) / golf_vw;
  float s = 0.0f;
  for (uint c = group * MUON_SUMSQ_THREADS + tid; c < chunks; c += args.parts * MUON_SUMSQ_THREADS) {
    const uint i = golf_vw * c, n = golf_chunk_len(i, args.n);
    const float4 gi = golf_loadf4(g, i, n, al);
    float4 bi = golf_load4(static_cast<device const float*>(buf), i, n, al);
    const vec<T, 4> e = golf_round<T>(muon_momentum4(bi, gi, args.momentum));
    golf_store4(buf, i, n, bi, al);
    golf_store4(geff, i, n, e, al);
    s = rmsnorm_sq_add4(s, golf_widen(e), n);
  }
  return s;
}

// muon_momentum_sumsq_simd: the momentum of one matrix and its partial
// sums of squares, simd_sum and the 8 simdgroup sums in order (as
// newton_schulz_sumsq_simd).
// Baseline (a 1024×512 MLP matrix, n = 524,288, F32, 64 partials): 6 FLOP
// per element ≈ 3.1 MFLOP; bytes: buf, g read and buf, geff written,
// 16·n + 4·parts ≈ 8.4 MB (muon_momentum then newton_schulz_sumsq: 10.5
// MB, geff read back); 32 B threadgroup memory, 256 threads; roofline
// max(0.9 µs, 84 µs) ≈ 0.08 ms (bandwidth).
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(MUON_SUMSQ_THREADS)]] void muon_momentum_sumsq_simd(
    device float* buf [[buffer(0)]],          // (n)
    device const T* g [[buffer(1)]],          // (n)
    device T* geff [[buffer(2)]],             // (n), may be g
    device float* partial [[buffer(3)]],      // (count, parts)
    constant MuonSumsqArgs& args [[buffer(4)]],
    constant uint& aligned [[buffer(5)]],     // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[MUON_SUMSQ_THREADS / 32];
  const float s = muon_momentum_sumsq_part(buf, g, geff, args, group, tid, aligned != 0);
  const float total = golf_row_sum_simd(s, sums, lane, sg, MUON_SUMSQ_THREADS);
  if (tid == 0) {
    partial[args.z * args.parts + group] = total;
  }
}

// muon_momentum_sumsq_portable: as muon_momentum_sumsq_simd, with a
// threadgroup-memory tree (as newton_schulz_sumsq_portable); 1 KB of
// threadgroup memory.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(MUON_SUMSQ_THREADS)]] void muon_momentum_sumsq_portable(
    device float* buf [[buffer(0)]],          // (n)
    device const T* g [[buffer(1)]],          // (n)
    device T* geff [[buffer(2)]],             // (n), may be g
    device float* partial [[buffer(3)]],      // (count, parts)
    constant MuonSumsqArgs& args [[buffer(4)]],
    constant uint& aligned [[buffer(5)]],     // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float sums[MUON_SUMSQ_THREADS];
  const float s = muon_momentum_sumsq_part(buf, g, geff, args, group, tid, aligned != 0);
  const float total = golf_row_sum_portable(s, sums, tid, MUON_SUMSQ_THREADS);
  if (tid == 0) {
    partial[args.z * args.parts + group] = total;
  }
}

// muon_axpy_t: w[i, j] += alpha·X[j, i] for w (R, C) and X matrix z of
// the batch x (count matrices (C, R), matrix z from z·R·C), with axpy's
// arithmetic (golf_axpy4, which elementwise.metal's axpy_elems runs: the
// bits of storing Xᵀ to float and then axpy). One
// thread per 4×4 block, thread t taking rows 4·(t mod ⌈R/4⌉) + 0..3 of w
// and columns 4·(t div ⌈R/4⌉) + 0..3 (the last block of a side possibly
// short): it reads the block's four rows of X, then reads, updates and
// writes its four rows of w; one vector load or store per row where the
// host's aligned argument is 1 (R and C multiples of 4, w and x on a
// 4-element boundary), else element by element, with the same bits.
// Grid: ⌈R/4⌉·⌈C/4⌉ threads along x.
// Baseline: a 1024×512 MLP weight from its (512, 1024) float iterate:
// 2·524288 FLOP, (4 + 4 + 4)·524288 B ≈ 6.3 MB (X read, w read and
// written); no threadgroup memory, 256 threads; roofline 63 µs (bandwidth),
// against 105 µs (10.5 MB) for the store and the axpy it replaces.
template <typename T, bool Simd>
[[kernel]] void muon_axpy_t(
    device const T* x [[buffer(0)]],           // (count, C, R)
    device float* w [[buffer(1)]],             // (R, C)
    constant MuonAxpyArgs& args [[buffer(2)]],
    constant uint& aligned [[buffer(3)]],      // 1: every row of a block moves as one vector
    uint t [[thread_position_in_grid]]) {
  const uint R = args.rows, C = args.cols, rb = (R + golf_vw - 1) / golf_vw;
  const uint i0 = golf_vw * (t % rb), j0 = golf_vw * (t / rb);
  if (j0 >= C) {
    return;
  }
  const uint ni = golf_chunk_len(i0, R), nj = golf_chunk_len(j0, C);
  const bool al = aligned != 0;
  device const T* xz = x + ulong(args.z) * (ulong(R) * C);
  float4 xr[golf_vw];  // xr[a][b] = X[j0 + a, i0 + b]
  for (uint a = 0; a < golf_vw; a++) {
    xr[a] = a < nj ? golf_loadf4(xz, ulong(j0 + a) * R + i0, ni, al) : float4(0.0f);
  }
  for (uint b = 0; b < ni; b++) {
    const ulong wi = ulong(i0 + b) * C + j0;
    const float4 d = golf_load4(static_cast<device const float*>(w), wi, nj, al);
    const float4 v = float4(xr[0][b], xr[1][b], xr[2][b], xr[3][b]);  // row i0 + b of Xᵀ
    golf_store4(w, wi, nj, golf_axpy4(d, v, args.alpha), al);
  }
}

#define instantiate_muon(tname, T)                                                              \
  instantiate_kernel("muon_momentum_simd_" #tname, muon_momentum, T, true)                    \
  instantiate_kernel("muon_momentum_portable_" #tname, muon_momentum, T, false)               \
  instantiate_kernel("muon_momentum_sumsq_simd_" #tname, muon_momentum_sumsq_simd, T)          \
  instantiate_kernel("muon_momentum_sumsq_portable_" #tname, muon_momentum_sumsq_portable, T)   \
  instantiate_kernel("muon_axpy_t_simd_" #tname, muon_axpy_t, T, true)                          \
  instantiate_kernel("muon_axpy_t_portable_" #tname, muon_axpy_t, T, false)

instantiate_muon(float, float)
instantiate_muon(half, half)
instantiate_muon(bfloat, bfloat)

// golf_rows.h: the row and element code of RMSNorm, resid-mix and scaled
// add, written once for the unfused kernels (rmsnorm.metal, resid_mix.metal,
// scaled_add.metal, and the row sums of qk_norm_rope.metal's dgain) and the
// fused kernels that combine them (fused.metal). A fused kernel calls these
// functions with the same threads over the same elements in the same order
// as the unfused kernels it replaces, so it computes the same bits by
// construction: every sum has the same terms, added in the same order, and
// every rounding to T happens where the unfused sequence stores to T.
//
// Row sums: golf_row_sum_simd and golf_row_sum_portable combine one float
// per thread of a threadgroup (v, of thread tid of nthreads) into their
// sum, returned to every thread; both hold barriers, so every thread of the
// threadgroup calls them with the same nthreads. The order is fixed by
// nthreads alone:
//   simd:     simd_sum within each simdgroup, then the ≤ 32 simdgroup sums
//             added in simdgroup order from partial (threadgroup, 32 floats);
//   portable: golf_tree_sum over scratch (threadgroup, nthreads floats).
// A caller that sums again with the same scratch passes a
// threadgroup_barrier first, so that no thread overwrites it while another
// still reads the previous sum.
//
// Chunks: the row and element kernels give each thread golf_vw = 4
// consecutive elements at a time, chunk j being elements 4j .. 4j+3 of
// the row (the last chunk of a row whose width is not a multiple of 4 is
// short); thread tid of a row's nthreads takes the chunks j = tid,
// tid + nthreads, ... in order, and the elements of a chunk in order. The
// partition, and with it every sum's order, depends on cols and nthreads
// alone. Where the host's aligned argument is 1 (every tensor the kernel
// touches starts on a 4-element boundary and cols is a multiple of 4, so
// every chunk is whole and aligned) a chunk moves with one vector load or
// store of vec<T, 4> (8 bytes for half and bfloat, 16 for float); else
// with one scalar access per element. Both give the same bits.
#ifndef GOLF_ROWS_H
#define GOLF_ROWS_H

#include <metal_stdlib>
#include "golf_reduce.h"

template <typename P>
METAL_FUNC float golf_row_sum_simd(float v, P partial, uint lane, uint sg, uint nthreads) {
  v = metal::simd_sum(v);
  if (lane == 0) {
    partial[sg] = v;
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  const uint nsg = (nthreads + 31) / 32;
  float total = 0.0f;
  for (uint s = 0; s < nsg; s++) {
    total += partial[s];
  }
  return total;
}

template <typename P>
METAL_FUNC float golf_row_sum_portable(float v, P scratch, uint tid, uint nthreads) {
  scratch[tid] = v;
  golf_tree_sum(scratch, tid, nthreads);
  return scratch[0];
}

// The functions below that take a vector are called with their name in
// parentheses, golf_widen(v): that turns off argument-dependent lookup,
// which would otherwise find a second copy of this header's functions
// where the emulator includes it at namespace scope (vec is a global
// template there) and make the call ambiguous.
//
// golf_vw is the number of elements a thread's chunk holds.
constant constexpr uint golf_vw = 4;

// golf_row_block is the row range [r0, r1) of row block `block` when rows
// are split into nblocks blocks of ceil(rows / nblocks) (the last ones may
// be short or empty).
METAL_FUNC uint2 golf_row_block(uint rows, uint nblocks, uint block) {
  const uint chunk = (rows + nblocks - 1) / nblocks;
  const uint r0 = metal::min(rows, block * chunk);
  return uint2(r0, metal::min(rows, r0 + chunk));
}

// golf_chunk_len is the number of elements of the chunk starting at
// element c of a row of cols (c < cols): 4, or fewer for a short last one.
METAL_FUNC uint golf_chunk_len(uint c, uint cols) {
  return metal::min(golf_vw, cols - c);
}

// golf_load4 returns the chunk p[i .. i+n) in T (n ≤ 4; the other lanes
// 0): one vector load when aligned (and n = 4: p + i is then on a
// 4-element boundary), else n scalar loads.
template <typename T>
METAL_FUNC metal::vec<T, 4> golf_load4(device const T* p, ulong i, uint n, bool aligned) {
  if (aligned && n == golf_vw) {
    return *reinterpret_cast<device const metal::vec<T, 4>*>(p + i);
  }
  metal::vec<T, 4> v(static_cast<T>(0.0f));
  for (uint k = 0; k < n; k++) {
    v[k] = p[i + k];
  }
  return v;
}

// golf_store4 writes the first n lanes of v to p[i .. i+n), as golf_load4
// reads them.
template <typename T>
METAL_FUNC void golf_store4(device T* p, ulong i, uint n, metal::vec<T, 4> v, bool aligned) {
  if (aligned && n == golf_vw) {
    *reinterpret_cast<device metal::vec<T, 4>*>(p + i) = v;
    return;
  }
  for (uint k = 0; k < n; k++) {
    p[i + k] = v[k];
  }
}

// golf_widen is v in float, lane by lane.
template <typename T>
METAL_FUNC float4 golf_widen(metal::vec<T, 4> v) {
  float4 r;
  for (uint k = 0; k < golf_vw; k++) {
    r[k] = static_cast<float>(v[k]);
  }
  return r;
}

// golf_round is v rounded to T, lane by lane (once, to nearest even).
template <typename T>
METAL_FUNC metal::vec<T, 4> golf_round(float4 v) {
  metal::vec<T, 4> r;
  for (uint k = 0; k < golf_vw; k++) {
    r[k] = static_cast<T>(v[k]);
  }
  return r;
}

// golf_loadf4 is golf_load4 widened to float.
template <typename T>
METAL_FUNC float4 golf_loadf4(device const T* p, ulong i, uint n, bool aligned) {
  return golf_widen(golf_load4(p, i, n, aligned));
}

// golf_storef4 is golf_store4 of v rounded to T.
template <typename T>
METAL_FUNC void golf_storef4(device T* p, ulong i, uint n, float4 v, bool aligned) {
  golf_store4(p, i, n, golf_round<T>(v), aligned);
}

// rmsnorm_sq_add is ss + v², the one step of RMSNorm's sum of squares.
METAL_FUNC float rmsnorm_sq_add(float ss, float v) {
  return ss + v * v;
}

// rmsnorm_sq_add4 adds the squares of the first n lanes of v to ss, in
// lane order.
METAL_FUNC float rmsnorm_sq_add4(float ss, float4 v, uint n) {
  for (uint k = 0; k < n; k++) {
    ss = rmsnorm_sq_add(ss, v[k]);
  }
  return ss;
}

// rmsnorm_sumsq_part is thread tid's share of Σ_c x[base + c]², over its
// chunks.
template <typename T>
METAL_FUNC float rmsnorm_sumsq_part(device const T* x, ulong base, uint cols, uint tid, uint nthreads,
                                    bool aligned) {
  float ss = 0.0f;
  for (uint c = golf_vw * tid; c < cols; c += golf_vw * nthreads) {
    const uint n = golf_chunk_len(c, cols);
    ss = rmsnorm_sq_add4(ss, golf_loadf4(x, base + c, n, aligned), n);
  }
  return ss;
}

// rmsnorm_rstd is 1/sqrt(sumsq/cols + eps).
METAL_FUNC float rmsnorm_rstd(float sumsq, uint cols, float eps) {
  return 1.0f / metal::sqrt(sumsq / static_cast<float>(cols) + eps);
}

// rmsnorm_fwd_store writes thread tid's chunks of the row at base,
// out = x·rs rounded to T.
template <typename T>
METAL_FUNC void rmsnorm_fwd_store(device const T* x, device T* out, ulong base, uint cols, float rs, uint tid,
                                  uint nthreads, bool aligned) {
  for (uint c = golf_vw * tid; c < cols; c += golf_vw * nthreads) {
    const uint n = golf_chunk_len(c, cols);
    golf_storef4(out, base + c, n, golf_loadf4(x, base + c, n, aligned) * rs, aligned);
  }
}

// rmsnorm_bwd_dot_part is thread tid's share of Σ_c dout·x̂ over the row at
// base, x̂ = x·rs, over its chunks in lane order.
template <typename T>
METAL_FUNC float rmsnorm_bwd_dot_part(device const T* dout, device const T* x, ulong base, uint cols, float rs,
                                      uint tid, uint nthreads, bool aligned) {
  float dot = 0.0f;
  for (uint c = golf_vw * tid; c < cols; c += golf_vw * nthreads) {
    const uint n = golf_chunk_len(c, cols);
    const float4 d = golf_loadf4(dout, base + c, n, aligned);
    const float4 v = golf_loadf4(x, base + c, n, aligned);
    for (uint k = 0; k < n; k++) {
      dot += d[k] * (v[k] * rs);
    }
  }
  return dot;
}

// rmsnorm_bwd_chunk is the chunk of n elements at i of RMSNorm's backward
// before rounding, rs·(dout − x·rs·m) + dres (dres only when has_res),
// with m the row's mean of dout·x̂. The chunk of dres is read before the
// caller stores it, so the destination may be dres.
template <typename T>
METAL_FUNC float4 rmsnorm_bwd_chunk(device const T* dout, device const T* x, device const T* dres, uint has_res,
                                    ulong i, uint n, float rs, float m, bool aligned) {
  const float4 v = golf_loadf4(x, i, n, aligned);
  const float4 g = golf_loadf4(dout, i, n, aligned);
  float4 d;
  for (uint k = 0; k < golf_vw; k++) {
    d[k] = rs * (g[k] - v[k] * rs * m);
  }
  if (has_res != 0) {
    const float4 r = golf_loadf4(dres, i, n, aligned);
    for (uint k = 0; k < golf_vw; k++) {
      d[k] += r[k];
    }
  }
  return d;
}

// resid_mix_elem is the resid-mix forward of one element, m0·x + m1·x0.
METAL_FUNC float resid_mix_elem(float m0, float m1, float x, float x0) {
  return m0 * x + m1 * x0;
}

// resid_mix_chunk is resid_mix_elem of the four lanes.
METAL_FUNC float4 resid_mix_chunk(float4 m0, float4 m1, float4 x, float4 x0) {
  float4 r;
  for (uint k = 0; k < golf_vw; k++) {
    r[k] = resid_mix_elem(m0[k], m1[k], x[k], x0[k]);
  }
  return r;
}

// resid_mix_bwd_chunk is the resid-mix backward of the chunk of n
// elements at i from its incoming gradient g: dx = m0·g (rounded to T),
// dx0 += m1·g, and per lane k g·x, g·x0 added into acc[j + k] and
// acc[j0 + k] (the columns' running sums, in thread, threadgroup or device
// memory).
template <typename T, typename P>
METAL_FUNC void resid_mix_bwd_chunk(float4 g, float4 m0, float4 m1, device const T* x, device const T* x0,
                                    device T* dx, device float* dx0, ulong i, uint n, P acc, uint j, uint j0,
                                    bool aligned) {
  const float4 v = golf_loadf4(x, i, n, aligned);
  const float4 v0 = golf_loadf4(x0, i, n, aligned);
  float4 d0 = golf_load4(static_cast<device const float*>(dx0), i, n, aligned);
  float4 d;
  for (uint k = 0; k < golf_vw; k++) {
    d[k] = m0[k] * g[k];
    d0[k] += m1[k] * g[k];
  }
  golf_storef4(dx, i, n, d, aligned);
  golf_store4(dx0, i, n, d0, aligned);
  for (uint k = 0; k < n; k++) {
    acc[j + k] += g[k] * v[k];
    acc[j0 + k] += g[k] * v0[k];
  }
}

// golf_axpy4 is axpy's update of a chunk, d + alpha·v lane by lane:
// axpy_elems (elementwise.metal) and Muon's transposed update muon_axpy_t
// (muon.metal) both compute it here, so the same bits.
METAL_FUNC float4 golf_axpy4(float4 d, float4 v, float alpha) {
  for (uint k = 0; k < golf_vw; k++) {
    d[k] += alpha * v[k];
  }
  return d;
}

// scaled_add_elem is the scaled add of one element, x + s·y.
METAL_FUNC float scaled_add_elem(float x, float y, float s) {
  return x + s * y;
}

// scaled_add_chunk is scaled_add_elem of the four lanes.
METAL_FUNC float4 scaled_add_chunk(float4 x, float4 y, float4 s) {
  float4 r;
  for (uint k = 0; k < golf_vw; k++) {
    r[k] = scaled_add_elem(x[k], y[k], s[k]);
  }
  return r;
}

#endif  // GOLF_ROWS_H

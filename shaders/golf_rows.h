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

// golf_row_block is the row range [r0, r1) of row block `block` when rows
// are split into nblocks blocks of ceil(rows / nblocks) (the last ones may
// be short or empty).
METAL_FUNC uint2 golf_row_block(uint rows, uint nblocks, uint block) {
  const uint chunk = (rows + nblocks - 1) / nblocks;
  const uint r0 = metal::min(rows, block * chunk);
  return uint2(r0, metal::min(rows, r0 + chunk));
}

// rmsnorm_sq_add is ss + v², the one step of RMSNorm's sum of squares.
METAL_FUNC float rmsnorm_sq_add(float ss, float v) {
  return ss + v * v;
}

// rmsnorm_sumsq_part is thread tid's share of Σ_c x[base + c]², over
// c = tid, tid + nthreads, ... < cols.
template <typename T>
METAL_FUNC float rmsnorm_sumsq_part(device const T* x, ulong base, uint cols, uint tid, uint nthreads) {
  float ss = 0.0f;
  for (uint c = tid; c < cols; c += nthreads) {
    ss = rmsnorm_sq_add(ss, static_cast<float>(x[base + c]));
  }
  return ss;
}

// rmsnorm_rstd is 1/sqrt(sumsq/cols + eps).
METAL_FUNC float rmsnorm_rstd(float sumsq, uint cols, float eps) {
  return 1.0f / metal::sqrt(sumsq / static_cast<float>(cols) + eps);
}

// rmsnorm_fwd_store writes thread tid's elements of the row at base,
// out = x·rs rounded to T.
template <typename T>
METAL_FUNC void rmsnorm_fwd_store(device const T* x, device T* out, ulong base, uint cols, float rs, uint tid,
                                  uint nthreads) {
  for (uint c = tid; c < cols; c += nthreads) {
    out[base + c] = static_cast<T>(static_cast<float>(x[base + c]) * rs);
  }
}

// rmsnorm_bwd_dot_part is thread tid's share of Σ_c dout·x̂ over the row at
// base, x̂ = x·rs.
template <typename T>
METAL_FUNC float rmsnorm_bwd_dot_part(device const T* dout, device const T* x, ulong base, uint cols, float rs,
                                      uint tid, uint nthreads) {
  float dot = 0.0f;
  for (uint c = tid; c < cols; c += nthreads) {
    dot += static_cast<float>(dout[base + c]) * (static_cast<float>(x[base + c]) * rs);
  }
  return dot;
}

// rmsnorm_bwd_elem is element i of RMSNorm's backward before rounding,
// rs·(dout − x·rs·m) + dres (dres only when has_res), with m the row's
// mean of dout·x̂. dres[i] is read before the caller stores element i, so
// the destination may be dres.
template <typename T>
METAL_FUNC float rmsnorm_bwd_elem(device const T* dout, device const T* x, device const T* dres, uint has_res,
                                  ulong i, float rs, float m) {
  const float v = static_cast<float>(x[i]);
  float d = rs * (static_cast<float>(dout[i]) - v * rs * m);
  if (has_res != 0) {
    d += static_cast<float>(dres[i]);
  }
  return d;
}

// resid_mix_elem is the resid-mix forward of one element, m0·x + m1·x0.
METAL_FUNC float resid_mix_elem(float m0, float m1, float x, float x0) {
  return m0 * x + m1 * x0;
}

// resid_mix_bwd_elem is the resid-mix backward of element i from its
// incoming gradient g: dx[i] = m0·g (rounded to T), dx0[i] += m1·g, and
// g·x[i], g·x0[i] added into acc[j] and acc[j0] (a column's running sums,
// in thread, threadgroup or device memory).
template <typename T, typename P>
METAL_FUNC void resid_mix_bwd_elem(float g, float m0, float m1, device const T* x, device const T* x0, device T* dx,
                                   device float* dx0, ulong i, P acc, uint j, uint j0) {
  dx[i] = static_cast<T>(m0 * g);
  dx0[i] += m1 * g;
  acc[j] += g * static_cast<float>(x[i]);
  acc[j0] += g * static_cast<float>(x0[i]);
}

// scaled_add_elem is the scaled add of one element, x + s·y.
METAL_FUNC float scaled_add_elem(float x, float y, float s) {
  return x + s * y;
}

#endif  // GOLF_ROWS_H

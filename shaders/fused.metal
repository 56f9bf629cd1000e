// fused: RMSNorm fused with its neighbours, bit for bit the unfused
// sequences (backend.Backend's fused ops):
//
//	mix = T(m0·x + m1·x0);  h, rstd = RMSNorm(mix)           (resid_mix_rmsnorm_fwd)
//	out = T(x + s·y);       h, rstd = RMSNorm(out)           (scaled_add_rmsnorm_fwd)
//	dm = T(RMSNorm_bwd(dout, xm, rstd) + dres);               (rmsnorm_resid_mix_bwd)
//	    dx = m0·dm, dx0 += m1·dm, partials of Σ dm·x, Σ dm·x0
//	x, x0, y, mix, out, h, dout, xm, dres, dx T (N, C); rstd float (N);
//	mix weights m float (2, C); s float (C); dx0 float (N, C)
//
// Each is rmsnorm.metal's row kernel with the neighbouring op's elements
// computed in its first sweep over the row (forward: one threadgroup per
// row) or in its store sweep (backward: one threadgroup per row block of
// resid_mix_bwd, running its rows in order): the intermediate is rounded
// to T exactly where the unfused sequence stores it, and what follows is
// computed from the rounded value. The code is golf_rows.h's, called as
// the unfused kernels call it; the host dispatches the threadgroup size
// the unfused kernel would have (metal/fused.go), so the row sums have the
// same order, and the results the same bits. What is saved is the
// intermediate's trip through memory: forward its re-read, backward its
// store and its load.
// Host names: resid_mix_rmsnorm_fwd_<fl>_<T>, scaled_add_rmsnorm_fwd_<fl>_<T>,
// rmsnorm_resid_mix_bwd_<fl>_<T>.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_rows.h"
using namespace metal;

// rmsnorm_resid_mix_tg_cols is the widest row whose column sums
// rmsnorm_resid_mix_bwd keeps in threadgroup memory (2 floats a column);
// wider rows keep them in the row block's own slots of partials.
constant constexpr uint rmsnorm_resid_mix_tg_cols = 1024;

// resid_mix_rmsnorm_sweep stores thread tid's elements of the mixed row,
// mix = T(m0·x + m1·x0), and returns its share of Σ mix² (of the rounded
// values, as RMSNorm reads them back).
template <typename T>
inline float resid_mix_rmsnorm_sweep(
    device const T* x, device const T* x0, device const float* mixw, device T* mix,
    ulong base, uint cols, uint tid, uint nthreads, bool aligned) {
  float ss = 0.0f;
  for (uint c = golf_vw * tid; c < cols; c += golf_vw * nthreads) {
    const uint n = golf_chunk_len(c, cols);
    const vec<T, 4> v = golf_round<T>(resid_mix_chunk(golf_load4(mixw, c, n, aligned),
                                                      golf_load4(mixw, ulong(cols) + c, n, aligned),
                                                      golf_loadf4(x, base + c, n, aligned),
                                                      golf_loadf4(x0, base + c, n, aligned)));
    golf_store4(mix, base + c, n, v, aligned);
    ss = rmsnorm_sq_add4(ss, golf_widen(v), n);
  }
  return ss;
}

// resid_mix_rmsnorm_fwd_simd: the resid mix and the RMSNorm of the mixed
// row, simd flavour; one threadgroup per row, as rmsnorm_fwd_simd.
// Baseline (N = 8192, C = 512, bf16): 6·N·C ≈ 25 MFLOP; bytes: x and x0
// read, mix and h written (mix re-read from cache), 4·N·C·2 + 4·N + 8·C
// ≈ 33.6 MB (the unfused pair: 42 MB); 128 B threadgroup memory, 128
// threads (one 4-element chunk each); roofline max(7 µs, 336 µs) ≈ 0.34 ms
// (bandwidth).
template <typename T>
[[kernel]] void resid_mix_rmsnorm_fwd_simd(
    device const T* x [[buffer(0)]],          // (N, C)
    device const T* x0 [[buffer(1)]],         // (N, C)
    device const float* mixw [[buffer(2)]],   // (2, C)
    device T* mix [[buffer(3)]],              // (N, C)
    device T* h [[buffer(4)]],                // (N, C)
    device float* rstd [[buffer(5)]],         // (N)
    constant RMSNormArgs& args [[buffer(6)]],
    constant uint& aligned [[buffer(7)]],     // 1: every chunk moves as one vector
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[32];  // one sum of squares per simdgroup
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.cols;
  const float ss = resid_mix_rmsnorm_sweep(x, x0, mixw, mix, base, args.cols, tid, nthreads, aligned != 0);
  const float rs = rmsnorm_rstd(golf_row_sum_simd(ss, partial, lane, sg, nthreads), args.cols, args.eps);
  if (tid == 0) {
    rstd[row] = rs;
  }
  rmsnorm_fwd_store(mix, h, base, args.cols, rs, tid, nthreads, aligned != 0);
}

// resid_mix_rmsnorm_fwd_portable: as the simd flavour, with
// rmsnorm_fwd_portable's tree reduction (4 KB of threadgroup memory).
template <typename T>
[[kernel]] void resid_mix_rmsnorm_fwd_portable(
    device const T* x [[buffer(0)]],          // (N, C)
    device const T* x0 [[buffer(1)]],         // (N, C)
    device const float* mixw [[buffer(2)]],   // (2, C)
    device T* mix [[buffer(3)]],              // (N, C)
    device T* h [[buffer(4)]],                // (N, C)
    device float* rstd [[buffer(5)]],         // (N)
    constant RMSNormArgs& args [[buffer(6)]],
    constant uint& aligned [[buffer(7)]],     // 1: every chunk moves as one vector
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];  // one partial sum per thread
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.cols;
  const float ss = resid_mix_rmsnorm_sweep(x, x0, mixw, mix, base, args.cols, tid, nthreads, aligned != 0);
  const float rs = rmsnorm_rstd(golf_row_sum_portable(ss, scratch, tid, nthreads), args.cols, args.eps);
  if (tid == 0) {
    rstd[row] = rs;
  }
  rmsnorm_fwd_store(mix, h, base, args.cols, rs, tid, nthreads, aligned != 0);
}

// scaled_add_rmsnorm_sweep stores thread tid's elements of the sum row,
// out = T(x + s·y) (s = 1 when has_s = 0), and returns its share of Σ out²
// of the rounded values. out may be x: each element is read, then
// written, by the same thread.
template <typename T>
inline float scaled_add_rmsnorm_sweep(
    device const T* x, device const T* y, device const float* s, device T* out, uint has_s,
    ulong base, uint cols, uint tid, uint nthreads, bool aligned) {
  float ss = 0.0f;
  for (uint c = golf_vw * tid; c < cols; c += golf_vw * nthreads) {
    const uint n = golf_chunk_len(c, cols);
    const float4 sc = has_s != 0 ? golf_load4(s, c, n, aligned) : float4(1.0f);
    const vec<T, 4> v = golf_round<T>(
        scaled_add_chunk(golf_loadf4(x, base + c, n, aligned), golf_loadf4(y, base + c, n, aligned), sc));
    golf_store4(out, base + c, n, v, aligned);
    ss = rmsnorm_sq_add4(ss, golf_widen(v), n);
  }
  return ss;
}

// scaled_add_rmsnorm_fwd_simd: the scaled residual add and the RMSNorm of
// the sum row, simd flavour; one threadgroup per row, as rmsnorm_fwd_simd.
// out may alias x.
// Baseline (N = 8192, C = 512, bf16): 5·N·C ≈ 21 MFLOP; bytes: x and y
// read, out and h written (out re-read from cache), 4·N·C·2 + 4·N + 4·C
// ≈ 33.6 MB (the unfused pair: 42 MB); 128 B threadgroup memory, 128
// threads (one 4-element chunk each); roofline max(6 µs, 336 µs) ≈ 0.34 ms
// (bandwidth).
template <typename T>
[[kernel]] void scaled_add_rmsnorm_fwd_simd(
    device const T* x [[buffer(0)]],          // (N, C)
    device const T* y [[buffer(1)]],          // (N, C)
    device const float* s [[buffer(2)]],      // (C), unread when has_s = 0
    device T* out [[buffer(3)]],              // (N, C), may alias x
    device T* h [[buffer(4)]],                // (N, C)
    device float* rstd [[buffer(5)]],         // (N)
    constant AddNormArgs& args [[buffer(6)]],
    constant uint& aligned [[buffer(7)]],     // 1: every chunk moves as one vector
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[32];  // one sum of squares per simdgroup
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.cols;
  const float ss = scaled_add_rmsnorm_sweep(x, y, s, out, args.has_s, base, args.cols, tid, nthreads, aligned != 0);
  const float rs = rmsnorm_rstd(golf_row_sum_simd(ss, partial, lane, sg, nthreads), args.cols, args.eps);
  if (tid == 0) {
    rstd[row] = rs;
  }
  rmsnorm_fwd_store(out, h, base, args.cols, rs, tid, nthreads, aligned != 0);
}

// scaled_add_rmsnorm_fwd_portable: as the simd flavour, with
// rmsnorm_fwd_portable's tree reduction (4 KB of threadgroup memory).
template <typename T>
[[kernel]] void scaled_add_rmsnorm_fwd_portable(
    device const T* x [[buffer(0)]],          // (N, C)
    device const T* y [[buffer(1)]],          // (N, C)
    device const float* s [[buffer(2)]],      // (C), unread when has_s = 0
    device T* out [[buffer(3)]],              // (N, C), may alias x
    device T* h [[buffer(4)]],                // (N, C)
    device float* rstd [[buffer(5)]],         // (N)
    constant AddNormArgs& args [[buffer(6)]],
    constant uint& aligned [[buffer(7)]],     // 1: every chunk moves as one vector
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];  // one partial sum per thread
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.cols;
  const float ss = scaled_add_rmsnorm_sweep(x, y, s, out, args.has_s, base, args.cols, tid, nthreads, aligned != 0);
  const float rs = rmsnorm_rstd(golf_row_sum_portable(ss, scratch, tid, nthreads), args.cols, args.eps);
  if (tid == 0) {
    rstd[row] = rs;
  }
  rmsnorm_fwd_store(out, h, base, args.cols, rs, tid, nthreads, aligned != 0);
}

// rmsnorm_resid_mix_zero clears thread tid's column sums, acc[c] and
// acc[cols + c].
template <typename P>
inline void rmsnorm_resid_mix_zero(P acc, uint cols, uint tid, uint nthreads) {
  for (uint c = golf_vw * tid; c < cols; c += golf_vw * nthreads) {
    for (uint k = 0; k < golf_chunk_len(c, cols); k++) {
      acc[c + k] = 0.0f;
      acc[cols + c + k] = 0.0f;
    }
  }
}

// rmsnorm_resid_mix_row is the store sweep of one row: per element, dm =
// T(RMSNorm's backward) as rmsnorm_bwd stores it, then resid_mix_bwd's
// element from dm, its column sums added into acc[c] and acc[cols + c].
template <typename T, typename P>
inline void rmsnorm_resid_mix_row(
    device const T* dout, device const T* xm, device const T* dres, device const T* x, device const T* x0,
    device const float* mixw, device T* dx, device float* dx0, P acc,
    ulong base, uint cols, uint has_res, float rs, float m, uint tid, uint nthreads, bool aligned) {
  for (uint c = golf_vw * tid; c < cols; c += golf_vw * nthreads) {
    const ulong i = base + c;
    const uint n = golf_chunk_len(c, cols);
    const vec<T, 4> dm = golf_round<T>(rmsnorm_bwd_chunk(dout, xm, dres, has_res, i, n, rs, m, aligned));
    resid_mix_bwd_chunk(golf_widen(dm), golf_load4(mixw, c, n, aligned), golf_load4(mixw, ulong(cols) + c, n, aligned),
                        x, x0, dx, dx0, i, n, acc, c, cols + c, aligned);
  }
}

// rmsnorm_resid_mix_rows_simd runs the rows [rows.x, rows.y) in order, each
// with rmsnorm_bwd_simd's row sum, accumulating the column sums into acc.
template <typename T, typename P, typename Q>
inline void rmsnorm_resid_mix_rows_simd(
    device const T* dout, device const T* xm, device const float* rstd, device const T* dres, device const T* x,
    device const T* x0, device const float* mixw, device T* dx, device float* dx0, P acc, Q partial,
    uint2 rows, uint cols, uint has_res, uint tid, uint nthreads, uint lane, uint sg, bool aligned) {
  rmsnorm_resid_mix_zero(acc, cols, tid, nthreads);
  for (uint r = rows.x; r < rows.y; r++) {
    const ulong base = ulong(r) * cols;
    const float rs = rstd[r];
    const float dot = rmsnorm_bwd_dot_part(dout, xm, base, cols, rs, tid, nthreads, aligned);
    const float total = golf_row_sum_simd(dot, partial, lane, sg, nthreads);
    threadgroup_barrier(mem_flags::mem_threadgroup);  // every thread has read partial
    rmsnorm_resid_mix_row(dout, xm, dres, x, x0, mixw, dx, dx0, acc, base, cols, has_res, rs,
                          total / static_cast<float>(cols), tid, nthreads, aligned);
  }
}

// rmsnorm_resid_mix_rows_portable: as rmsnorm_resid_mix_rows_simd, with
// rmsnorm_bwd_portable's row sum.
template <typename T, typename P, typename Q>
inline void rmsnorm_resid_mix_rows_portable(
    device const T* dout, device const T* xm, device const float* rstd, device const T* dres, device const T* x,
    device const T* x0, device const float* mixw, device T* dx, device float* dx0, P acc, Q scratch,
    uint2 rows, uint cols, uint has_res, uint tid, uint nthreads, bool aligned) {
  rmsnorm_resid_mix_zero(acc, cols, tid, nthreads);
  for (uint r = rows.x; r < rows.y; r++) {
    const ulong base = ulong(r) * cols;
    const float rs = rstd[r];
    const float dot = rmsnorm_bwd_dot_part(dout, xm, base, cols, rs, tid, nthreads, aligned);
    const float total = golf_row_sum_portable(dot, scratch, tid, nthreads);
    threadgroup_barrier(mem_flags::mem_threadgroup);  // every thread has read scratch[0]
    rmsnorm_resid_mix_row(dout, xm, dres, x, x0, mixw, dx, dx0, acc, base, cols, has_res, rs,
                          total / static_cast<float>(cols), tid, nthreads, aligned);
  }
}

// rmsnorm_resid_mix_bwd_simd: RMSNorm's backward and resid mix's backward
// in one sweep, simd flavour; dm (RMSNorm's dx) is rounded to T but never
// stored. Threadgroup rb of the grid's RB is resid_mix_bwd's row block rb
// (golf_row_block: the same RB and the same rows), and runs its rows in
// order, each as rmsnorm_bwd_simd runs it; thread tid owns the columns
// c ≡ tid (mod nthreads) of every row, so each column's sums over the
// block, Σ dm·x and Σ dm·x0, are added in row order as resid_mix_bwd adds
// them, then written to partials[rb, 0, c] and partials[rb, 1, c] for
// resid_mix_dmix. dres is read only when has_res = 1; nothing aliases.
// Baseline (N = 8192, C = 512, bf16; RB = 128): 14·N·C ≈ 59 MFLOP; bytes:
// dout, xm, dres, x, x0 read, dx written, 6·N·C·2, dx0 read and written
// (2·N·C·4), rstd, partials RB·2C·4 ≈ 84.4 MB (the unfused pair: 101 MB,
// dm's store and load being the difference); 8.1 KB threadgroup memory
// (the column sums of rows up to C = 1024), 128 threads, RB threadgroups;
// roofline max(16 µs, 844 µs) ≈ 0.84 ms (bandwidth).
template <typename T>
[[kernel]] void rmsnorm_resid_mix_bwd_simd(
    device const T* dout [[buffer(0)]],       // (N, C)
    device const T* xm [[buffer(1)]],         // (N, C)
    device const float* rstd [[buffer(2)]],   // (N)
    device const T* dres [[buffer(3)]],       // (N, C) when has_res
    device const T* x [[buffer(4)]],          // (N, C)
    device const T* x0 [[buffer(5)]],         // (N, C)
    device const float* mixw [[buffer(6)]],   // (2, C)
    device T* dx [[buffer(7)]],               // (N, C)
    device float* dx0 [[buffer(8)]],          // (N, C)
    device float* partials [[buffer(9)]],     // (RB, 2, C)
    constant RMSNormBwdArgs& args [[buffer(10)]],
    constant uint& aligned [[buffer(11)]],    // 1: every chunk moves as one vector
    uint block [[threadgroup_position_in_grid]],
    uint nblocks [[threadgroups_per_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[32];                         // one Σ dout·x̂ per simdgroup
  threadgroup float acc[2 * rmsnorm_resid_mix_tg_cols];  // the block's column sums
  const uint2 rows = golf_row_block(args.rows, nblocks, block);
  device float* part = partials + ulong(block) * 2 * args.cols;
  if (args.cols > rmsnorm_resid_mix_tg_cols) {
    rmsnorm_resid_mix_rows_simd(dout, xm, rstd, dres, x, x0, mixw, dx, dx0, part, partial, rows, args.cols,
                                args.has_res, tid, nthreads, lane, sg, aligned != 0);
    return;
  }
  rmsnorm_resid_mix_rows_simd(dout, xm, rstd, dres, x, x0, mixw, dx, dx0, acc, partial, rows, args.cols,
                              args.has_res, tid, nthreads, lane, sg, aligned != 0);
  for (uint c = golf_vw * tid; c < args.cols; c += golf_vw * nthreads) {  // the columns this thread summed
    for (uint k = 0; k < golf_chunk_len(c, args.cols); k++) {
      part[c + k] = acc[c + k];
      part[args.cols + c + k] = acc[args.cols + c + k];
    }
  }
}

// rmsnorm_resid_mix_bwd_portable: as the simd flavour, with
// rmsnorm_bwd_portable's tree reduction (12 KB of threadgroup memory).
template <typename T>
[[kernel]] void rmsnorm_resid_mix_bwd_portable(
    device const T* dout [[buffer(0)]],       // (N, C)
    device const T* xm [[buffer(1)]],         // (N, C)
    device const float* rstd [[buffer(2)]],   // (N)
    device const T* dres [[buffer(3)]],       // (N, C) when has_res
    device const T* x [[buffer(4)]],          // (N, C)
    device const T* x0 [[buffer(5)]],         // (N, C)
    device const float* mixw [[buffer(6)]],   // (2, C)
    device T* dx [[buffer(7)]],               // (N, C)
    device float* dx0 [[buffer(8)]],          // (N, C)
    device float* partials [[buffer(9)]],     // (RB, 2, C)
    constant RMSNormBwdArgs& args [[buffer(10)]],
    constant uint& aligned [[buffer(11)]],    // 1: every chunk moves as one vector
    uint block [[threadgroup_position_in_grid]],
    uint nblocks [[threadgroups_per_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];                       // one partial Σ dout·x̂ per thread
  threadgroup float acc[2 * rmsnorm_resid_mix_tg_cols];  // the block's column sums
  const uint2 rows = golf_row_block(args.rows, nblocks, block);
  device float* part = partials + ulong(block) * 2 * args.cols;
  if (args.cols > rmsnorm_resid_mix_tg_cols) {
    rmsnorm_resid_mix_rows_portable(dout, xm, rstd, dres, x, x0, mixw, dx, dx0, part, scratch, rows, args.cols,
                                    args.has_res, tid, nthreads, aligned != 0);
    return;
  }
  rmsnorm_resid_mix_rows_portable(dout, xm, rstd, dres, x, x0, mixw, dx, dx0, acc, scratch, rows, args.cols,
                                  args.has_res, tid, nthreads, aligned != 0);
  for (uint c = golf_vw * tid; c < args.cols; c += golf_vw * nthreads) {  // the columns this thread summed
    for (uint k = 0; k < golf_chunk_len(c, args.cols); k++) {
      part[c + k] = acc[c + k];
      part[args.cols + c + k] = acc[args.cols + c + k];
    }
  }
}

#define instantiate_fused(tname, T)                                                                 \
  instantiate_kernel("resid_mix_rmsnorm_fwd_simd_" #tname, resid_mix_rmsnorm_fwd_simd, T)           \
  instantiate_kernel("resid_mix_rmsnorm_fwd_portable_" #tname, resid_mix_rmsnorm_fwd_portable, T)   \
  instantiate_kernel("scaled_add_rmsnorm_fwd_simd_" #tname, scaled_add_rmsnorm_fwd_simd, T)         \
  instantiate_kernel("scaled_add_rmsnorm_fwd_portable_" #tname, scaled_add_rmsnorm_fwd_portable, T) \
  instantiate_kernel("rmsnorm_resid_mix_bwd_simd_" #tname, rmsnorm_resid_mix_bwd_simd, T)           \
  instantiate_kernel("rmsnorm_resid_mix_bwd_portable_" #tname, rmsnorm_resid_mix_bwd_portable, T)

instantiate_fused(float, float)
instantiate_fused(half, half)
instantiate_fused(bfloat, bfloat)

// fused: neighbouring row ops in one kernel, bit for bit the unfused
// sequence (backend.Backend's fused ops; cuda/fused.go launches them).
//
//	resid_mix_rmsnorm_fwd:  mix = round_T(m0·x + m1·x0) (stored), then
//	                        rstd, h = RMSNorm(mix)                        (ResidMixForward; RMSNormForward)
//	scaled_add_rmsnorm_fwd: out = round_T(x + s·y) (stored, may alias x),
//	                        then rstd, h = RMSNorm(out)                   (ScaledAddForward; RMSNormForward)
//	rmsnorm_resid_mix_bwd:  dm = round_T(RMSNorm backward of dout at xm, + dres) (not stored),
//	                        then resid mix's backward of dm: dx, dx0, the
//	                        row blocks' partials of dmix                  (RMSNormBackward; ResidMixBackward
//	                                                                       up to resid_mix_dmix)
//	x, x0, y, mix, out, h, dout, xm, dres, dx T (N, C); rstd float (N);
//	mixW, partials float (2, C) and (RB, 2, C); s float (C); dx0 float (N, C)
//
// Equality with the sequence holds by construction: every value comes
// from golf_rows.cuh's functions that the unfused kernels (rmsnorm.cu,
// resid_mix.cu, scaled_add.cu) call, over the same chunks, lanes, orders
// of summation and butterflies, and each intermediate the sequence stores
// in T is rounded to T before anything uses it.
//
// The forwards are rmsnorm_fwd's warp rows (8 rows per block of 256
// threads, grid ⌈N/8⌉) whose first pass computes each chunk of the
// residual (16-byte loads of x, x0 or y and of the weights, a 16-byte store
// of the rounded chunk) and sums its squares; the second pass takes the
// chunk from registers (the lane's first GOLF_ROW_CACHE chunks) or reads
// back what the lane stored, and writes h: one pass over the inputs instead
// of reading the residual again.
//
// The backward keeps resid_mix_bwd's row blocks: block rb of gridDim.x =
// RB covers rows golf_row_block(N, rb, RB) in tiles of
// RMSNORM_RESID_MIX_TILE rows. In a tile, each warp first computes the
// mean of dout·x̂ of its rows (golf_rmsnorm_bwd_mean: rmsnorm_bwd's sum),
// kept in shared memory with rstd; then each thread owns one chunk of
// columns and walks the tile's rows in order: dm from
// golf_rmsnorm_bwd_value (+ dres), rounded to T, then
// golf_resid_mix_bwd_chunk (dx, dx0 and the column sums, continued from
// the previous tile through the block's own partials). dm never reaches
// memory; dout and xm are read twice within a tile (the second an L2
// hit). resid_mix_dmix then adds the partials in block order, as after
// resid_mix_bwd.
//
// No tensor cores here: the tc flavour's names resolve to these kernels.
// Baseline (N = 8192, C = 512, bf16; cuda/cost.go's formulas): each
// forward 33.6 MB (the unfused pair 42 MB), the backward 83.9 MB with dres
// (the unfused pair 100.7 MB, dx0 in float read and written in both).
#include "golf_rows.cuh"

#define FUSED_THREADS 256
#define FUSED_ROWS (FUSED_THREADS / 32)
#define RMSNORM_RESID_MIX_TILE 64

template <typename T>
__device__ void resid_mix_rmsnorm_fwd(const T* x, const T* x0, const float* mixw, T* mix, T* h, float* rstd,
                                      RMSNormArgs args) {
  const uint row = blockIdx.x * FUSED_ROWS + threadIdx.x / 32u;
  if (row >= args.rows) {
    return;
  }
  constexpr uint n = golf_chunk<T>::n;
  const uint cols = args.cols;
  const u64 base = (u64)row * cols;
  auto compute = [&](uint j, uint valid) {
    const uint c0 = j * n;
    float a[n], b[n], m0[n], m1[n], o[n];
    golf_ld_row<T>(x + base + c0, valid, a);
    golf_ld_row<T>(x0 + base + c0, valid, b);
    golf_ld_f32(mixw + c0, valid, m0);
    golf_ld_f32(mixw + cols + c0, valid, m1);
#pragma unroll
    for (uint e = 0; e < n; e++) {
      o[e] = golf_resid_mix_value(m0[e], m1[e], a[e], b[e]);
    }
    const golf_chunk<T> r = golf_round_chunk<T>(o);
    golf_st_chunk<T>(mix + base + c0, valid, r);
    return r;
  };
  auto stored = [&](uint j, uint valid) { return golf_ld_chunk<T>(mix + base + j * n, valid); };
  golf_rmsnorm_row<T>(cols, args.eps, h + base, rstd + row, compute, stored);
}

// scaled_add_rmsnorm_row: one warp's row of scaled_add_rmsnorm_fwd, with
// s (HasS) or without (s = 1).
template <typename T, bool HasS>
__device__ __forceinline__ void scaled_add_rmsnorm_row(const T* x, const T* y, const float* s, T* out, T* h,
                                                       float* rstd, uint row, uint cols, float eps) {
  constexpr uint n = golf_chunk<T>::n;
  const u64 base = (u64)row * cols;
  auto compute = [&](uint j, uint valid) {
    const uint c0 = j * n;
    float a[n], b[n], sc[n], o[n];
    golf_ld_row<T>(x + base + c0, valid, a);
    golf_ld_row<T>(y + base + c0, valid, b);
    if (HasS) {
      golf_ld_f32(s + c0, valid, sc);
    } else {
#pragma unroll
      for (uint e = 0; e < n; e++) {
        sc[e] = 1.0f;
      }
    }
#pragma unroll
    for (uint e = 0; e < n; e++) {
      o[e] = golf_scaled_add_value(a[e], sc[e], b[e]);
    }
    const golf_chunk<T> r = golf_round_chunk<T>(o);
    golf_st_chunk<T>(out + base + c0, valid, r);
    return r;
  };
  auto stored = [&](uint j, uint valid) { return golf_ld_chunk<T>(out + base + j * n, valid); };
  golf_rmsnorm_row<T>(cols, eps, h + base, rstd + row, compute, stored);
}

// scaled_add_rmsnorm_fwd: out may alias x (each chunk of x is read by the
// lane that then writes that chunk of out).
template <typename T>
__device__ void scaled_add_rmsnorm_fwd(const T* x, const T* y, const float* s, T* out, T* h, float* rstd,
                                       ScaledAddArgs sa, RMSNormArgs args) {
  const uint row = blockIdx.x * FUSED_ROWS + threadIdx.x / 32u;
  if (row >= args.rows) {
    return;
  }
  if (sa.has_s != 0) {
    scaled_add_rmsnorm_row<T, true>(x, y, s, out, h, rstd, row, args.cols, args.eps);
  } else {
    scaled_add_rmsnorm_row<T, false>(x, y, s, out, h, rstd, row, args.cols, args.eps);
  }
}

// rmsnorm_resid_mix_bwd: dres is read only when nb.has_res = 1.
template <typename T>
__device__ void rmsnorm_resid_mix_bwd(const T* dout, const T* xm, const float* rstd, const T* dres, const T* x,
                                      const T* x0, const float* mixw, T* dx, float* dx0, float* partials,
                                      RMSNormBwdArgs nb, ResidMixArgs args) {
  __shared__ float tile_m[RMSNORM_RESID_MIX_TILE];
  __shared__ float tile_rs[RMSNORM_RESID_MIX_TILE];
  constexpr uint n = golf_chunk<T>::n;
  const uint cols = args.cols;
  const bool has_res = nb.has_res != 0;
  const uint nch = golf_chunks<T>(cols);
  const uint warp = threadIdx.x / 32u;
  uint r0, r1;
  golf_row_block(args.rows, blockIdx.x, gridDim.x, r0, r1);
  float* part = partials + (u64)blockIdx.x * 2u * cols;
  // At least one tile, so that an empty row block still writes its zero
  // partials (as resid_mix_bwd does).
  for (uint t0 = r0; t0 == r0 || t0 < r1; t0 += RMSNORM_RESID_MIX_TILE) {
    const uint t1 = min(r1, t0 + RMSNORM_RESID_MIX_TILE);
    for (uint r = t0 + warp; r < t1; r += FUSED_ROWS) {
      const u64 base = (u64)r * cols;
      const float rs = rstd[r];
      golf_chunk<T> cg[1], cx[1];
      const float m = golf_rmsnorm_bwd_mean<T, 1>(dout + base, xm + base, cols, rs, cg, cx);
      if (golf_lane() == 0) {
        tile_m[r - t0] = m;
        tile_rs[r - t0] = rs;
      }
    }
    __syncthreads();
    for (uint j = threadIdx.x; j < nch; j += blockDim.x) {
      const uint c0 = j * n;
      const uint valid = golf_chunk_valid<T>(cols, j);
      float m0[n], m1[n], sx[n], sx0[n];
      golf_ld_f32(mixw + c0, valid, m0);
      golf_ld_f32(mixw + cols + c0, valid, m1);
      if (t0 == r0) {
#pragma unroll
        for (uint e = 0; e < n; e++) {
          sx[e] = 0.0f;
          sx0[e] = 0.0f;
        }
      } else {
        golf_ld_f32(part + c0, valid, sx);
        golf_ld_f32(part + cols + c0, valid, sx0);
      }
      for (uint r = t0; r < t1; r++) {
        const u64 i = (u64)r * cols + c0;
        const float rs = tile_rs[r - t0];
        const float m = tile_m[r - t0];
        float g[n], v[n], res[n] = {}, d[n];
        golf_ld_row<T>(dout + i, valid, g);
        golf_ld_row<T>(xm + i, valid, v);
        if (has_res) {
          golf_ld_row<T>(dres + i, valid, res);
        }
#pragma unroll
        for (uint e = 0; e < n; e++) {
          d[e] = golf_rmsnorm_bwd_value(g[e], v[e], rs, m);
          if (has_res) {
            d[e] += res[e];
          }
        }
        const golf_chunk<T> dm = golf_round_chunk<T>(d);
        float gm[n];
#pragma unroll
        for (uint e = 0; e < n; e++) {
          gm[e] = to_f32(dm.e[e]);
        }
        golf_resid_mix_bwd_chunk<T>(gm, x, x0, dx, dx0, i, valid, m0, m1, sx, sx0);
      }
      golf_st_f32(part + c0, valid, sx);
      golf_st_f32(part + cols + c0, valid, sx0);
    }
    __syncthreads();  // the next tile's means overwrite tile_m
  }
}

#define FUSED_KERNELS(fl, tname, T)                                                                           \
  GOLF_KERNEL(GOLF_NAME(resid_mix_rmsnorm_fwd, fl, tname), FUSED_THREADS)(                                    \
      const T* x, const T* x0, const float* mixw, T* mix, T* h, float* rstd, RMSNormArgs args) {              \
    resid_mix_rmsnorm_fwd<T>(x, x0, mixw, mix, h, rstd, args);                                                \
  }                                                                                                           \
  GOLF_KERNEL(GOLF_NAME(scaled_add_rmsnorm_fwd, fl, tname), FUSED_THREADS)(                                   \
      const T* x, const T* y, const float* s, T* out, T* h, float* rstd, ScaledAddArgs sa, RMSNormArgs args) { \
    scaled_add_rmsnorm_fwd<T>(x, y, s, out, h, rstd, sa, args);                                               \
  }                                                                                                           \
  GOLF_KERNEL(GOLF_NAME(rmsnorm_resid_mix_bwd, fl, tname), FUSED_THREADS)(                                    \
      const T* dout, const T* xm, const float* rstd, const T* dres, const T* x, const T* x0, const float* mixw, \
      T* dx, float* dx0, float* partials, RMSNormBwdArgs nb, ResidMixArgs args) {                             \
    rmsnorm_resid_mix_bwd<T>(dout, xm, rstd, dres, x, x0, mixw, dx, dx0, partials, nb, args);                 \
  }

#define FUSED_INSTANTIATE(tname, T) FUSED_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(FUSED_INSTANTIATE)

// rmsnorm: RMSNorm without a weight, forward and backward
// (shaders/rmsnorm.metal in CUDA).
//
//	rstd[n]  = 1/sqrt(mean_c x[n,c]² + eps)                          (forward)
//	out[n,c] = x[n,c]·rstd[n]
//	dx[n,c]  = dres[n,c] + rstd[n]·(dout[n,c] − x̂[n,c]·mean_c'(dout·x̂))  (backward, x̂ = x·rstd)
//	x, out, dout, dres, dx T (N, C); rstd float (N)
//
// One warp per row, 8 rows per block of 256 threads (grid ⌈N/8⌉), over
// golf_rows.cuh's warp rows: lane l owns the row's 8-element chunks l,
// l + 32, ... (coalesced 16-byte accesses where the row is aligned, the
// same values element by element where not), sums in float in chunk
// order, and golf_warp_sum combines the lanes in a fixed butterfly (no
// shared memory, no barrier; any C, power of two or not). A warp whose
// row is past N returns as a whole, so no shuffle waits on it. The lane's
// first chunks stay in registers for the second pass. Results rounded
// once on store. The fused kernels of fused.cu run the same row code. No
// tensor cores here: the tc flavour's names resolve to these kernels.
// Baseline (N = 8192, C = 512, bf16): forward 16.8 MB, backward 25.2 MB
// (33.6 MB with dres); 5–10 µs at 3.35 TB/s (bandwidth-bound).
#include "golf_rows.cuh"

#define RMSNORM_THREADS 256
#define RMSNORM_ROWS (RMSNORM_THREADS / 32)

template <typename T>
__device__ void rmsnorm_fwd(const T* x, T* out, float* rstd, RMSNormArgs args) {
  const uint row = blockIdx.x * RMSNORM_ROWS + threadIdx.x / 32u;
  if (row >= args.rows) {
    return;
  }
  constexpr uint n = golf_chunk<T>::n;
  const u64 base = (u64)row * args.cols;
  const T* xr = x + base;
  auto load = [&](uint j, uint valid) { return golf_ld_chunk<T>(xr + j * n, valid); };
  golf_rmsnorm_row<T>(args.cols, args.eps, out + base, rstd + row, load, load);
}

// rmsnorm_bwd: dres is read only when has_res = 1 and may be the same
// buffer as dx (each lane reads a chunk of dres before it writes that
// chunk of dx, and no other lane touches it).
template <typename T>
__device__ void rmsnorm_bwd(const T* dout, const T* x, const float* rstd, const T* dres, T* dx,
                            RMSNormBwdArgs args) {
  const uint row = blockIdx.x * RMSNORM_ROWS + threadIdx.x / 32u;
  if (row >= args.rows) {
    return;
  }
  constexpr uint n = golf_chunk<T>::n;
  constexpr uint K = GOLF_ROW_CACHE;
  const u64 base = (u64)row * args.cols;
  const uint cols = args.cols;
  const bool has_res = args.has_res != 0;
  const float rs = rstd[row];
  golf_chunk<T> cg[K], cx[K];
  const float m = golf_rmsnorm_bwd_mean<T, K>(dout + base, x + base, cols, rs, cg, cx);
  golf_warp_chunks<K>(golf_chunks<T>(cols), golf_lane(), [&](uint j, uint slot) {
    const uint valid = golf_chunk_valid<T>(cols, j);
    const u64 i = base + j * n;
    float g[n], v[n], r[n] = {}, d[n];
    golf_widen<T>(slot < K ? cg[slot] : golf_ld_chunk<T>(dout + i, valid), g);
    golf_widen<T>(slot < K ? cx[slot] : golf_ld_chunk<T>(x + i, valid), v);
    if (has_res) {
      golf_ld_row<T>(dres + i, valid, r);
    }
#pragma unroll
    for (uint e = 0; e < n; e++) {
      d[e] = golf_rmsnorm_bwd_value(g[e], v[e], rs, m);
      if (has_res) {
        d[e] += r[e];
      }
    }
    golf_st_row<T>(dx + i, valid, d);
  });
}

#define RMSNORM_KERNELS(fl, tname, T)                                                                        \
  GOLF_KERNEL(GOLF_NAME(rmsnorm_fwd, fl, tname), RMSNORM_THREADS)(const T* x, T* out, float* rstd,           \
                                                                  RMSNormArgs args) {                        \
    rmsnorm_fwd<T>(x, out, rstd, args);                                                                      \
  }                                                                                                          \
  GOLF_KERNEL(GOLF_NAME(rmsnorm_bwd, fl, tname), RMSNORM_THREADS)(                                           \
      const T* dout, const T* x, const float* rstd, const T* dres, T* dx, RMSNormBwdArgs args) {             \
    rmsnorm_bwd<T>(dout, x, rstd, dres, dx, args);                                                           \
  }

#define RMSNORM_INSTANTIATE(tname, T) RMSNORM_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(RMSNORM_INSTANTIATE)

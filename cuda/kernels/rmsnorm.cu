// rmsnorm: RMSNorm without a weight, forward and backward
// (shaders/rmsnorm.metal in CUDA).
//
//	rstd[n]  = 1/sqrt(mean_c x[n,c]² + eps)                          (forward)
//	out[n,c] = x[n,c]·rstd[n]
//	dx[n,c]  = dres[n,c] + rstd[n]·(dout[n,c] − x̂[n,c]·mean_c'(dout·x̂))  (backward, x̂ = x·rstd)
//	x, out, dout, dres, dx T (N, C); rstd float (N)
//
// One warp per row, 8 rows per block of 256 threads (grid ⌈N/8⌉): each lane
// strides over the row (coalesced), sums in float, and golf_warp_sum
// combines the lanes in a fixed butterfly (no shared memory, no barrier;
// any C, power of two or not). A warp whose row is past N returns as a
// whole, so no shuffle waits on it. Results rounded once on store. No
// tensor cores here: the tc flavour's names resolve to these kernels.
// Baseline (N = 8192, C = 512, bf16): forward 16.8 MB, backward 25.2 MB
// (33.6 MB with dres); 5–10 µs at 3.35 TB/s (bandwidth-bound).
#include "golf_prelude.cuh"

#define RMSNORM_THREADS 256
#define RMSNORM_ROWS (RMSNORM_THREADS / 32)

template <typename T>
__device__ void rmsnorm_fwd(const T* x, T* out, float* rstd, RMSNormArgs args) {
  const uint row = blockIdx.x * RMSNORM_ROWS + threadIdx.x / 32u;
  const uint lane = golf_lane();
  if (row >= args.rows) {
    return;
  }
  const u64 base = (u64)row * args.cols;
  float ss = 0.0f;
  for (uint c = lane; c < args.cols; c += 32u) {
    const float v = to_f32(x[base + c]);
    ss += v * v;
  }
  ss = golf_warp_sum(ss);
  const float rs = 1.0f / sqrtf(ss / (float)args.cols + args.eps);
  if (lane == 0) {
    rstd[row] = rs;
  }
  for (uint c = lane; c < args.cols; c += 32u) {
    out[base + c] = from_f32<T>(to_f32(x[base + c]) * rs);
  }
}

// rmsnorm_bwd: dres is read only when has_res = 1 and may be the same
// buffer as dx (each lane reads dres[c] before it writes dx[c], and no other
// lane touches c).
template <typename T>
__device__ void rmsnorm_bwd(const T* dout, const T* x, const float* rstd, const T* dres, T* dx,
                            RMSNormBwdArgs args) {
  const uint row = blockIdx.x * RMSNORM_ROWS + threadIdx.x / 32u;
  const uint lane = golf_lane();
  if (row >= args.rows) {
    return;
  }
  const u64 base = (u64)row * args.cols;
  const float rs = rstd[row];
  float dot = 0.0f;
  for (uint c = lane; c < args.cols; c += 32u) {
    dot += to_f32(dout[base + c]) * (to_f32(x[base + c]) * rs);
  }
  const float m = golf_warp_sum(dot) / (float)args.cols;
  for (uint c = lane; c < args.cols; c += 32u) {
    const float v = to_f32(x[base + c]);
    float d = rs * (to_f32(dout[base + c]) - v * rs * m);
    if (args.has_res != 0) {
      d += to_f32(dres[base + c]);
    }
    dx[base + c] = from_f32<T>(d);
  }
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

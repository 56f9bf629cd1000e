// resid_mix: mixing the residual stream with the embedding stream, forward
// and backward (shaders/resid_mix.metal in CUDA).
//
//	out[n,c]   = mix[0,c]·x[n,c] + mix[1,c]·x0[n,c]      (forward)
//	dx[n,c]    = mix[0,c]·dout[n,c]                      (backward, overwritten)
//	dx0[n,c]  += mix[1,c]·dout[n,c]
//	dmix[0,c] += Σn dout·x;  dmix[1,c] += Σn dout·x0
//	x, x0, out, dout, dx T (N, C); mix, dmix float (2, C); dx0 float (N, C)
//
// The forward is elementwise, one thread per chunk of a row (golf_rows.cuh:
// 8 elements, 16-byte accesses where the row is aligned). The backward is column-parallel: block
// (bx, rb) of 256 threads, one chunk of columns per thread, row block rb of
// gridDim.y = RB (golf_row_block); it writes dx and dx0 and the per-block
// sums of dout·x and dout·x0, each column's rows added in order from 0,
// into partials[rb, 0, c] and partials[rb, 1, c]; resid_mix_dmix adds, per
// element of dmix, the RB partials in block order: deterministic without
// atomics. fused.cu's rmsnorm_resid_mix_bwd runs the same per-element code
// over the same row blocks, and resid_mix_dmix after it. No tensor cores
// here: the tc flavour's names resolve to these kernels.
// Baseline (N = 8192, C = 512, bf16): forward 25.2 MB (7.5 µs at
// 3.35 TB/s), backward 67.6 MB (20 µs).
#include "golf_rows.cuh"

#define RESID_MIX_THREADS 256

template <typename T>
__device__ void resid_mix_fwd(const T* x, const T* x0, const float* mix, T* out, ResidMixArgs args) {
  constexpr uint n = golf_chunk<T>::n;
  const uint nch = golf_chunks<T>(args.cols);
  const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (u64)args.rows * nch) {
    return;
  }
  const uint row = (uint)(t / nch);
  const uint j = (uint)(t % nch);
  const uint c0 = j * n;
  const uint valid = golf_chunk_valid<T>(args.cols, j);
  const u64 i = (u64)row * args.cols + c0;
  float a[n], b[n], m0[n], m1[n], o[n];
  golf_ld_row<T>(x + i, valid, a);
  golf_ld_row<T>(x0 + i, valid, b);
  golf_ld_f32(mix + c0, valid, m0);
  golf_ld_f32(mix + args.cols + c0, valid, m1);
#pragma unroll
  for (uint e = 0; e < n; e++) {
    o[e] = golf_resid_mix_value(m0[e], m1[e], a[e], b[e]);
  }
  golf_st_row<T>(out + i, valid, o);
}

template <typename T>
__device__ void resid_mix_bwd(const T* dout, const T* x, const T* x0, const float* mix, T* dx, float* dx0,
                              float* partials, ResidMixArgs args) {
  constexpr uint n = golf_chunk<T>::n;
  const uint j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= golf_chunks<T>(args.cols)) {
    return;
  }
  const uint c0 = j * n;
  const uint valid = golf_chunk_valid<T>(args.cols, j);
  uint r0, r1;
  golf_row_block(args.rows, blockIdx.y, gridDim.y, r0, r1);
  float m0[n], m1[n];
  golf_ld_f32(mix + c0, valid, m0);
  golf_ld_f32(mix + args.cols + c0, valid, m1);
  float sx[n], sx0[n];
#pragma unroll
  for (uint e = 0; e < n; e++) {
    sx[e] = 0.0f;
    sx0[e] = 0.0f;
  }
  for (uint r = r0; r < r1; r++) {
    const u64 i = (u64)r * args.cols + c0;
    float g[n];
    golf_ld_row<T>(dout + i, valid, g);
    golf_resid_mix_bwd_chunk<T>(g, x, x0, dx, dx0, i, valid, m0, m1, sx, sx0);
  }
  const u64 base = (u64)blockIdx.y * 2u * args.cols;
  golf_st_f32(partials + base + c0, valid, sx);
  golf_st_f32(partials + base + args.cols + c0, valid, sx0);
}

// resid_mix_dmix: dmix[j] += Σ_rb partials[rb, j] in block order, one thread
// per element j of dmix; args.rows is RB and args.cols the width 2·C of a
// block's partials here. T is unused.
template <typename T>
__device__ void resid_mix_dmix(const float* partials, float* dmix, ResidMixArgs args) {
  const uint j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= args.cols) {
    return;
  }
  float sum = 0.0f;
  for (uint rb = 0; rb < args.rows; rb++) {
    sum += partials[(u64)rb * args.cols + j];
  }
  dmix[j] += sum;
}

#define RESID_MIX_KERNELS(fl, tname, T)                                                                      \
  GOLF_KERNEL(GOLF_NAME(resid_mix_fwd, fl, tname), RESID_MIX_THREADS)(                                       \
      const T* x, const T* x0, const float* mix, T* out, ResidMixArgs args) {                                \
    resid_mix_fwd<T>(x, x0, mix, out, args);                                                                 \
  }                                                                                                          \
  GOLF_KERNEL(GOLF_NAME(resid_mix_bwd, fl, tname), RESID_MIX_THREADS)(                                       \
      const T* dout, const T* x, const T* x0, const float* mix, T* dx, float* dx0, float* partials,          \
      ResidMixArgs args) {                                                                                   \
    resid_mix_bwd<T>(dout, x, x0, mix, dx, dx0, partials, args);                                             \
  }                                                                                                          \
  GOLF_KERNEL(GOLF_NAME(resid_mix_dmix, fl, tname), RESID_MIX_THREADS)(const float* partials, float* dmix,   \
                                                                       ResidMixArgs args) {                  \
    resid_mix_dmix<T>(partials, dmix, args);                                                                 \
  }

#define RESID_MIX_INSTANTIATE(tname, T) RESID_MIX_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(RESID_MIX_INSTANTIATE)

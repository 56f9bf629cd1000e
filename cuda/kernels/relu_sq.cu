// relu_sq: the squared ReLU of the MLP, forward and backward
// (shaders/relu_sq.metal in CUDA).
//
//	out = max(x, 0)²          (forward)
//	dx  = 2·max(x, 0)·dout    (backward)
//	x, out, dout, dx T (n)
//
// One thread per element (grid ⌈n/256⌉ × 256), computed in float and
// rounded once on store. max(x, 0) is written x <= 0 ? 0 : x so that NaN
// passes through and −0 becomes +0, as Go's max in the CPU backend. No
// tensor cores here: the tc flavour's names resolve to these kernels.
// Baseline (the MLP hidden activation, N·F = 8192·1024 = 8.39M elements,
// bf16): forward 33.6 MB, backward 50.3 MB; at 3.35 TB/s (H100 SXM) 10 µs
// and 15 µs (bandwidth-bound).
#include "golf_prelude.cuh"

#define RELU_SQ_THREADS 256

template <typename T>
__device__ void relu_sq_fwd(const T* x, T* out, EltwiseArgs args) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= args.n) {
    return;
  }
  const float v = to_f32(x[i]);
  const float r = v <= 0.0f ? 0.0f : v;
  out[i] = from_f32<T>(r * r);
}

template <typename T>
__device__ void relu_sq_bwd(const T* dout, const T* x, T* dx, EltwiseArgs args) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= args.n) {
    return;
  }
  const float v = to_f32(x[i]);
  const float r = v <= 0.0f ? 0.0f : v;
  dx[i] = from_f32<T>(2.0f * r * to_f32(dout[i]));
}

#define RELU_SQ_KERNELS(fl, tname, T)                                                                    \
  GOLF_KERNEL(GOLF_NAME(relu_sq_fwd, fl, tname), RELU_SQ_THREADS)(const T* x, T* out, EltwiseArgs args) { \
    relu_sq_fwd<T>(x, out, args);                                                                         \
  }                                                                                                       \
  GOLF_KERNEL(GOLF_NAME(relu_sq_bwd, fl, tname), RELU_SQ_THREADS)(const T* dout, const T* x, T* dx,       \
                                                                  EltwiseArgs args) {                     \
    relu_sq_bwd<T>(dout, x, dx, args);                                                                    \
  }

#define RELU_SQ_INSTANTIATE(tname, T) RELU_SQ_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(RELU_SQ_INSTANTIATE)

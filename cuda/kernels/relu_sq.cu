// relu_sq: the squared ReLU of the MLP, forward and backward
// (shaders/relu_sq.metal in CUDA).
//
//	out = max(x, 0)²          (forward)
//	dx  = 2·max(x, 0)·dout    (backward)
//	x, out, dout, dx T (n)
//
// One thread per chunk of 8 elements (golf_rows.cuh: 16-byte accesses
// where the tensors' views are aligned, element by element where not; grid
// ⌈⌈n/8⌉/256⌉ × 256; Metal's relu_sq_fwd4/bwd4, its vector variants, are
// these kernels here), computed in float and rounded once on store. max(x, 0) is written x <= 0 ? 0 : x so that NaN
// passes through and −0 becomes +0, as Go's max in the CPU backend. No
// tensor cores here: the tc flavour's names resolve to these kernels.
// Baseline (the MLP hidden activation, N·F = 8192·1024 = 8.39M elements,
// bf16): forward 33.6 MB, backward 50.3 MB; at 3.35 TB/s (H100 SXM) 10 µs
// and 15 µs (bandwidth-bound).
#include "golf_rows.cuh"

#define RELU_SQ_THREADS 256

// relu_sq_r is max(v, 0), NaN passing through, −0 becoming +0.
GOLF_DEV float relu_sq_r(float v) { return v <= 0.0f ? 0.0f : v; }

template <typename T>
__device__ void relu_sq_fwd(const T* x, T* out, EltwiseArgs args) {
  constexpr uint n = GOLF_CHUNK;
  const uint j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= golf_chunks<T>(args.n)) {
    return;
  }
  const uint valid = golf_chunk_valid<T>(args.n, j);
  float v[n], o[n];
  golf_ld_row<T>(x + (u64)j * n, valid, v);
#pragma unroll
  for (uint e = 0; e < n; e++) {
    const float r = relu_sq_r(v[e]);
    o[e] = r * r;
  }
  golf_st_row<T>(out + (u64)j * n, valid, o);
}

template <typename T>
__device__ void relu_sq_bwd(const T* dout, const T* x, T* dx, EltwiseArgs args) {
  constexpr uint n = GOLF_CHUNK;
  const uint j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= golf_chunks<T>(args.n)) {
    return;
  }
  const uint valid = golf_chunk_valid<T>(args.n, j);
  float v[n], g[n], o[n];
  golf_ld_row<T>(x + (u64)j * n, valid, v);
  golf_ld_row<T>(dout + (u64)j * n, valid, g);
#pragma unroll
  for (uint e = 0; e < n; e++) {
    o[e] = 2.0f * relu_sq_r(v[e]) * g[e];
  }
  golf_st_row<T>(dx + (u64)j * n, valid, o);
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

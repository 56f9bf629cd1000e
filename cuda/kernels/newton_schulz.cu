// newton_schulz: the element-wise and reduction kernels of Muon's quintic
// Newton–Schulz orthogonalisation of g (R, C) (shaders/newton_schulz.metal
// in CUDA); its matrix products are cuBLASLt float GEMMs (or, without
// cuBLASLt, the gemm kernels of linear.cu). The host runs, with
// r = min(R, C), c = max(R, C):
//
//	sumsq:  partial[p] = Σ g² over the p-th grid-stride share of g
//	norm:   norm[0] = sqrt(Σp partial[p]) + NSEps          (one block)
//	scale:  X = g/norm[0] as (r, c) float (X = gᵀ/norm[0] when R > C)
//	        steps × (A = X·Xᵀ; B = NSC·A·A + NSB·A; X = B·X + NSA·X)  (GEMMs)
//	store:  out = X (transposed back when R > C), rounded to out's dtype
//
// The norm never leaves the device (no host sync). Every sum has a fixed
// order (grid strides, then golf_block_sum), so the result is
// deterministic. T is g's dtype (sumsq, scale) or out's (store); norm reads
// only float partials. NSEps = 1e-7 is backend.NSEps. 256 threads per
// block everywhere; sumsq runs at most 64 blocks, scale and store one
// thread per element. No tensor cores here: the tc flavour's names resolve
// to these kernels (cuda.Kernel.Name).
// Baseline (a 512×512 F32 gradient): 1–2 MB per pass, ≈ 1 µs each at
// 3.35 TB/s, against the 15 GEMMs of five steps.
#include "golf_prelude.cuh"

#define NEWTON_SCHULZ_THREADS 256
#define NEWTON_SCHULZ_EPS 1e-7f

template <typename T>
__device__ void newton_schulz_sumsq(const T* g, float* partial, ReduceArgs args) {
  __shared__ float scratch[32];
  const u64 stride = (u64)gridDim.x * blockDim.x;
  float s = 0.0f;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < args.n; i += stride) {
    const float v = to_f32(g[i]);
    s += v * v;
  }
  const float total = golf_block_sum(s, scratch);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = total;
  }
}

// newton_schulz_norm: norm[0] = sqrt(Σ partial[0..n)) + NSEps, ReduceArgs.n
// the number of partials; one block.
template <typename T>
__device__ void newton_schulz_norm(const float* partial, float* norm, ReduceArgs args) {
  __shared__ float scratch[32];
  float s = 0.0f;
  for (uint i = threadIdx.x; i < args.n; i += blockDim.x) {
    s += partial[i];
  }
  const float total = golf_block_sum(s, scratch);
  if (threadIdx.x == 0) {
    norm[0] = sqrtf(total) + NEWTON_SCHULZ_EPS;
  }
}

// newton_schulz_scale: X = g/norm[0] as float (r, c), one thread per
// element of X; when R > C, X[i, j] = g[j, i] (X is (C, R)). NSArgs rows,
// cols = R, C.
template <typename T>
__device__ void newton_schulz_scale(const T* g, const float* norm, float* x, NSArgs args) {
  const uint nrows = args.rows, ncols = args.cols;
  const uint idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= nrows * ncols) {
    return;
  }
  uint src = idx;
  if (nrows > ncols) {
    const uint i = idx / nrows, j = idx % nrows;  // X (C, R)
    src = j * ncols + i;
  }
  x[idx] = to_f32(g[src]) / norm[0];
}

// newton_schulz_store: out = X, transposed back when R > C, one thread per
// element of out.
template <typename T>
__device__ void newton_schulz_store(const float* x, T* out, NSArgs args) {
  const uint nrows = args.rows, ncols = args.cols;
  const uint idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= nrows * ncols) {
    return;
  }
  uint src = idx;
  if (nrows > ncols) {
    const uint i = idx / ncols, j = idx % ncols;  // out (R, C) from X (C, R)
    src = j * nrows + i;
  }
  out[idx] = from_f32<T>(x[src]);
}

#define NEWTON_SCHULZ_KERNELS(fl, tname, T)                                                                   \
  GOLF_KERNEL(GOLF_NAME(newton_schulz_sumsq, fl, tname), NEWTON_SCHULZ_THREADS)(const T* g, float* partial,   \
                                                                                ReduceArgs args) {            \
    newton_schulz_sumsq<T>(g, partial, args);                                                                 \
  }                                                                                                           \
  GOLF_KERNEL(GOLF_NAME(newton_schulz_norm, fl, tname), NEWTON_SCHULZ_THREADS)(const float* partial,          \
                                                                               float* norm, ReduceArgs args) { \
    newton_schulz_norm<T>(partial, norm, args);                                                               \
  }                                                                                                           \
  GOLF_KERNEL(GOLF_NAME(newton_schulz_scale, fl, tname), NEWTON_SCHULZ_THREADS)(                              \
      const T* g, const float* norm, float* x, NSArgs args) {                                                 \
    newton_schulz_scale<T>(g, norm, x, args);                                                                 \
  }                                                                                                           \
  GOLF_KERNEL(GOLF_NAME(newton_schulz_store, fl, tname), NEWTON_SCHULZ_THREADS)(const float* x, T* out,       \
                                                                                NSArgs args) {                \
    newton_schulz_store<T>(x, out, args);                                                                     \
  }

#define NEWTON_SCHULZ_INSTANTIATE(tname, T) NEWTON_SCHULZ_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(NEWTON_SCHULZ_INSTANTIATE)

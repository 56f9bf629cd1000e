// elementwise: Zero, Cast, Scale, Axpy and Reduce (shaders/elementwise.metal
// in CUDA).
//
//	zero:   x = 0                                     x T (n)
//	cast:   dst = round_D(src)                        src S, dst D (n)
//	scale:  x *= alpha                                x T (n); the host uses float
//	axpy:   dst += alpha·x                            dst float, x T (n)
//	reduce: dst[0] += Σ f(x[i]), f = x, x² or [x is ±Inf or NaN]
//	                                                  dst float (1), x T (n)
//
// Zero, Cast, Scale and Axpy run one thread per element (grid ⌈n/256⌉ ×
// 256), computed in float and rounded once on store. Host names as the
// Metal library's: zero_<fl>_<T>, cast_from_<S>_<fl>_<D> (elem = the
// destination), scale_<fl>_<T>, axpy_<fl>_<T>, reduce_{partial,final}_<fl>_<T>.
// No tensor cores here: the kernels are portable, and the tc flavour's
// names resolve to them (cuda.Kernel.Name).
//
// Reduce is a fixed two-pass reduction, deterministic for a given launch
// (no atomics): reduce_partial runs G blocks (G ≤ 1024, the host's
// choice), each thread summing a grid-stride slice of x in float, the block
// combining its threads' sums in a fixed order (golf_block_sum) into
// partials[g]; reduce_final (one block) sums the G partials the same way and
// adds the total into dst[0]. Non-finite counts are float sums of 0 and 1:
// exact up to 2^24 elements per call.
#include "golf_prelude.cuh"

#define ELEMENTWISE_THREADS 256

// zero_elems: x[i] = 0 (+0: every bit clear in each type).
// Baseline: the F32 gradients of a 1024×512 weight: 2.1 MB written, 256
// threads; on an H100 (3.35 TB/s) ≈ 0.6 µs of bandwidth (launch-bound).
template <typename T>
__device__ void zero_elems(T* x, EltwiseArgs args) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < args.n) {
    x[i] = from_f32<T>(0.0f);
  }
}

// cast_elems: dst[i] = round_D(src[i]), through float (exact for every
// pair: float holds every half and bfloat, and the conversion to D rounds
// once). Baseline: an (N, C) = 8192×512 activation bf16 → float: 25.2 MB,
// ≈ 7.5 µs at 3.35 TB/s.
template <typename S, typename D>
__device__ void cast_elems(const S* src, D* dst, EltwiseArgs args) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < args.n) {
    dst[i] = from_f32<D>(to_f32(src[i]));
  }
}

// scale_elems: x[i] = x[i]·alpha.
template <typename T>
__device__ void scale_elems(T* x, ScalarArgs args) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < args.n) {
    x[i] = from_f32<T>(to_f32(x[i]) * args.alpha);
  }
}

// axpy_elems: dst[i] += alpha·x[i], dst float.
template <typename T>
__device__ void axpy_elems(const T* x, float* dst, ScalarArgs args) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < args.n) {
    dst[i] += args.alpha * to_f32(x[i]);
  }
}

// reduce_term is what one element adds: x, x² or 1 when x is not finite
// (kind as backend.ReduceKind).
__device__ __forceinline__ float reduce_term(float v, uint kind) {
  if (kind == 0) {
    return v;
  }
  if (kind == 1) {
    return v * v;
  }
  return golf_is_finite(v) ? 0.0f : 1.0f;
}

// reduce_partial: partials[g] = Σ over block g's grid-stride slice of x.
// Baseline: the sum of squares of a float 1024×512 gradient: 2.1 MB read,
// ≈ 0.6 µs at 3.35 TB/s; 128 B of shared memory.
template <typename T>
__device__ void reduce_partial(const T* x, float* partials, ReduceArgs args) {
  __shared__ float scratch[32];
  const u64 stride = (u64)gridDim.x * blockDim.x;
  float acc = 0.0f;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < args.n; i += stride) {
    acc += reduce_term(to_f32(x[i]), args.kind);
  }
  const float total = golf_block_sum(acc, scratch);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = total;
  }
}

// reduce_final: dst[0] += Σ_g partials[g] (args.n = G), one block. T is
// unused (partials are float).
template <typename T>
__device__ void reduce_final(const float* partials, float* dst, ReduceArgs args) {
  __shared__ float scratch[32];
  float acc = 0.0f;
  for (uint i = threadIdx.x; i < args.n; i += blockDim.x) {
    acc += partials[i];
  }
  const float total = golf_block_sum(acc, scratch);
  if (threadIdx.x == 0) {
    dst[0] += total;
  }
}

#define ELEMENTWISE_CAST(fl, tname, T, sname, S)                                                        \
  GOLF_KERNEL(GOLF_NAME(cast_from_##sname, fl, tname), ELEMENTWISE_THREADS)(const S* src, T* dst,         \
                                                                            EltwiseArgs args) {           \
    cast_elems<S, T>(src, dst, args);                                                                    \
  }

#define ELEMENTWISE_KERNELS(fl, tname, T)                                                                  \
  GOLF_KERNEL(GOLF_NAME(zero, fl, tname), ELEMENTWISE_THREADS)(T * x, EltwiseArgs args) {                  \
    zero_elems<T>(x, args);                                                                                \
  }                                                                                                        \
  ELEMENTWISE_CAST(fl, tname, T, float, float)                                                             \
  ELEMENTWISE_CAST(fl, tname, T, half, fp16)                                                               \
  ELEMENTWISE_CAST(fl, tname, T, bfloat, bf16)                                                             \
  GOLF_KERNEL(GOLF_NAME(scale, fl, tname), ELEMENTWISE_THREADS)(T * x, ScalarArgs args) {                  \
    scale_elems<T>(x, args);                                                                               \
  }                                                                                                        \
  GOLF_KERNEL(GOLF_NAME(axpy, fl, tname), ELEMENTWISE_THREADS)(const T* x, float* dst, ScalarArgs args) {  \
    axpy_elems<T>(x, dst, args);                                                                           \
  }                                                                                                        \
  GOLF_KERNEL(GOLF_NAME(reduce_partial, fl, tname), ELEMENTWISE_THREADS)(const T* x, float* partials,      \
                                                                        ReduceArgs args) {                 \
    reduce_partial<T>(x, partials, args);                                                                  \
  }                                                                                                        \
  GOLF_KERNEL(GOLF_NAME(reduce_final, fl, tname), ELEMENTWISE_THREADS)(const float* partials, float* dst,  \
                                                                      ReduceArgs args) {                   \
    reduce_final<T>(partials, dst, args);                                                                  \
  }

#define ELEMENTWISE_INSTANTIATE(tname, T) ELEMENTWISE_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(ELEMENTWISE_INSTANTIATE)

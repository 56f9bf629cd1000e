// adam: one Adam step with bias correction (as MLX), in place
// (shaders/adam.metal in CUDA).
//
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	p −= lr·(m/bias1) / (sqrt(v/bias2) + eps)
//	p, m, v float (n); g T (n)
//
// bias1 = 1−β1^t and bias2 = 1−β2^t come from the host (float64, passed as
// floats). One thread per element (grid ⌈n/256⌉ × 256), float32
// arithmetic; sqrtf rounds correctly (no fast math). The host binds float
// tensors only; the half and bfloat instantiations exist because every
// kernel exists in every dtype. No tensor cores here: the kernel is
// portable, and the tc flavour's name resolves to it (cuda.Kernel.Name).
// Baseline (the 1024×512 embedding, F32): 28 B per element ≈ 14.7 MB,
// 4.4 µs at 3.35 TB/s.
#include "golf_prelude.cuh"

#define ADAM_THREADS 256

template <typename T>
__device__ void adam_step(float* p, const T* g, float* m, float* v, AdamArgs args) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= args.n) {
    return;
  }
  const float gi = to_f32(g[i]);
  const float mi = args.beta1 * m[i] + (1.0f - args.beta1) * gi;
  const float vi = args.beta2 * v[i] + (1.0f - args.beta2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  p[i] -= args.lr * (mi / args.bias1) / (sqrtf(vi / args.bias2) + args.eps);
}

#define ADAM_KERNELS(fl, tname, T)                                                                       \
  GOLF_KERNEL(GOLF_NAME(adam_step, fl, tname), ADAM_THREADS)(float* p, const T* g, float* m, float* v,   \
                                                             AdamArgs args) {                             \
    adam_step<T>(p, g, m, v, args);                                                                       \
  }

#define ADAM_INSTANTIATE(tname, T) ADAM_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(ADAM_INSTANTIATE)

// muon: the Nesterov momentum of Muon, before Newton–Schulz
// (shaders/muon.metal in CUDA).
//
//	buf = μ·buf + g;  geff = g + μ·buf
//	buf float (n); g, geff T (n); geff may be g
//
// One thread per element (grid ⌈n/256⌉ × 256), float32 arithmetic; each
// thread reads g[i] before it writes geff[i], so geff may alias g (hence no
// __restrict__). The host binds float tensors only. No tensor cores here:
// the tc flavour's name resolves to this kernel (cuda.Kernel.Name).
// Baseline (a 1024×512 matrix, F32): 16 B per element ≈ 8.4 MB, 2.5 µs at
// 3.35 TB/s.
#include "golf_prelude.cuh"

#define MUON_THREADS 256

template <typename T>
__device__ void muon_momentum(float* buf, const T* g, T* geff, MomentumArgs args) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= args.n) {
    return;
  }
  const float gi = to_f32(g[i]);
  const float bi = args.momentum * buf[i] + gi;
  buf[i] = bi;
  geff[i] = from_f32<T>(gi + args.momentum * bi);
}

#define MUON_KERNELS(fl, tname, T)                                                                  \
  GOLF_KERNEL(GOLF_NAME(muon_momentum, fl, tname), MUON_THREADS)(float* buf, const T* g, T* geff,   \
                                                                 MomentumArgs args) {               \
    muon_momentum<T>(buf, g, geff, args);                                                           \
  }

#define MUON_INSTANTIATE(tname, T) MUON_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(MUON_INSTANTIATE)

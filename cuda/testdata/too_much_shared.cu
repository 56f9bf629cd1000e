// too_much_shared.cu: a fixture of cuda/library_cuda_test.go: 64 KiB of
// static shared memory, over the 48 KiB a kernel may declare statically;
// ptxas must refuse it and name the kernel.
#include "golf_prelude.cuh"

GOLF_KERNEL(hog_portable_float, 256)(float* x, EltwiseArgs args) {
  __shared__ float big[16 * 1024];
  big[threadIdx.x * 64u] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = big[(threadIdx.x * 64u + args.n) % (16u * 1024u)];
}

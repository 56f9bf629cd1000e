// syntax_error.cu: a fixture of cuda/library_cuda_test.go. Line 6 has an
// operator without its operand; NVRTC must name this file and that line.
#include "golf_prelude.cuh"

GOLF_KERNEL(broken_portable_float, 256)(float* x, EltwiseArgs args) {
  const uint i = blockIdx.x * ;
  if (i < args.n) {
    x[i] = 0.0f;
  }
}

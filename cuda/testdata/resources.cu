// resources.cu: the fixture of cuda/cubin_test.go, compiled by NVRTC 11.8
// for sm_80 with --ptxas-options=-v (resources.sm_80.cubin, .log).
// foo: __launch_bounds__(256), 300 floats of shared memory = 1200 bytes.
// bar: no launch bounds, no shared memory, a local array.
extern "C" __global__ void __launch_bounds__(256) foo(float* x, int n) {
  __shared__ float s[300];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) x[i] = s[255 - threadIdx.x] * 2.f;
}
extern "C" __global__ void bar(float* x, int n) {
  float a[64];
  for (int j = 0; j < 64; j++) a[j] = x[j * n];
  x[n] = a[n & 63];
}

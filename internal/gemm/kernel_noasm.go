//go:build !amd64 && !arm64

package gemm

// asmKernels lists the assembly micro-kernels this CPU runs: none here.
func asmKernels() []microKernel { return nil }

// hasAVX512Kernel is false: no AVX-512 kernel or packing here.
var hasAVX512Kernel = false

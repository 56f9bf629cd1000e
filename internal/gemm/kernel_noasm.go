//go:build !amd64

package gemm

// asmKernels lists the assembly micro-kernels this CPU runs: none here.
func asmKernels() []microKernel { return nil }

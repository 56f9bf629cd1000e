//go:build !amd64

package gemm

// hasBF16Kernel reports whether this build has a bfloat16 assembly
// micro-kernel usable on this CPU.
var hasBF16Kernel = false

// kernelBAsm is nil where there is no bfloat16 assembly micro-kernel.
var kernelBAsm bkernelFunc

//go:build !amd64

package gemm

// hasAsmKernel reports whether this build has an assembly micro-kernel
// usable on this CPU.
var hasAsmKernel = false

// kernelAsm is kernelGo where there is no assembly micro-kernel.
var kernelAsm kernelFunc = kernelGo

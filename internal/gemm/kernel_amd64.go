package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasAsmKernel reports whether this build has an assembly micro-kernel
// usable on this CPU.
var hasAsmKernel = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernelAsm is the AVX2+FMA micro-kernel behind the kernelFunc contract, or
// kernelGo on CPUs without AVX2 and FMA.
var kernelAsm kernelFunc = kernelGo

func init() {
	if hasAsmKernel {
		kernelAsm = kernelAVX2
		kernel = kernelAsm
	}
}

// kernelAVX2 checks the bounds kernel6x16AVX2 relies on and calls it.
func kernelAVX2(kc int, a, b, c []float32, ldc int, alpha, beta float32, loadC bool) {
	_ = a[kc*MR-1]
	_ = b[kc*NR-1]
	_ = c[(MR-1)*ldc+NR-1]
	flag := 0
	if loadC {
		flag = 1
	}
	kernel6x16AVX2(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha, beta, flag)
}

// kernel6x16AVX2 is kernelFunc for kc ≥ 1 on raw pointers (kernel_amd64.s);
// loadC is 0 or 1.
//
//go:noescape
func kernel6x16AVX2(kc int, a, b, c *float32, ldc int, alpha, beta float32, loadC int)

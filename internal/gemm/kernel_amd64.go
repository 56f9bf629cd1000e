package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The assembly micro-kernels of kernel_amd64.s and the CPU features they
// need: AVX-512F for the 14×32 tile, AVX2 and FMA for the 6×16 one.
var (
	hasAVX512Kernel = cpu.X86.HasAVX512F
	hasAVX2Kernel   = cpu.X86.HasAVX2 && cpu.X86.HasFMA

	avx512Kernel = microKernel{"avx512", 14, 32, kernelAVX512}
	avx2Kernel   = microKernel{"avx2", 6, 16, kernelAVX2}
)

func init() {
	switch {
	case hasAVX512Kernel:
		kern = avx512Kernel
	case hasAVX2Kernel:
		kern = avx2Kernel
	}
}

// asmKernels lists the assembly micro-kernels this CPU runs.
func asmKernels() []microKernel {
	var ks []microKernel
	if hasAVX512Kernel {
		ks = append(ks, avx512Kernel)
	}
	if hasAVX2Kernel {
		ks = append(ks, avx2Kernel)
	}
	return ks
}

// checkKernelArgs panics unless the slices hold what an mr×nr kernel
// reads and writes: the assembly does no bounds checks.
func checkKernelArgs(mr, nr, kc int, a []float32, rs, qs int, b, c []float32, ldc int) {
	_ = a[(mr-1)*rs+(kc-1)*qs]
	_ = b[kc*nr-1]
	_ = c[(mr-1)*ldc+nr-1]
}

func kernelAVX512(kc int, a []float32, rs, qs int, b, c []float32, ldc int, alpha, beta float32, loadC bool) {
	checkKernelArgs(14, 32, kc, a, rs, qs, b, c, ldc)
	kernel14x32AVX512(kc, unsafe.SliceData(a), rs, qs, unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha, beta, flag(loadC))
}

func kernelAVX2(kc int, a []float32, rs, qs int, b, c []float32, ldc int, alpha, beta float32, loadC bool) {
	checkKernelArgs(6, 16, kc, a, rs, qs, b, c, ldc)
	kernel6x16AVX2(kc, unsafe.SliceData(a), rs, qs, unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha, beta, flag(loadC))
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Kernels of kernel_amd64.s for kc ≥ 1 on raw pointers; loadC is 0 or 1.

//go:noescape
func kernel14x32AVX512(kc int, a *float32, rs, qs int, b, c *float32, ldc int, alpha, beta float32, loadC int)

//go:noescape
func kernel6x16AVX2(kc int, a *float32, rs, qs int, b, c *float32, ldc int, alpha, beta float32, loadC int)

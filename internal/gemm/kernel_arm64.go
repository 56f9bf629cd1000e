package gemm

import "unsafe"

// The NEON micro-kernel of kernel_arm64.s: the portable kernel's 6×16
// tile, each lane summed over k in order by FMLA (one rounding a step, as
// fma32), so it returns the portable kernel's bits. Every arm64 CPU has
// Advanced SIMD.
var neonKernel = microKernel{"neon", 6, 16, kernelNEON}

// hasAVX512Kernel is false: no AVX-512 kernel or packing here.
var hasAVX512Kernel = false

func init() { kern = neonKernel }

// asmKernels lists the assembly micro-kernels this CPU runs.
func asmKernels() []microKernel { return []microKernel{neonKernel} }

func kernelNEON(kc int, a []float32, rs, qs int, b, c []float32, ldc int, alpha, beta float32, loadC bool) {
	// The assembly does no bounds checks.
	_ = a[5*rs+(kc-1)*qs]
	_ = b[kc*16-1]
	_ = c[5*ldc+15]
	l := 0
	if loadC {
		l = 1
	}
	kernel6x16NEON(kc, unsafe.SliceData(a), rs, qs, unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha, beta, l)
}

// kernel6x16NEON is the kernel for kc ≥ 1 on raw pointers; loadC is 0 or 1.
//
//go:noescape
func kernel6x16NEON(kc int, a *float32, rs, qs int, b, c *float32, ldc int, alpha, beta float32, loadC int)

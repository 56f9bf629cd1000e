package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasBF16Kernel reports whether this build has a bfloat16 assembly
// micro-kernel usable on this CPU: VDPBF16PS on ZMM registers.
var hasBF16Kernel = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16

// kernelBAsm is the AVX512-BF16 micro-kernel behind the bkernelFunc
// contract, or nil on CPUs without it.
var kernelBAsm bkernelFunc

func init() {
	if hasBF16Kernel {
		kernelBAsm = kernelBF16
		bkernel = kernelBAsm
	}
}

// kernelBF16 checks the bounds kernel14x32BF16 relies on and calls it.
func kernelBF16(kq int, a, b []uint32, c []float32, ldc, rs, qs int, alpha, beta float32, loadC bool) {
	_ = a[(BMR-1)*rs+(kq-1)*qs]
	_ = b[kq*BNR-1]
	_ = c[(BMR-1)*ldc+BNR-1]
	flag := 0
	if loadC {
		flag = 1
	}
	kernel14x32BF16(kq, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, rs, qs, alpha, beta, flag)
}

// kernel14x32BF16 is bkernelFunc for kq ≥ 1 on raw pointers
// (bkernel_amd64.s); loadC is 0 or 1.
//
//go:noescape
func kernel14x32BF16(kq int, a, b *uint32, c *float32, ldc, rs, qs int, alpha, beta float32, loadC int)

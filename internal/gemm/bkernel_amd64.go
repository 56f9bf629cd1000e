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
		if !isIntel() {
			bkernel = kernelBAsm
		}
	}
}

// isIntel reports an Intel CPU. Intel's cores with AVX512-BF16 (Sapphire
// Rapids and later Xeons) issue VDPBF16PS on ZMM at half the rate of
// VFMADD231PS on ZMM, so a bfloat16 dot product there (64 flops) takes as
// long as two float32 FMAs (32 flops each): measured 100 against
// 200 GFLOP/s per core on a Xeon with AMX. Bgemm then widens its operands
// to float32 while packing and runs Sgemm's AVX-512 kernel, which is as
// fast and gives the same result without flushing subnormals. AMD's Zen 4
// and Zen 5 issue VDPBF16PS at the FMA rate, doubling the flops per
// instruction, so they keep the bfloat16 kernel.
func isIntel() bool {
	b, d, c := cpuVendor()
	return b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e // "Genu" "ineI" "ntel"
}

// cpuVendor returns CPUID leaf 0's vendor string registers (cpuid_amd64.s).
func cpuVendor() (ebx, edx, ecx uint32)

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

package roofline

import "golang.org/x/sys/cpu"

var (
	hasAVX512 = cpu.X86.HasAVX512F
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

func fmaKind() string {
	switch {
	case hasAVX512:
		return "avx512"
	case hasAVX2:
		return "avx2"
	}
	return "go"
}

// fmaLoop runs n steps of 12 FMAs on the widest vectors and returns the
// FLOPs (2 per lane).
func fmaLoop(n int) float64 {
	switch {
	case hasAVX512:
		fma512(n)
		return float64(n) * 12 * 16 * 2
	case hasAVX2:
		fma256(n)
		return float64(n) * 12 * 8 * 2
	}
	return fmaGo(n)
}

func hasDotBF16() bool { return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16 }

// dotBF16Loop runs n steps of 12 VDPBF16PS on ZMM and returns the FLOPs
// (2 products and 2 adds per lane).
func dotBF16Loop(n int) float64 {
	dpbf16(n)
	return float64(n) * 12 * 16 * 4
}

//go:noescape
func fma512(n int)

//go:noescape
func fma256(n int)

//go:noescape
func dpbf16(n int)

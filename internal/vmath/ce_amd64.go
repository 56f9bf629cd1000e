//go:build amd64 && !purego

package vmath

import (
	"math"
	"unsafe"
)

// Rows of ceconst, the constants of SoftcapZ and ExpCE for ce_amd64.s as
// 8 lanes each; the offsets there are 32 bytes times these.
const (
	ceW = iota
	ceQ0
	ceQ1
	ceQ2
	ceQ3
	ceQ4
	ceLog2E
	ceMagic
	ceHi
	ceLo
	ceP6
	ceP5
	ceP4
	ceP3
	ceP2
	ceOne
	ceTwo
	ceSign
	ceExpLo
	ceInfAbove
	ceBias
	ceInf
	nCE
)

// ceconst holds the constants of SoftcapZ and ExpCE as bits, each
// broadcast to 8 lanes, for the assembly's memory operands.
var ceconst = func() (t [nCE][lanes]uint32) {
	f := math.Float32bits
	row := [nCE]uint32{
		ceW: f(ceTanhW), ceQ0: f(tanhQ0), ceQ1: f(tanhQ1), ceQ2: f(tanhQ2), ceQ3: f(tanhQ3), ceQ4: f(tanhQ4),
		ceLog2E: f(log2E), ceMagic: f(expMagic), ceHi: f(ceLn2Hi), ceLo: f(ceLn2Lo),
		ceP6: f(ceE6), ceP5: f(ceE5), ceP4: f(ceE4), ceP3: f(ceE3), ceP2: f(ceE2),
		ceOne: f(1), ceTwo: f(2), ceSign: 1 << 31, ceExpLo: f(expLo), ceInfAbove: f(ceExpInf), ceBias: 127,
		ceInf: 0x7f800000,
	}
	for i, b := range row {
		for j := range t[i] {
			t[i][j] = b
		}
	}
	return t
}()

// softcapExpAsm runs softcapExpAVX512 over the whole blocks of 16 of x and
// softcapExpAVX2 over the rest (x is a positive multiple of 8 long; e, and
// g when not nil, as long). Whole units of 64 lie in the first part, and
// a block of 8 after it is a row's last, unpaired: the parts sum as one.
func softcapExpAsm[T ceIn](e, g []float32, x []T, c, rc, s float32, acc *[lanes]float64) {
	n := len(x)
	_ = e[n-1]
	var gp unsafe.Pointer
	if g != nil {
		_ = g[n-1]
		gp = unsafe.Pointer(&g[0])
	}
	flags := ceIsBF16[T]()
	if ceInRange(c, s) {
		flags |= 2
	}
	done := 0
	if n16 := n &^ 15; use512 && n16 > 0 {
		softcapExpAVX512(&e[0], gp, unsafe.Pointer(&x[0]), n16, c, rc, s, acc, flags)
		if done = n16; done == n {
			return
		}
		if gp != nil {
			gp = unsafe.Pointer(&g[done])
		}
	}
	softcapExpAVX2(&e[done], gp, unsafe.Pointer(&x[done]), n-done, c, rc, s, acc, flags)
}

// ceGradAsm runs ceGradAVX512 over the whole blocks of 16 of e and
// ceGradAVX2 over the rest (a multiple of 8, possibly none); dst and g
// have e's length.
func ceGradAsm[T ceIn](dst []T, e, g []float32, q, scale float32) {
	n := len(e)
	if n == 0 {
		return
	}
	_, _ = dst[n-1], g[n-1]
	bf := ceIsBF16[T]()
	done := 0
	if n16 := n &^ 15; use512 && n16 > 0 {
		ceGradAVX512(unsafe.Pointer(&dst[0]), &e[0], &g[0], n16, q, scale, bf)
		done = n16
	}
	if done < n {
		ceGradAVX2(unsafe.Pointer(&dst[done]), &e[done], &g[done], n-done, q, scale, bf)
	}
}

// ceTableSumAsm runs ceTableSumAVX512 over the whole blocks of 16 of x and
// ceTableSumAVX2 over the rest (x is a positive multiple of 8 long; e, if
// not nil, as long; te has CETableLen entries).
func ceTableSumAsm(e []float32, x []uint16, te []float32, acc *[lanes]float64) {
	n := len(x)
	var ep unsafe.Pointer
	if e != nil {
		_ = e[n-1]
		ep = unsafe.Pointer(&e[0])
	}
	_ = te[CETableLen-1]
	done := 0
	if n16 := n &^ 15; use512 && n16 > 0 {
		ceTableSumAVX512(ep, &x[0], n16, &te[0], acc)
		done = n16
	}
	if done < n {
		if ep != nil {
			ep = unsafe.Pointer(&e[done])
		}
		ceTableSumAVX2(ep, &x[done], n-done, &te[0], acc)
	}
}

// ceGradTableAsm runs ceGradTableAVX512 over the whole blocks of 16 of x
// and ceGradTableAVX2 over the rest (a multiple of 8, possibly none); dst
// has x's length, teg CETableLen entries. f16 rounds 16-bit dst to
// binary16 rather than bfloat16 (the kernels' flag 2; it needs F16C).
func ceGradTableAsm[T ceIn](dst []T, x []uint16, teg []float32, q, scale float32, f16 bool) {
	n := len(x)
	if n == 0 {
		return
	}
	_, _ = dst[n-1], teg[CETableLen-1]
	flag := ceIsBF16[T]()
	if f16 && flag == 1 {
		flag = 2
	}
	done := 0
	if n16 := n &^ 15; use512 && n16 > 0 {
		ceGradTableAVX512(unsafe.Pointer(&dst[0]), &x[0], n16, &teg[0], q, scale, flag)
		done = n16
	}
	if done < n {
		ceGradTableAVX2(unsafe.Pointer(&dst[done]), &x[done], n-done, &teg[0], q, scale, flag)
	}
}

// Kernels of ce_amd64.s. x and dst hold float32, or bfloat16 bits where
// bf16 or flags&1 is set; flags&2 promises that ceInRange(c, s) holds.
// rc is float32(1/c); sech2 is g of ce.go, 1 − tanh², and may be nil (not
// written); the exponentials need FMA (useFMA). n is a
// positive multiple of 8 (of 16 for the AVX-512 ones). The exponentials
// add their e to acc's 8 lanes.

//go:noescape
func softcapExpAVX2(e *float32, sech2, x unsafe.Pointer, n int, c, rc, s float32, acc *[lanes]float64, flags int)

//go:noescape
func softcapExpAVX512(e *float32, sech2, x unsafe.Pointer, n int, c, rc, s float32, acc *[lanes]float64, flags int)

//go:noescape
func ceGradAVX2(dst unsafe.Pointer, e, sech2 *float32, n int, q, scale float32, bf16 int)

//go:noescape
func ceGradAVX512(dst unsafe.Pointer, e, sech2 *float32, n int, q, scale float32, bf16 int)

// Table kernels: x holds 16-bit patterns, the indices into te or teg
// (CETableLen entries); e may be nil (not written); ceGradTable's bf16
// is 2 for binary16 dst. n is a positive
// multiple of 8 (of 16 for the AVX-512 ones).

//go:noescape
func ceTableSumAVX2(e unsafe.Pointer, x *uint16, n int, te *float32, acc *[lanes]float64)

//go:noescape
func ceTableSumAVX512(e unsafe.Pointer, x *uint16, n int, te *float32, acc *[lanes]float64)

//go:noescape
func ceGradTableAVX2(dst unsafe.Pointer, x *uint16, n int, teg *float32, q, scale float32, bf16 int)

//go:noescape
func ceGradTableAVX512(dst unsafe.Pointer, x *uint16, n int, teg *float32, q, scale float32, bf16 int)

// softcapZFMA is SoftcapZ's odd polynomial in scalar FMA instructions (see
// ce_amd64.s): ok is false where x takes the exponential branch.
//
//go:noescape
func softcapZFMA(x, c, rc float32) (z, sech2 float32, ok bool)

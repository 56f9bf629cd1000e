package gemm

import (
	"golang.org/x/sys/cpu"

	"github.com/golf-ml/golf/backend"
)

// packTransVec packs a transposed B micro-panel on AVX-512: d[p*nr+j] =
// src[j*lds+p] for p < kc, j < cols, when cols == nr is a multiple of 16
// (whole 16×16 blocks, the last p < kc%16 one at a time). It reports
// whether it did; packB falls back to Go otherwise.
func packTransVec(d []float32, nr int, src []float32, lds, kc, cols int) bool {
	if !hasAVX512Kernel || cols != nr || nr%16 != 0 || kc == 0 {
		return false
	}
	_ = d[kc*nr-1]
	_ = src[(cols-1)*lds+kc-1]
	p := 0
	for ; p+16 <= kc; p += 16 {
		for j := 0; j < cols; j += 16 {
			transpose16x16AVX512(&d[p*nr+j], nr, &src[j*lds+p], lds)
		}
	}
	for ; p < kc; p++ {
		t := d[p*nr : p*nr+cols]
		for j := range t {
			t[j] = src[j*lds+p]
		}
	}
	return true
}

// transpose16x16AVX512 sets dst[p*ldd+j] = src[j*lds+p] for j, p < 16
// (pack_amd64.s).
//
//go:noescape
func transpose16x16AVX512(dst *float32, ldd int, src *float32, lds int)

// packA14Vec packs one full 14-row micro-panel of op(A) (packA with
// mr = 14 and 14 rows) on AVX-512 and reports whether it did. dst must
// have 16 floats of slack past the panel: the stores overrun it by two.
func packA14Vec(dst, a []float32, lda int, transA bool, i0, p0, kc int) bool {
	return packA14(dst, a, lda, transA, i0, p0, kc, packA14ColsAVX512, packA14RowsAVX512, func(v float32) float32 { return v })
}

// packA14F16Vec is packA14Vec for binary16 A, widened as it is loaded
// (VCVTPH2PS), and reports whether it did.
func packA14F16Vec(dst []float32, a []uint16, lda int, transA bool, i0, p0, kc int) bool {
	return packA14(dst, a, lda, transA, i0, p0, kc, widenCols14F16AVX512, packA14RowsF16AVX512, backend.F16Float)
}

// packA14 is packA14Vec over A of element type T: cols packs a transposed
// A's kc rows of 14, rows whole blocks of 16 k of 14 rows, and the k past
// them are widened one by one.
func packA14[T float32 | uint16](dst []float32, a []T, lda int, transA bool, i0, p0, kc int,
	cols func(dst *float32, src *T, lds, kc int), rows func(dst *float32, src *T, lds, blocks int), widen func(T) float32) bool {
	if !hasAVX512Kernel || kc == 0 {
		return false
	}
	_ = dst[kc*14+15]
	if transA {
		_ = a[(p0+kc-1)*lda+i0+13]
		cols(&dst[0], &a[p0*lda+i0], lda, kc)
		return true
	}
	_ = a[(i0+13)*lda+p0+kc-1]
	blocks := kc / 16
	if blocks > 0 {
		rows(&dst[0], &a[i0*lda+p0], lda, blocks)
	}
	for p := 16 * blocks; p < kc; p++ {
		t := dst[p*14 : p*14+14]
		for i := range t {
			t[i] = widen(a[(i0+i)*lda+p0+p])
		}
	}
	return true
}

//go:noescape
func packA14RowsAVX512(dst, src *float32, lds, blocks int)

//go:noescape
func packA14ColsAVX512(dst, src *float32, lds, kc int)

// hasPack16Vec reports the AVX-512 byte/word instructions the bfloat16
// widening packers use.
var hasPack16Vec = hasAVX512Kernel && cpu.X86.HasAVX512BW

// copyRowsVec sets d[p*32+j] = src[p*lds+j] for p < rows, j < 32 on
// AVX-512 and reports whether it did.
func copyRowsVec(d []float32, nr int, src []float32, lds, rows, cols int) bool {
	if !hasAVX512Kernel || nr != 32 || cols != 32 || rows == 0 {
		return false
	}
	_ = d[rows*32-1]
	_ = src[(rows-1)*lds+31]
	copyRows32AVX512(&d[0], &src[0], lds, rows)
	return true
}

// widenRowsVec is copyRowsVec for a bfloat16 source, widened.
func widenRowsVec(d []float32, nr int, src []uint16, lds, rows, cols int) bool {
	if !hasPack16Vec || nr != 32 || cols != 32 || rows == 0 {
		return false
	}
	_ = d[rows*32-1]
	_ = src[(rows-1)*lds+31]
	widenRows32AVX512(&d[0], &src[0], lds, rows)
	return true
}

// widenCols14Vec sets dst[p*14+i] = src[p*lds+i] widened for i < 14,
// p < kc on AVX-512 (dst with 16 floats of slack) and reports whether it
// did.
func widenCols14Vec(dst []float32, src []uint16, lds, kc int) bool {
	if !hasPack16Vec || kc == 0 {
		return false
	}
	_ = dst[kc*14+15]
	_ = src[(kc-1)*lds+13]
	widenCols14AVX512(&dst[0], &src[0], lds, kc)
	return true
}

// widenRowsF16Vec is widenRowsVec for a binary16 source.
func widenRowsF16Vec(d []float32, nr int, src []uint16, lds, rows, cols int) bool {
	if !hasAVX512Kernel || nr != 32 || cols != 32 || rows == 0 {
		return false
	}
	_ = d[rows*32-1]
	_ = src[(rows-1)*lds+31]
	widenRows32F16AVX512(&d[0], &src[0], lds, rows)
	return true
}

//go:noescape
func packA14RowsF16AVX512(dst *float32, src *uint16, lds, blocks int)

//go:noescape
func widenRows32F16AVX512(dst *float32, src *uint16, lds, rows int)

//go:noescape
func widenCols14F16AVX512(dst *float32, src *uint16, lds, kc int)

//go:noescape
func copyRows32AVX512(dst, src *float32, lds, rows int)

//go:noescape
func widenRows32AVX512(dst *float32, src *uint16, lds, rows int)

//go:noescape
func widenCols14AVX512(dst *float32, src *uint16, lds, kc int)

// transposeTile16 sets dst[p*ldd+j] = src[j*lds+p] for j, p < 16.
func transposeTile16(dst []float32, ldd int, src []float32, lds int) {
	_ = dst[15*ldd+15]
	_ = src[15*lds+15]
	transpose16x16AVX512(&dst[0], ldd, &src[0], lds)
}

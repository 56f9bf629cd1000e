package gemm

import (
	"fmt"
	"unsafe"
)

// Tile-level products for callers that lay out their own operands (the CPU
// backend's attention): the micro-kernel Sgemm runs, applied to an A read
// in place and a B packed once and reused across many products. Everything
// here runs on the calling goroutine.

// TileRows is the row count of the micro-kernel's register tile (mr):
// MulPacked is most efficient when m is a multiple of it.
func TileRows() int { return kern.mr }

// TileCols is the column count of the register tile (nr), the width of a
// packed B micro-panel.
func TileCols() int { return kern.nr }

// PackedBLen is the length of the packed form of a k×n op(B):
// ⌈n/nr⌉ micro-panels of k·nr elements.
func PackedBLen(k, n int) int { return ceilDiv(n, kern.nr) * kern.nr * k }

// PackB packs op(B) (k×n; B is n×k when transB) into dst as nr-wide
// micro-panels of k rows: element (p, j) goes to dst[(j/nr)·k·nr + p·nr +
// j%nr], columns past n zero. A product over rows [p0, p0+kc) of it reads
// panel j at offset (j/nr)·k·nr + p0·nr (see MulPacked's panelStride).
func PackB(dst, b []float32, ldb int, transB bool, k, n int) {
	if k == 0 || n == 0 {
		return
	}
	checkPack(len(dst), k, n)
	packB(dst, kern.nr, b, ldb, transB, 0, k, 0, n)
}

// PackB16 is PackB for a bfloat16 B, widened to float32; scratch holds at
// least PackB16ScratchLen(k) floats.
func PackB16(dst []float32, b []uint16, ldb int, transB bool, k, n int, scratch []float32) {
	if k == 0 || n == 0 {
		return
	}
	checkPack(len(dst), k, n)
	packB16(dst, kern.nr, b, ldb, transB, 0, k, 0, n, scratch[:PackB16ScratchLen(k)], false)
}

// PackB16ScratchLen is the scratch PackB16 needs for k rows: one
// micro-panel's rows widened before they are transposed.
func PackB16ScratchLen(k int) int { return kern.nr * k }

func checkPack(have, k, n int) {
	if need := PackedBLen(k, n); have < need {
		panic(fmt.Sprintf("gemm: PackB: len(dst) = %d < %d for %d×%d", have, need, k, n))
	}
}

// MulScratchLen is the length of the scratch MulPacked needs for k terms:
// an edge tile of C and an edge panel of A.
func MulScratchLen(k int) int { return kern.mr*kern.nr + kern.mr*k + 16 }

// MulPacked computes, for i < m, j < n,
//
//	C[i*ldc+j] = alpha·Σ_{p<k} A(i, p)·Bp(p, j) + beta·C[i*ldc+j]
//
// where A(i, p) = a[i*rs+p*qs] and Bp is packed by PackB: column j of it
// lives in the micro-panel starting at (j/nr)·panelStride of bp, row p at
// p·nr within it. beta == 0 ignores C's contents. Each element is the
// micro-kernel's sum over p in order with fused multiply-adds. scratch
// has at least MulScratchLen(k) elements. k ≥ 1.
func MulPacked(m, n, k int, alpha float32, a []float32, rs, qs int, bp []float32, panelStride int, beta float32, c []float32, ldc int, scratch []float32) {
	if m <= 0 || n <= 0 {
		return
	}
	if k <= 0 {
		panic("gemm: MulPacked: k < 1")
	}
	mk := kern
	mr, nr := mk.mr, mk.nr
	edge := scratch[:mr*nr]
	ea := scratch[mr*nr : mr*nr+mr*k+16]
	loadC := beta != 0
	for ir := 0; ir < m; ir += mr {
		rows := min(mr, m-ir)
		pa, ars, aqs := a[ir*rs:], rs, qs
		if rows < mr {
			// Pack the overhanging rows so that the kernel reads no row of
			// A past m.
			clear(ea[:mr*k])
			for i := range rows {
				for p := range k {
					ea[p*mr+i] = a[(ir+i)*rs+p*qs]
				}
			}
			pa, ars, aqs = ea, 1, mr
		}
		for jr := 0; jr < n; jr += nr {
			cols := min(nr, n-jr)
			pb := bp[(jr/nr)*panelStride:][:k*nr]
			off := ir*ldc + jr
			if rows == mr && cols == nr {
				mk.fn(k, pa, ars, aqs, pb, c[off:off+(mr-1)*ldc+nr], ldc, alpha, beta, loadC)
				continue
			}
			if loadC {
				for r := range rows {
					copy(edge[r*nr:r*nr+cols], c[off+r*ldc:off+r*ldc+cols])
				}
			}
			mk.fn(k, pa, ars, aqs, pb, edge, nr, alpha, beta, loadC)
			for r := range rows {
				copy(c[off+r*ldc:off+r*ldc+cols], edge[r*nr:r*nr+cols])
			}
		}
	}
}

// KBlock is the K block of Sgemm and Bgemm: a 16-bit product over more
// terms than this (Sgemm16, Bgemm16) needs a float32 panel for its partial
// sums.
func KBlock() int { return blocking.KC }

// NativeBF16 reports whether Bgemm multiplies on the bfloat16 dot-product
// kernel (VDPBF16PS) rather than widening its operands for Sgemm's.
func NativeBF16() bool { return bkernel != nil }

// TransposeWords is Transpose on 32-bit words (pair-packed bfloat16
// operands): the words are only moved, so every bit pattern comes out as
// it went in.
func TransposeWords(dst []uint32, ldd int, src []uint32, lds int, rows, cols int) {
	Transpose(floats(dst), ldd, floats(src), lds, rows, cols)
}

// floats views words as float32 for Transpose, which only moves them.
func floats(w []uint32) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w))), len(w))
}

// Transpose sets dst[j*ldd+i] = src[i*lds+j] for i < rows, j < cols: whole
// 16×16 blocks through registers on AVX-512, the edges one element at a
// time. dst and src must not overlap.
func Transpose(dst []float32, ldd int, src []float32, lds int, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	_ = dst[(cols-1)*ldd+rows-1]
	_ = src[(rows-1)*lds+cols-1]
	i0 := 0
	if hasAVX512Kernel {
		for ; i0+16 <= rows; i0 += 16 {
			j := 0
			for ; j+16 <= cols; j += 16 {
				transposeTile16(dst[j*ldd+i0:], ldd, src[i0*lds+j:], lds)
			}
			for r := i0; r < i0+16; r++ {
				for c := j; c < cols; c++ {
					dst[c*ldd+r] = src[r*lds+c]
				}
			}
		}
	}
	for r := i0; r < rows; r++ {
		for c := range cols {
			dst[c*ldd+r] = src[r*lds+c]
		}
	}
}

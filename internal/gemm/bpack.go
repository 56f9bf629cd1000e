package gemm

import (
	"math"

	"github.com/golf-ml/golf/internal/vmath"
)

// bf16Float widens bfloat16 bits to float32 (exact).
func bf16Float(v uint16) float32 { return math.Float32frombits(uint32(v) << 16) }

// pair is one VDPBF16PS word holding the bfloat16 of an even k (first) and
// of the next, odd k (second). VDPBF16PS adds the product of the high half
// to the accumulator first, so first goes there: each pair then updates the
// sum in the order k, k+1, as Sgemm's fused multiply-adds do.
func pair(first, second uint16) uint32 { return uint32(first)<<16 | uint32(second) }

// aPanel returns where packAPairs puts the pair (i, q) of rows
// [ir, ir+BMR) of a block of K pairs: at off + (i-ir)*rs + q*qs. The block
// is row-major, (mcPad, kq), when A's rows run along K (each row a straight
// copy), and pair-major, (kq, mcPad), when transA (each pair of rows of A
// interleaved); mcPad = ⌈mc/BMR⌉·BMR.
func aPanel(transA bool, ir, kq, mcPad int) (off, rs, qs int) {
	if transA {
		return ir, 1, mcPad
	}
	return ir * kq, kq, 1
}

// packAPairs copies op(A)[i0:i0+mc, p0:p0+kc] into dst as a block of K
// pairs laid out as aPanel says: the pair (i, q) is op(A)[i][p0+2q] and
// op(A)[i][p0+2q+1], kq = ⌈kc/2⌉ pairs; an odd kc pairs the last element
// with a zero, and rows past mc up to mcPad are zero. op(A)[i][p] is
// a[i*lda+p], or a[p*lda+i] when transA.
func packAPairs(dst []uint32, a []uint16, lda int, transA bool, i0, mc, p0, kc int) {
	kq, even := (kc+1)/2, kc&^1
	mcPad := ceilDiv(mc, BMR) * BMR
	dst = dst[:kq*mcPad]
	if !transA {
		if packVec {
			rotPairsVec(dst, kq, a[i0*lda+p0:], lda, mc, even/2)
		} else {
			for i := range mc {
				row := a[(i0+i)*lda+p0:][:even]
				t := dst[i*kq:][:even/2]
				for q := range t {
					t[q] = pair(row[2*q], row[2*q+1])
				}
			}
		}
		if kc > even {
			for i := range mc {
				dst[i*kq+kq-1] = pair(a[(i0+i)*lda+p0+even], 0)
			}
		}
		clear(dst[mc*kq:])
		return
	}
	base := p0*lda + i0
	if packVec {
		interleavePairsVec(dst, mcPad, a[base:], lda, even/2, mc)
	} else {
		for q := range even / 2 {
			r0 := a[base+2*q*lda:][:mc]
			r1 := a[base+(2*q+1)*lda:][:mc]
			t := dst[q*mcPad:][:mc]
			for i := range t {
				t[i] = pair(r0[i], r1[i])
			}
		}
	}
	if kc > even {
		r0 := a[base+even*lda:][:mc]
		t := dst[(kq-1)*mcPad:][:mc]
		for i := range t {
			t[i] = pair(r0[i], 0)
		}
	}
	if mc < mcPad {
		for q := range kq {
			clear(dst[q*mcPad+mc : (q+1)*mcPad])
		}
	}
}

// maxGatherStride is the largest row stride whose byte offsets over a B
// micro-panel fit the int32 lanes of gatherPairsVec.
const maxGatherStride = (1<<31 - 1) / (2 * BNR)

// packBPairs copies op(B)[p0:p0+kc, j0:j0+nc] into dst as BNR-wide
// micro-panels of K pairs: the pair (q, j), op(B)[p0+2q][j] and
// op(B)[p0+2q+1][j], goes to dst[(j/BNR)*kq*BNR + q*BNR + j%BNR] with
// kq = ⌈kc/2⌉. An odd kc pairs the last element with a zero; columns past
// nc in the last panel are zero. op(B)[p][j] is b[p*ldb+j], or b[j*ldb+p]
// when transB.
func packBPairs(dst []uint32, b []uint16, ldb int, transB bool, p0, kc, j0, nc int) {
	kq, even := (kc+1)/2, kc&^1
	for jr := 0; jr < nc; jr += BNR {
		nr := min(BNR, nc-jr)
		d := dst[jr*kq : (jr+BNR)*kq]
		if nr < BNR {
			clear(d)
		}
		if !transB {
			base := p0*ldb + j0 + jr
			if packVec {
				interleavePairsVec(d, BNR, b[base:], ldb, even/2, nr)
			} else {
				for q := range even / 2 {
					r0 := b[base+2*q*ldb:][:nr]
					r1 := b[base+(2*q+1)*ldb:][:nr]
					t := d[q*BNR:][:nr]
					for j := range t {
						t[j] = pair(r0[j], r1[j])
					}
				}
			}
			if kc > even {
				r0 := b[base+even*ldb:][:nr]
				t := d[(kq-1)*BNR:][:nr]
				for j := range t {
					t[j] = pair(r0[j], 0)
				}
			}
			continue
		}
		if packVec && ldb <= maxGatherStride {
			gatherPairsVec(d, b[(j0+jr)*ldb+p0:], ldb, even/2, nr)
		} else {
			for j := range nr {
				row := b[(j0+jr+j)*ldb+p0:][:even]
				for q := range even / 2 {
					d[q*BNR+j] = pair(row[2*q], row[2*q+1])
				}
			}
		}
		if kc > even {
			for j := range nr {
				d[(kq-1)*BNR+j] = pair(b[(j0+jr+j)*ldb+p0+even], 0)
			}
		}
	}
}

// packA16 copies op(A)[i0:i0+mc, p0:p0+kc] of bfloat16 A, widened to
// float32, into dst as mr-tall micro-panels: element (i, p) goes to
// dst[(i/mr)*kc*mr + p*mr + i%mr]; rows past mc in the last panel are zero.
// op(A)[i][p] is a[i*lda+p], or a[p*lda+i] when transA. dst has 16 floats
// of slack; wide is scratch of at least mr·kc floats. With f16 the bits
// are binary16 (vmath.FromF16), which the bfloat16-only vector paths skip.
func packA16(dst []float32, mr int, a []uint16, lda int, transA bool, i0, mc, p0, kc int, wide []float32, f16 bool) {
	widen := widenFunc(f16)
	if f16 && mr == 14 && mc >= 14 && hasAVX512Kernel {
		// Whole 14-row panels widen as they are packed (packA14F16Vec);
		// a last, shorter panel takes the general path below.
		full := mc / 14 * 14
		for ir := 0; ir < full; ir += 14 {
			packA14F16Vec(dst[ir*kc:], a, lda, transA, i0+ir, p0, kc)
		}
		if full == mc {
			return
		}
		dst, i0, mc = dst[full*kc:], i0+full, mc-full
	}
	if f16 && transA && mc <= len(wide) {
		// vmath.FromF16 pays per call: widen each of op(A)'s columns in
		// the block whole (one row of A), then deal it to the micro-panels.
		for p := range kc {
			w := wide[:mc]
			widen(w, a[(p0+p)*lda+i0:][:mc])
			for ir := 0; ir < mc; ir += mr {
				rows := min(mr, mc-ir)
				d := dst[ir*kc+p*mr:][:mr]
				copy(d, w[ir:ir+rows])
				clear(d[rows:])
			}
		}
		return
	}
	for ir := 0; ir < mc; ir += mr {
		rows := min(mr, mc-ir)
		d := dst[ir*kc:]
		if mr == 14 && rows == 14 {
			if transA && !f16 && widenCols14Vec(d, a[p0*lda+i0+ir:], lda, kc) {
				continue
			}
			if !transA && hasAVX512Kernel {
				// Widen the rows, then transpose them as float32.
				w := wide[:14*kc]
				for i := range 14 {
					widen(w[i*kc:(i+1)*kc], a[(i0+ir+i)*lda+p0:][:kc])
				}
				packA14Vec(d, w, kc, false, 0, 0, kc)
				continue
			}
		}
		d = d[:mr*kc]
		if rows < mr {
			clear(d)
		}
		if transA {
			for p := range kc {
				widen(d[p*mr:p*mr+rows], a[(p0+p)*lda+i0+ir:][:rows])
			}
			continue
		}
		for i := range rows {
			row := a[(i0+ir+i)*lda+p0:][:kc]
			if f16 {
				scatterWidened(d[i:], mr, row, wide, widen)
				continue
			}
			for p, v := range row {
				d[p*mr+i] = bf16Float(v)
			}
		}
	}
}

// packB16 is packB for bfloat16 B, widened to float32 as it is packed;
// wide is scratch of at least nr·kc floats; f16 as for packA16.
func packB16(dst []float32, nr int, b []uint16, ldb int, transB bool, p0, kc, j0, nc int, wide []float32, f16 bool) {
	widen := widenFunc(f16)
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		d := dst[jr*kc : (jr+nr)*kc]
		if cols < nr {
			clear(d)
		}
		if !transB {
			if !f16 && widenRowsVec(d, nr, b[p0*ldb+j0+jr:], ldb, kc, cols) {
				continue
			}
			if f16 && widenRowsF16Vec(d, nr, b[p0*ldb+j0+jr:], ldb, kc, cols) {
				continue
			}
			for p := range kc {
				widen(d[p*nr:p*nr+cols], b[(p0+p)*ldb+j0+jr:][:cols])
			}
			continue
		}
		if cols == nr && hasAVX512Kernel && nr%16 == 0 {
			w := wide[:nr*kc]
			for j := range nr {
				widen(w[j*kc:(j+1)*kc], b[(j0+jr+j)*ldb+p0:][:kc])
			}
			if packTransVec(d, nr, w, kc, kc, cols) {
				continue
			}
		}
		for j := range cols {
			row := b[(j0+jr+j)*ldb+p0:][:kc]
			if f16 {
				scatterWidened(d[j:], nr, row, wide, widen)
				continue
			}
			for p, v := range row {
				d[p*nr+j] = bf16Float(v)
			}
		}
	}
}

// scatterWidened widens row into the scratch w and stores its element p
// at d[p·stride]: a micro-panel's column or row from a row of binary16,
// which has no element-at-a-time conversion as cheap as bfloat16's shift.
func scatterWidened(d []float32, stride int, row []uint16, w []float32, widen func([]float32, []uint16)) {
	w = w[:len(row)]
	widen(w, row)
	for p, v := range w {
		d[p*stride] = v
	}
}

// widenFunc is the widening of 16-bit operands: vmath.FromF16 for binary16
// (f16), widenBF16 for bfloat16.
func widenFunc(f16 bool) func(dst []float32, src []uint16) {
	if f16 {
		return vmath.FromF16
	}
	return widenBF16
}

// widenBF16 sets dst[i] to the float32 of the bfloat16 bits src[i]
// (vmath.FromBF16: AVX2 where the CPU has it).
func widenBF16(dst []float32, src []uint16) { vmath.FromBF16(dst, src) }

package gemm

// packABlock copies op(A)[i0:i0+mc, p0:p0+kc] into dst as mr-tall
// micro-panels: element (i, p) goes to dst[(i/mr)*kc*mr + p*mr + i%mr];
// rows past mc in the last panel are zero. op(A)[i][p] is a[i*lda+p], or
// a[p*lda+i] when transA. dst has 16 floats of slack past the block (see
// packA14Vec).
func packABlock(dst []float32, mr int, a []float32, lda int, transA bool, i0, mc, p0, kc int) {
	for ir := 0; ir < mc; ir += mr {
		rows := min(mr, mc-ir)
		d := dst[ir*kc:]
		if mr == 14 && rows == 14 && packA14Vec(d, a, lda, transA, i0+ir, p0, kc) {
			continue
		}
		packA(d, mr, a, lda, transA, i0+ir, rows, p0, kc)
	}
}

// packA copies op(A)[i0:i0+rows, p0:p0+kc] (rows ≤ mr) into dst as one
// mr-tall micro-panel: element (i, p) goes to dst[p*mr+i]; rows past rows
// are zero.
func packA(dst []float32, mr int, a []float32, lda int, transA bool, i0, rows, p0, kc int) {
	d := dst[:kc*mr]
	if rows < mr {
		clear(d)
	}
	if transA {
		for p := range kc {
			copy(d[p*mr:p*mr+rows], a[(p0+p)*lda+i0:][:rows])
		}
		return
	}
	for i := range rows {
		row := a[(i0+i)*lda+p0:][:kc]
		for p, v := range row {
			d[p*mr+i] = v
		}
	}
}

// packB copies op(B)[p0:p0+kc, j0:j0+nc] into dst as nr-wide micro-panels:
// element (p, j) goes to dst[(j/nr)*kc*nr + p*nr + j%nr]. Columns past nc
// in the last panel are zero. op(B)[p][j] is b[p*ldb+j], or b[j*ldb+p] when
// transB.
func packB(dst []float32, nr int, b []float32, ldb int, transB bool, p0, kc, j0, nc int) {
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		d := dst[jr*kc : (jr+nr)*kc]
		if cols < nr {
			clear(d)
		}
		if !transB {
			copyRows(d, nr, b[p0*ldb+j0+jr:], ldb, kc, cols)
			continue
		}
		if packTransVec(d, nr, b[(j0+jr)*ldb+p0:], ldb, kc, cols) {
			continue
		}
		// Four source rows at a time: each p writes a 16-byte run.
		j := 0
		for ; j+4 <= cols; j += 4 {
			base := (j0+jr+j)*ldb + p0
			r0 := b[base:][:kc]
			r1 := b[base+ldb:][:kc]
			r2 := b[base+2*ldb:][:kc]
			r3 := b[base+3*ldb:][:kc]
			for p := range r0 {
				t := (*[4]float32)(d[p*nr+j:])
				t[0], t[1], t[2], t[3] = r0[p], r1[p], r2[p], r3[p]
			}
		}
		for ; j < cols; j++ {
			row := b[(j0+jr+j)*ldb+p0:][:kc]
			for p, v := range row {
				d[p*nr+j] = v
			}
		}
	}
}

// copyRows sets d[p*nr+j] = src[p*lds+j] for p < rows, j < cols: whole
// 16- and 32-float rows as fixed-size copies (inline moves, where copy
// would call memmove for each short row).
func copyRows(d []float32, nr int, src []float32, lds, rows, cols int) {
	if copyRowsVec(d, nr, src, lds, rows, cols) {
		return
	}
	switch {
	case cols == 32 && nr == 32:
		for p := range rows {
			*(*[32]float32)(d[p*32:]) = *(*[32]float32)(src[p*lds:])
		}
	case cols == 16 && nr == 16:
		for p := range rows {
			*(*[16]float32)(d[p*16:]) = *(*[16]float32)(src[p*lds:])
		}
	default:
		for p := range rows {
			copy(d[p*nr:p*nr+cols], src[p*lds:][:cols])
		}
	}
}

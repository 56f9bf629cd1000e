package gemm

// packA copies op(A)[i0:i0+mc, p0:p0+kc] into dst as MR-tall micro-panels:
// element (i, p) goes to dst[(i/MR)*kc*MR + p*MR + i%MR]. Rows past mc in the
// last panel are zero. op(A)[i][p] is a[i*lda+p], or a[p*lda+i] when transA.
func packA(dst, a []float32, lda int, transA bool, i0, mc, p0, kc int) {
	for ir := 0; ir < mc; ir += MR {
		mr := min(MR, mc-ir)
		d := dst[ir*kc : (ir+MR)*kc]
		switch {
		case transA && mr == MR:
			for p := range kc {
				*(*[MR]float32)(d[p*MR:]) = *(*[MR]float32)(a[(p0+p)*lda+i0+ir:])
			}
		case transA:
			for p := range kc {
				t := d[p*MR : p*MR+MR]
				n := copy(t, a[(p0+p)*lda+i0+ir:][:mr])
				clear(t[n:])
			}
		case mr == MR:
			base := (i0+ir)*lda + p0
			r0 := a[base:][:kc]
			r1 := a[base+lda:][:kc]
			r2 := a[base+2*lda:][:kc]
			r3 := a[base+3*lda:][:kc]
			r4 := a[base+4*lda:][:kc]
			r5 := a[base+5*lda:][:kc]
			for p := range r0 {
				t := (*[MR]float32)(d[p*MR:])
				t[0], t[1], t[2], t[3], t[4], t[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
			}
		default:
			clear(d)
			for i := range mr {
				row := a[(i0+ir+i)*lda+p0:][:kc]
				for p, v := range row {
					d[p*MR+i] = v
				}
			}
		}
	}
}

// packB copies op(B)[p0:p0+kc, j0:j0+nc] into dst as NR-wide micro-panels:
// element (p, j) goes to dst[(j/NR)*kc*NR + p*NR + j%NR]. Columns past nc in
// the last panel are zero. op(B)[p][j] is b[p*ldb+j], or b[j*ldb+p] when
// transB.
func packB(dst, b []float32, ldb int, transB bool, p0, kc, j0, nc int) {
	for jr := 0; jr < nc; jr += NR {
		nr := min(NR, nc-jr)
		d := dst[jr*kc : (jr+NR)*kc]
		switch {
		case !transB && nr == NR:
			for p := range kc {
				*(*[NR]float32)(d[p*NR:]) = *(*[NR]float32)(b[(p0+p)*ldb+j0+jr:])
			}
		case !transB:
			for p := range kc {
				t := d[p*NR : p*NR+NR]
				n := copy(t, b[(p0+p)*ldb+j0+jr:][:nr])
				clear(t[n:])
			}
		default:
			if nr < NR {
				clear(d)
			}
			// Four source rows at a time: each p writes a 16-byte run.
			j := 0
			for ; j+4 <= nr; j += 4 {
				base := (j0+jr+j)*ldb + p0
				r0 := b[base:][:kc]
				r1 := b[base+ldb:][:kc]
				r2 := b[base+2*ldb:][:kc]
				r3 := b[base+3*ldb:][:kc]
				for p := range r0 {
					t := (*[4]float32)(d[p*NR+j:])
					t[0], t[1], t[2], t[3] = r0[p], r1[p], r2[p], r3[p]
				}
			}
			for ; j < nr; j++ {
				row := b[(j0+jr+j)*ldb+p0:][:kc]
				for p, v := range row {
					d[p*NR+j] = v
				}
			}
		}
	}
}

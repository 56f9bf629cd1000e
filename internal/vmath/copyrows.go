package vmath

import "fmt"

// CopyRows copies rows rows of cols float32 from src (row r at r·lds) to
// dst (row r at r·ldd). Where the CPU has AVX-512 and cols is a multiple
// of 16 it moves each row in 64-byte vectors: with the rows far apart in
// memory (an attention head's rows within the (tokens, heads, dim)
// activations) that runs some 1.5 times as fast as a copy per row
// (BenchmarkCopyRows).
func CopyRows(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if cols > ldd || cols > lds {
		panic(fmt.Sprintf("vmath: CopyRows: cols %d wider than ldd %d or lds %d", cols, ldd, lds))
	}
	_, _ = dst[(rows-1)*ldd+cols-1], src[(rows-1)*lds+cols-1]
	if useAsm && use512 && cols%16 == 0 {
		copyRowsAVX512(&dst[0], ldd, &src[0], lds, rows, cols)
		return
	}
	for r := range rows {
		copy(dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols])
	}
}

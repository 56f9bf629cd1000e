//go:build !amd64

package gemm

// packTransVec has no vector version on this architecture.
func packTransVec(d []float32, nr int, src []float32, lds, kc, cols int) bool { return false }

// packA14Vec has no vector version on this architecture.
func packA14Vec(dst, a []float32, lda int, transA bool, i0, p0, kc int) bool { return false }

func copyRowsVec(d []float32, nr int, src []float32, lds, rows, cols int) bool { return false }
func widenRowsVec(d []float32, nr int, src []uint16, lds, rows, cols int) bool { return false }
func widenCols14Vec(dst []float32, src []uint16, lds, kc int) bool             { return false }
func widenRowsF16Vec(d []float32, nr int, src []uint16, lds, rows, cols int) bool {
	return false
}
func packA14F16Vec(dst []float32, a []uint16, lda int, transA bool, i0, p0, kc int) bool {
	return false
}

func transposeTile16(dst []float32, ldd int, src []float32, lds int) {
	panic("gemm: no vector transpose on this architecture")
}

//go:build !amd64

package gemm

// packVec reports whether the pair packing runs on vector instructions: not
// on this architecture.
var packVec = false

var hasPackVec = false

func rotPairsVec(dst []uint32, ldd int, src []uint16, lds, rows, nq int) {
	panic("gemm: no vector pair packing on this architecture")
}

func interleavePairsVec(dst []uint32, ldd int, src []uint16, lds, nq, n int) {
	panic("gemm: no vector pair packing on this architecture")
}

func gatherPairsVec(dst []uint32, src []uint16, lds, nq, n int) {
	panic("gemm: no vector pair packing on this architecture")
}

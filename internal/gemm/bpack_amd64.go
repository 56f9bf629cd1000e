package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// packVec reports whether the pair packing runs on AVX-512 (bpack_amd64.s)
// rather than in plain Go. Tests switch it off.
var packVec = hasPackVec

// hasPackVec reports whether this CPU has the AVX-512 pair packing.
var hasPackVec = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// rotPairsVec is dst[r*ldd+q] = pair(src[r*lds+2q], src[r*lds+2q+1]) for
// r < rows, q < nq.
func rotPairsVec(dst []uint32, ldd int, src []uint16, lds, rows, nq int) {
	if rows == 0 || nq == 0 {
		return
	}
	if nq > ldd || 2*nq > lds {
		panic("gemm: rotPairsVec: rows overlap")
	}
	_ = dst[(rows-1)*ldd+nq-1]
	_ = src[(rows-1)*lds+2*nq-1]
	rotPairsAVX512(unsafe.SliceData(dst), ldd, unsafe.SliceData(src), lds, rows, nq)
}

// interleavePairsVec is dst[q*ldd+i] = pair(src[2q*lds+i], src[(2q+1)*lds+i])
// for q < nq, i < n.
func interleavePairsVec(dst []uint32, ldd int, src []uint16, lds, nq, n int) {
	if nq == 0 || n == 0 {
		return
	}
	if n > ldd || n > lds {
		panic("gemm: interleavePairsVec: rows overlap")
	}
	_ = dst[(nq-1)*ldd+n-1]
	_ = src[(2*nq-1)*lds+n-1]
	interleavePairsAVX512(unsafe.SliceData(dst), ldd, unsafe.SliceData(src), lds, nq, n)
}

//go:noescape
func rotPairsAVX512(dst *uint32, ldd int, src *uint16, lds, rows, nq int)

//go:noescape
func interleavePairsAVX512(dst *uint32, ldd int, src *uint16, lds, nq, n int)

// gatherPairsVec is dst[q*BNR+j] = pair(src[j*lds+2q], src[j*lds+2q+1])
// for q < nq, j < n ≤ BNR, and 0 for n ≤ j < BNR.
func gatherPairsVec(dst []uint32, src []uint16, lds, nq, n int) {
	if nq == 0 {
		return
	}
	if n == 0 || n > BNR || 2*nq > lds || lds > maxGatherStride {
		panic("gemm: gatherPairsVec: bad shape")
	}
	_ = dst[nq*BNR-1]
	_ = src[(n-1)*lds+2*nq-1]
	var idx [BNR]int32 // byte offsets of the rows
	for j := range n {
		idx[j] = int32(j * lds * 2)
	}
	mask := 1<<n - 1
	gatherPairsAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), &idx[0], nq, mask&0xffff, mask>>16)
}

//go:noescape
func gatherPairsAVX512(dst *uint32, src *uint16, idx *int32, nq int, mask0, mask1 int)

#include "textflag.h"

// func rotPairsAVX512(dst *uint32, ldd int, src *uint16, lds, rows, nq int)
//
// For r < rows and q < nq: dst[r*ldd+q] = src[r*lds+2q]<<16 | src[r*lds+2q+1],
// each little-endian word of a row of src rotated by 16 bits, 16 words a
// step, the tail under mask K1. Row r+4 of src is prefetched meanwhile:
// its runs are short (one K block), too short for the hardware to follow.
TEXT ·rotPairsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $1, R9
	MOVQ rows+32(FP), DX
	MOVQ nq+40(FP), BX

	// K1 = the last nq%16 words.
	MOVQ  BX, CX
	ANDQ  $15, CX
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVW AX, K1
	LEAQ  (R9)(R9*1), R12
	LEAQ  (R12)(R12*1), R12 // 4 rows ahead

rloop:
	TESTQ DX, DX
	JZ    done
	MOVQ  SI, R10
	MOVQ  DI, R11
	MOVQ  BX, CX

	// Prefetch row r+4: 4·nq bytes from SI+4·lds.
	LEAQ (SI)(R12*1), R13
	LEAQ (R13)(BX*4), AX

prefetch:
	PREFETCHT0 (R13)
	ADDQ       $64, R13
	CMPQ       R13, AX
	JLT        prefetch

qloop:
	CMPQ      CX, $16
	JLT       qtail
	VMOVDQU32 (R10), Z0
	VPROLD    $16, Z0, Z0
	VMOVDQU32 Z0, (R11)
	ADDQ      $64, R10
	ADDQ      $64, R11
	SUBQ      $16, CX
	JMP       qloop

qtail:
	VMOVDQU32 (R10), K1, Z0
	VPROLD    $16, Z0, Z0
	VMOVDQU32 Z0, K1, (R11)
	ADDQ      R9, SI
	ADDQ      R8, DI
	DECQ      DX
	JMP       rloop

done:
	VZEROUPPER
	RET

// func interleavePairsAVX512(dst *uint32, ldd int, src *uint16, lds, nq, n int)
//
// For q < nq and i < n: dst[q*ldd+i] = r0[i]<<16 | r1[i], where r0 and r1
// are the rows src[2q*lds:] and src[(2q+1)*lds:]. Sixteen columns a step
// through one zero-extending load per row; the last n%16 under mask K1.
TEXT ·interleavePairsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $1, R9
	MOVQ nq+32(FP), CX
	MOVQ n+40(FP), DX

	// K1 = the last n%16 columns; DX = the number of full steps.
	MOVQ  CX, BX
	MOVQ  DX, CX
	ANDQ  $15, CX
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVW AX, K1
	SHRQ  $4, DX
	MOVQ  BX, CX

	LEAQ (SI)(R9*1), R10 // the odd row
	SHLQ $1, R9          // two rows a step

qloop:
	TESTQ CX, CX
	JZ    done
	MOVQ  SI, R11
	MOVQ  R10, R12
	MOVQ  DI, R13
	MOVQ  DX, BX

iloop:
	TESTQ     BX, BX
	JZ        itail
	VPMOVZXWD (R11), Z0
	VPMOVZXWD (R12), Z1
	VPSLLD    $16, Z0, Z0
	VPORD     Z1, Z0, Z0
	VMOVDQU32 Z0, (R13)
	ADDQ      $32, R11
	ADDQ      $32, R12
	ADDQ      $64, R13
	DECQ      BX
	JMP       iloop

itail:
	VPMOVZXWD (R11), K1, Z0
	VPMOVZXWD (R12), K1, Z1
	VPSLLD    $16, Z0, Z0
	VPORD     Z1, Z0, Z0
	VMOVDQU32 Z0, K1, (R13)
	ADDQ      R9, SI
	ADDQ      R9, R10
	ADDQ      R8, DI
	DECQ      CX
	JMP       qloop

done:
	VZEROUPPER
	RET

// func gatherPairsAVX512(dst *uint32, src *uint16, idx *int32, nq int, mask0, mask1 int)
//
// For q < nq: dst[q*32+j] = pair(src[idx[j]/2+2q], src[idx[j]/2+2q+1]) for
// the j set in mask0 (j < 16) and mask1 (j-16), 0 for the others: two
// gathers of 16 words a pair, each rotated by 16 bits.
TEXT ·gatherPairsAVX512(SB), NOSPLIT, $0-48
	MOVQ      dst+0(FP), DI
	MOVQ      src+8(FP), SI
	MOVQ      idx+16(FP), AX
	VMOVDQU32 (AX), Z30
	VMOVDQU32 64(AX), Z31
	MOVQ      nq+24(FP), CX
	MOVQ      mask0+32(FP), R8
	MOVQ      mask1+40(FP), R9
	TESTQ     CX, CX
	JZ        done

loop:
	KMOVW      R8, K1
	KMOVW      R9, K2
	VPXORD     Z0, Z0, Z0
	VPXORD     Z1, Z1, Z1
	VPGATHERDD (SI)(Z30*1), K1, Z0
	VPGATHERDD (SI)(Z31*1), K2, Z1
	VPROLD     $16, Z0, Z0
	VPROLD     $16, Z1, Z1
	VMOVDQU32  Z0, (DI)
	VMOVDQU32  Z1, 64(DI)
	ADDQ       $4, SI
	ADDQ       $128, DI
	DECQ       CX
	JNZ        loop

done:
	VZEROUPPER
	RET

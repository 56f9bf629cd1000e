//go:build amd64 && !purego

#include "textflag.h"
#include "bf16_amd64.h"

// AVX-512 versions of fromBF16AVX2 and toBF16AVX2, 16 lanes a block, the
// same integer operations (so the same bits as bf16Bits): widening is a
// zero-extension shifted up 16 bits; rounding adds 0x7fff plus the bit
// above the cut and shifts down, and a NaN keeps its top half with the
// quiet bit set.

// func fromBF16AVX512(dst *float32, src *uint16, n int)
//
// n is a positive multiple of 16.
TEXT ·fromBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

frombf16_512:
	VPMOVZXWD (SI), Z0
	VPSLLD    $16, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JNZ       frombf16_512
	VZEROUPPER
	RET

// func toBF16AVX512(dst *uint16, src *float32, n int)
//
// n is a positive multiple of 16.
TEXT ·toBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	BF16_CONSTS(Z10, Z11, Z12, Z13, Z14)

tobf16_512:
	VMOVDQU32 (SI), Z0
	RINT_BF16(Z0, (DI), Z3, Z1, Z2, Z10, Z11, Z12, Z13, Z14)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JNZ       tobf16_512
	VZEROUPPER
	RET

// func toBF16CvtAVX512(dst *uint16, src *float32, n int)
//
// toBF16AVX512 with VCVTNEPS2BF16 (AVX512_BF16), which rounds to nearest
// even and quiets a NaN exactly as bf16Bits does, except that it flushes
// a subnormal input to zero. A block of 16 holding a subnormal is rounded
// by the integer operations instead. n is a positive multiple of 16.
TEXT ·toBF16CvtAVX512(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	BF16_CONSTS(Z10, Z11, Z12, Z13, Z14)

cvtbf16_512:
	VMOVDQU32 (SI), Z3
	STORE_BF16_Z3((DI), cvtbf16_int)

cvtbf16_next:
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $16, CX
	JNZ  cvtbf16_512
	VZEROUPPER
	RET

cvtbf16_int:
	RINT_BF16(Z3, (DI), Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14)
	JMP     cvtbf16_next

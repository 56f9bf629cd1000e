//go:build amd64 && !purego

#include "textflag.h"

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
	VPBROADCASTD ·vconst+768(SB), Z10 // 1
	VPBROADCASTD ·vconst+800(SB), Z11 // 0x7fff
	VPBROADCASTD ·vconst+448(SB), Z12 // 0x7fffffff
	VPBROADCASTD ·vconst+832(SB), Z13 // 0x7f800000
	VPBROADCASTD ·vconst+864(SB), Z14 // 0x40

tobf16_512:
	VMOVDQU32 (SI), Z0
	VPSRLD    $16, Z0, Z1
	VPANDD    Z10, Z1, Z2
	VPADDD    Z2, Z0, Z2
	VPADDD    Z11, Z2, Z2
	VPSRLD    $16, Z2, Z2
	VPANDD    Z12, Z0, Z3
	VPCMPUD   $6, Z13, Z3, K1 // |u| > +Inf bits: NaN
	VPORD     Z14, Z1, K1, Z2
	VPMOVDW   Z2, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JNZ       tobf16_512
	VZEROUPPER
	RET

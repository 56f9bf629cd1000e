#include "textflag.h"

// The 16×16 transpose below takes rows in Z0..Z15 and leaves column c in
// Zc, in four rounds of shuffles (pairs of floats, pairs of pairs,
// 128-bit lanes twice), with Z16..Z31 as temporaries.

// func transpose16x16AVX512(dst *float32, ldd int, src *float32, lds int)
//
// dst[p*ldd+j] = src[j*lds+p] for j, p < 16.
TEXT ·transpose16x16AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	VMOVUPS (SI), Z0
	ADDQ R9, SI
	VMOVUPS (SI), Z1
	ADDQ R9, SI
	VMOVUPS (SI), Z2
	ADDQ R9, SI
	VMOVUPS (SI), Z3
	ADDQ R9, SI
	VMOVUPS (SI), Z4
	ADDQ R9, SI
	VMOVUPS (SI), Z5
	ADDQ R9, SI
	VMOVUPS (SI), Z6
	ADDQ R9, SI
	VMOVUPS (SI), Z7
	ADDQ R9, SI
	VMOVUPS (SI), Z8
	ADDQ R9, SI
	VMOVUPS (SI), Z9
	ADDQ R9, SI
	VMOVUPS (SI), Z10
	ADDQ R9, SI
	VMOVUPS (SI), Z11
	ADDQ R9, SI
	VMOVUPS (SI), Z12
	ADDQ R9, SI
	VMOVUPS (SI), Z13
	ADDQ R9, SI
	VMOVUPS (SI), Z14
	ADDQ R9, SI
	VMOVUPS (SI), Z15
	VUNPCKLPS Z1, Z0, Z16
	VUNPCKHPS Z1, Z0, Z17
	VUNPCKLPS Z3, Z2, Z18
	VUNPCKHPS Z3, Z2, Z19
	VUNPCKLPS Z5, Z4, Z20
	VUNPCKHPS Z5, Z4, Z21
	VUNPCKLPS Z7, Z6, Z22
	VUNPCKHPS Z7, Z6, Z23
	VUNPCKLPS Z9, Z8, Z24
	VUNPCKHPS Z9, Z8, Z25
	VUNPCKLPS Z11, Z10, Z26
	VUNPCKHPS Z11, Z10, Z27
	VUNPCKLPS Z13, Z12, Z28
	VUNPCKHPS Z13, Z12, Z29
	VUNPCKLPS Z15, Z14, Z30
	VUNPCKHPS Z15, Z14, Z31
	VUNPCKLPD Z18, Z16, Z0
	VUNPCKHPD Z18, Z16, Z1
	VUNPCKLPD Z19, Z17, Z2
	VUNPCKHPD Z19, Z17, Z3
	VUNPCKLPD Z22, Z20, Z4
	VUNPCKHPD Z22, Z20, Z5
	VUNPCKLPD Z23, Z21, Z6
	VUNPCKHPD Z23, Z21, Z7
	VUNPCKLPD Z26, Z24, Z8
	VUNPCKHPD Z26, Z24, Z9
	VUNPCKLPD Z27, Z25, Z10
	VUNPCKHPD Z27, Z25, Z11
	VUNPCKLPD Z30, Z28, Z12
	VUNPCKHPD Z30, Z28, Z13
	VUNPCKLPD Z31, Z29, Z14
	VUNPCKHPD Z31, Z29, Z15
	VSHUFF32X4 $0x88, Z4, Z0, Z16
	VSHUFF32X4 $0xdd, Z4, Z0, Z20
	VSHUFF32X4 $0x88, Z5, Z1, Z17
	VSHUFF32X4 $0xdd, Z5, Z1, Z21
	VSHUFF32X4 $0x88, Z6, Z2, Z18
	VSHUFF32X4 $0xdd, Z6, Z2, Z22
	VSHUFF32X4 $0x88, Z7, Z3, Z19
	VSHUFF32X4 $0xdd, Z7, Z3, Z23
	VSHUFF32X4 $0x88, Z12, Z8, Z24
	VSHUFF32X4 $0xdd, Z12, Z8, Z28
	VSHUFF32X4 $0x88, Z13, Z9, Z25
	VSHUFF32X4 $0xdd, Z13, Z9, Z29
	VSHUFF32X4 $0x88, Z14, Z10, Z26
	VSHUFF32X4 $0xdd, Z14, Z10, Z30
	VSHUFF32X4 $0x88, Z15, Z11, Z27
	VSHUFF32X4 $0xdd, Z15, Z11, Z31
	VSHUFF32X4 $0x88, Z24, Z16, Z0
	VSHUFF32X4 $0xdd, Z24, Z16, Z8
	VSHUFF32X4 $0x88, Z28, Z20, Z4
	VSHUFF32X4 $0xdd, Z28, Z20, Z12
	VSHUFF32X4 $0x88, Z25, Z17, Z1
	VSHUFF32X4 $0xdd, Z25, Z17, Z9
	VSHUFF32X4 $0x88, Z29, Z21, Z5
	VSHUFF32X4 $0xdd, Z29, Z21, Z13
	VSHUFF32X4 $0x88, Z26, Z18, Z2
	VSHUFF32X4 $0xdd, Z26, Z18, Z10
	VSHUFF32X4 $0x88, Z30, Z22, Z6
	VSHUFF32X4 $0xdd, Z30, Z22, Z14
	VSHUFF32X4 $0x88, Z27, Z19, Z3
	VSHUFF32X4 $0xdd, Z27, Z19, Z11
	VSHUFF32X4 $0x88, Z31, Z23, Z7
	VSHUFF32X4 $0xdd, Z31, Z23, Z15
	VMOVUPS Z0, (DI)
	ADDQ R8, DI
	VMOVUPS Z1, (DI)
	ADDQ R8, DI
	VMOVUPS Z2, (DI)
	ADDQ R8, DI
	VMOVUPS Z3, (DI)
	ADDQ R8, DI
	VMOVUPS Z4, (DI)
	ADDQ R8, DI
	VMOVUPS Z5, (DI)
	ADDQ R8, DI
	VMOVUPS Z6, (DI)
	ADDQ R8, DI
	VMOVUPS Z7, (DI)
	ADDQ R8, DI
	VMOVUPS Z8, (DI)
	ADDQ R8, DI
	VMOVUPS Z9, (DI)
	ADDQ R8, DI
	VMOVUPS Z10, (DI)
	ADDQ R8, DI
	VMOVUPS Z11, (DI)
	ADDQ R8, DI
	VMOVUPS Z12, (DI)
	ADDQ R8, DI
	VMOVUPS Z13, (DI)
	ADDQ R8, DI
	VMOVUPS Z14, (DI)
	ADDQ R8, DI
	VMOVUPS Z15, (DI)
	VZEROUPPER
	RET

// PACK14_BLOCK packs one block of 16 k of a 14-row micro-panel: fourteen
// rows of 16 loaded from SI, lds bytes (R9) apart, by LOAD (VMOVUPS for
// float32, VCVTPH2PS for binary16, widened as loaded), two zero rows, the
// 16×16 transpose, and sixteen 64-byte stores 56 bytes apart from DI,
// each overwriting the previous one's two spare lanes (the last writes 8
// bytes past the panel); DI moves to the next block. R10 is clobbered.
#define PACK14_BLOCK(LOAD) \
	MOVQ SI, R10; \
	LOAD (R10), Z0; \
	ADDQ R9, R10; \
	LOAD (R10), Z1; \
	ADDQ R9, R10; \
	LOAD (R10), Z2; \
	ADDQ R9, R10; \
	LOAD (R10), Z3; \
	ADDQ R9, R10; \
	LOAD (R10), Z4; \
	ADDQ R9, R10; \
	LOAD (R10), Z5; \
	ADDQ R9, R10; \
	LOAD (R10), Z6; \
	ADDQ R9, R10; \
	LOAD (R10), Z7; \
	ADDQ R9, R10; \
	LOAD (R10), Z8; \
	ADDQ R9, R10; \
	LOAD (R10), Z9; \
	ADDQ R9, R10; \
	LOAD (R10), Z10; \
	ADDQ R9, R10; \
	LOAD (R10), Z11; \
	ADDQ R9, R10; \
	LOAD (R10), Z12; \
	ADDQ R9, R10; \
	LOAD (R10), Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	VUNPCKLPS Z1, Z0, Z16; \
	VUNPCKHPS Z1, Z0, Z17; \
	VUNPCKLPS Z3, Z2, Z18; \
	VUNPCKHPS Z3, Z2, Z19; \
	VUNPCKLPS Z5, Z4, Z20; \
	VUNPCKHPS Z5, Z4, Z21; \
	VUNPCKLPS Z7, Z6, Z22; \
	VUNPCKHPS Z7, Z6, Z23; \
	VUNPCKLPS Z9, Z8, Z24; \
	VUNPCKHPS Z9, Z8, Z25; \
	VUNPCKLPS Z11, Z10, Z26; \
	VUNPCKHPS Z11, Z10, Z27; \
	VUNPCKLPS Z13, Z12, Z28; \
	VUNPCKHPS Z13, Z12, Z29; \
	VUNPCKLPS Z15, Z14, Z30; \
	VUNPCKHPS Z15, Z14, Z31; \
	VUNPCKLPD Z18, Z16, Z0; \
	VUNPCKHPD Z18, Z16, Z1; \
	VUNPCKLPD Z19, Z17, Z2; \
	VUNPCKHPD Z19, Z17, Z3; \
	VUNPCKLPD Z22, Z20, Z4; \
	VUNPCKHPD Z22, Z20, Z5; \
	VUNPCKLPD Z23, Z21, Z6; \
	VUNPCKHPD Z23, Z21, Z7; \
	VUNPCKLPD Z26, Z24, Z8; \
	VUNPCKHPD Z26, Z24, Z9; \
	VUNPCKLPD Z27, Z25, Z10; \
	VUNPCKHPD Z27, Z25, Z11; \
	VUNPCKLPD Z30, Z28, Z12; \
	VUNPCKHPD Z30, Z28, Z13; \
	VUNPCKLPD Z31, Z29, Z14; \
	VUNPCKHPD Z31, Z29, Z15; \
	VSHUFF32X4 $0x88, Z4, Z0, Z16; \
	VSHUFF32X4 $0xdd, Z4, Z0, Z20; \
	VSHUFF32X4 $0x88, Z5, Z1, Z17; \
	VSHUFF32X4 $0xdd, Z5, Z1, Z21; \
	VSHUFF32X4 $0x88, Z6, Z2, Z18; \
	VSHUFF32X4 $0xdd, Z6, Z2, Z22; \
	VSHUFF32X4 $0x88, Z7, Z3, Z19; \
	VSHUFF32X4 $0xdd, Z7, Z3, Z23; \
	VSHUFF32X4 $0x88, Z12, Z8, Z24; \
	VSHUFF32X4 $0xdd, Z12, Z8, Z28; \
	VSHUFF32X4 $0x88, Z13, Z9, Z25; \
	VSHUFF32X4 $0xdd, Z13, Z9, Z29; \
	VSHUFF32X4 $0x88, Z14, Z10, Z26; \
	VSHUFF32X4 $0xdd, Z14, Z10, Z30; \
	VSHUFF32X4 $0x88, Z15, Z11, Z27; \
	VSHUFF32X4 $0xdd, Z15, Z11, Z31; \
	VSHUFF32X4 $0x88, Z24, Z16, Z0; \
	VSHUFF32X4 $0xdd, Z24, Z16, Z8; \
	VSHUFF32X4 $0x88, Z28, Z20, Z4; \
	VSHUFF32X4 $0xdd, Z28, Z20, Z12; \
	VSHUFF32X4 $0x88, Z25, Z17, Z1; \
	VSHUFF32X4 $0xdd, Z25, Z17, Z9; \
	VSHUFF32X4 $0x88, Z29, Z21, Z5; \
	VSHUFF32X4 $0xdd, Z29, Z21, Z13; \
	VSHUFF32X4 $0x88, Z26, Z18, Z2; \
	VSHUFF32X4 $0xdd, Z26, Z18, Z10; \
	VSHUFF32X4 $0x88, Z30, Z22, Z6; \
	VSHUFF32X4 $0xdd, Z30, Z22, Z14; \
	VSHUFF32X4 $0x88, Z27, Z19, Z3; \
	VSHUFF32X4 $0xdd, Z27, Z19, Z11; \
	VSHUFF32X4 $0x88, Z31, Z23, Z7; \
	VSHUFF32X4 $0xdd, Z31, Z23, Z15; \
	VMOVUPS Z0, 0(DI); \
	VMOVUPS Z1, 56(DI); \
	VMOVUPS Z2, 112(DI); \
	VMOVUPS Z3, 168(DI); \
	VMOVUPS Z4, 224(DI); \
	VMOVUPS Z5, 280(DI); \
	VMOVUPS Z6, 336(DI); \
	VMOVUPS Z7, 392(DI); \
	VMOVUPS Z8, 448(DI); \
	VMOVUPS Z9, 504(DI); \
	VMOVUPS Z10, 560(DI); \
	VMOVUPS Z11, 616(DI); \
	VMOVUPS Z12, 672(DI); \
	VMOVUPS Z13, 728(DI); \
	VMOVUPS Z14, 784(DI); \
	VMOVUPS Z15, 840(DI); \
	ADDQ $896, DI

// func packA14RowsAVX512(dst, src *float32, lds, blocks int)
//
// dst[p*14+i] = src[i*lds+p] for i < 14, p < 16·blocks: per block of 16
// k, fourteen row loads (two zero rows), the transpose, and sixteen
// 64-byte stores 56 bytes apart, each overwriting the previous one's two
// spare lanes; the last writes 8 bytes past the panel.
TEXT ·packA14RowsAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $2, R9
	MOVQ blocks+24(FP), CX
loopRows:
	PACK14_BLOCK(VMOVUPS)
	ADDQ $64, SI
	DECQ CX
	JNZ loopRows
	VZEROUPPER
	RET

// func packA14ColsAVX512(dst, src *float32, lds, kc int)
//
// dst[p*14+i] = src[p*lds+i] for i < 14, p < kc: a 14-lane masked load
// and a 64-byte store per p, 56 bytes apart (the last writes 8 bytes past
// the panel).
TEXT ·packA14ColsAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $2, R9
	MOVQ kc+24(FP), CX
	MOVL $0x3fff, AX
	KMOVW AX, K1
loopCols:
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS Z0, (DI)
	ADDQ R9, SI
	ADDQ $56, DI
	DECQ CX
	JNZ loopCols
	VZEROUPPER
	RET

// func copyRows32AVX512(dst, src *float32, lds, rows int)
//
// dst[p*32+j] = src[p*lds+j] for j < 32, p < rows: a B micro-panel of
// Sgemm's AVX-512 kernel, two 64-byte loads and stores per row.
TEXT ·copyRows32AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $2, R9
	MOVQ rows+24(FP), CX
copy32:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ R9, SI
	ADDQ $128, DI
	DECQ CX
	JNZ copy32
	VZEROUPPER
	RET

// func widenRows32AVX512(dst *float32, src *uint16, lds, rows int)
//
// dst[p*32+j] = the float32 of the bfloat16 src[p*lds+j] for j < 32,
// p < rows.
TEXT ·widenRows32AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $1, R9
	MOVQ rows+24(FP), CX
widen32:
	VPMOVZXWD (SI), Z0
	VPMOVZXWD 32(SI), Z1
	VPSLLD $16, Z0, Z0
	VPSLLD $16, Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ R9, SI
	ADDQ $128, DI
	DECQ CX
	JNZ widen32
	VZEROUPPER
	RET

// func widenCols14AVX512(dst *float32, src *uint16, lds, kc int)
//
// dst[p*14+i] = the float32 of the bfloat16 src[p*lds+i] for i < 14,
// p < kc: a 14-lane masked load, and a 64-byte store per p, 56 bytes apart
// (the last writes 8 bytes past the panel).
TEXT ·widenCols14AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $1, R9
	MOVQ kc+24(FP), CX
	MOVL $0x3fff, AX
	KMOVW AX, K1
widen14:
	VPMOVZXWD.Z (SI), K1, Z0
	VPSLLD $16, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ R9, SI
	ADDQ $56, DI
	DECQ CX
	JNZ widen14
	VZEROUPPER
	RET

// func packA14RowsF16AVX512(dst *float32, src *uint16, lds, blocks int)
//
// packA14RowsAVX512 for binary16 src, each row's 16 elements widened by
// VCVTPH2PS as they are loaded (exact): no float32 copy of the rows.
TEXT ·packA14RowsF16AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $1, R9
	MOVQ blocks+24(FP), CX
loopRowsF16:
	PACK14_BLOCK(VCVTPH2PS)
	ADDQ $32, SI
	DECQ CX
	JNZ loopRowsF16
	VZEROUPPER
	RET

// func widenRows32F16AVX512(dst *float32, src *uint16, lds, rows int)
//
// widenRows32AVX512 for binary16 src: dst[p*32+j] = the float32 of
// src[p*lds+j] for j < 32, p < rows.
TEXT ·widenRows32F16AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $1, R9
	MOVQ rows+24(FP), CX
widen32f16:
	VCVTPH2PS (SI), Z0
	VCVTPH2PS 32(SI), Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ R9, SI
	ADDQ $128, DI
	DECQ CX
	JNZ widen32f16
	VZEROUPPER
	RET

// func widenCols14F16AVX512(dst *float32, src *uint16, lds, kc int)
//
// widenCols14AVX512 for binary16 src: a 14-lane masked VCVTPH2PS (the two
// lanes above read nothing and are zero) and a 64-byte store per p, 56
// bytes apart (the last writes 8 bytes past the panel).
TEXT ·widenCols14F16AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $1, R9
	MOVQ kc+24(FP), CX
	MOVL $0x3fff, AX
	KMOVW AX, K1
widen14f16:
	VCVTPH2PS.Z (SI), K1, Z0
	VMOVUPS Z0, (DI)
	ADDQ R9, SI
	ADDQ $56, DI
	DECQ CX
	JNZ widen14f16
	VZEROUPPER
	RET

//go:build amd64 && !purego

#include "textflag.h"

// Float64 reductions of four rows at once: the lanes of SumSq64 and Dot64
// (element 8b+j of a row in lane j, each product of widened float32 exact,
// then one rounded add per element), kept per row in two registers:
// row k's lanes 0-3 in Y(2k), lanes 4-7 in Y(2k+1). A row's adds still
// happen in its own order; the four rows' chains only overlap, which is
// what a single row's latency-bound loop cannot do.

// ACC_LOAD and ACC_STORE move the four rows' lanes between acc (AX) and
// Y0-Y7.
#define ACC_LOAD \
	VMOVUPD (AX), Y0;    \
	VMOVUPD 32(AX), Y1;  \
	VMOVUPD 64(AX), Y2;  \
	VMOVUPD 96(AX), Y3;  \
	VMOVUPD 128(AX), Y4; \
	VMOVUPD 160(AX), Y5; \
	VMOVUPD 192(AX), Y6; \
	VMOVUPD 224(AX), Y7

#define ACC_STORE \
	VMOVUPD Y0, (AX);    \
	VMOVUPD Y1, 32(AX);  \
	VMOVUPD Y2, 64(AX);  \
	VMOVUPD Y3, 96(AX);  \
	VMOVUPD Y4, 128(AX); \
	VMOVUPD Y5, 160(AX); \
	VMOVUPD Y6, 192(AX); \
	VMOVUPD Y7, 224(AX)

// func sumSq64x4AVX2(x *float32, stride, n int, acc *[4][8]float64)
//
// Rows start at x, x+stride, x+2·stride, x+3·stride (elements); n, a
// positive multiple of 8, elements of each are added into acc[k].
TEXT ·sumSq64x4AVX2(SB), NOSPLIT, $0-32
	MOVQ    x+0(FP), SI
	MOVQ    stride+8(FP), R8
	MOVQ    n+16(FP), CX
	MOVQ    acc+24(FP), AX
	SHLQ    $2, R8
	LEAQ    (R8)(R8*2), R10
	ACC_LOAD

// SQ_ROW adds the squares of 8 elements (at M0, M1: 4 each) to one row's
// lanes (ACC0: 0-3, ACC1: 4-7); Y8, Y9 temporaries.
#define SQ_ROW(M0, M1, ACC0, ACC1) \
	VCVTPS2PD M0, Y8;       \
	VCVTPS2PD M1, Y9;       \
	VMULPD    Y8, Y8, Y8;   \
	VMULPD    Y9, Y9, Y9;   \
	VADDPD    Y8, ACC0, ACC0; \
	VADDPD    Y9, ACC1, ACC1

loop:
	SQ_ROW((SI), 16(SI), Y0, Y1)
	SQ_ROW((SI)(R8*1), 16(SI)(R8*1), Y2, Y3)
	SQ_ROW((SI)(R8*2), 16(SI)(R8*2), Y4, Y5)
	SQ_ROW((SI)(R10*1), 16(SI)(R10*1), Y6, Y7)
	ADDQ      $32, SI
	SUBQ      $8, CX
	JNZ       loop

	ACC_STORE
	VZEROUPPER
	RET

// func dot64x4AVX2(a, b *float32, stride, n int, acc *[4][8]float64)
//
// As sumSq64x4AVX2 with the products a·b of rows of a and b at the same
// offsets.
TEXT ·dot64x4AVX2(SB), NOSPLIT, $0-40
	MOVQ    a+0(FP), SI
	MOVQ    b+8(FP), DX
	MOVQ    stride+16(FP), R8
	MOVQ    n+24(FP), CX
	MOVQ    acc+32(FP), AX
	SHLQ    $2, R8
	LEAQ    (R8)(R8*2), R10
	ACC_LOAD

// DOT_ROW adds the products of 8 elements of a (A0, A1) and b (B0, B1)
// to one row's lanes (ACC0, ACC1); Y8, Y9, Y12, Y13 temporaries.
#define DOT_ROW(A0, A1, B0, B1, ACC0, ACC1) \
	VCVTPS2PD A0, Y8;         \
	VCVTPS2PD A1, Y9;         \
	VCVTPS2PD B0, Y12;        \
	VCVTPS2PD B1, Y13;        \
	VMULPD    Y12, Y8, Y8;    \
	VMULPD    Y13, Y9, Y9;    \
	VADDPD    Y8, ACC0, ACC0; \
	VADDPD    Y9, ACC1, ACC1

dloop:
	DOT_ROW((SI), 16(SI), (DX), 16(DX), Y0, Y1)
	DOT_ROW((SI)(R8*1), 16(SI)(R8*1), (DX)(R8*1), 16(DX)(R8*1), Y2, Y3)
	DOT_ROW((SI)(R8*2), 16(SI)(R8*2), (DX)(R8*2), 16(DX)(R8*2), Y4, Y5)
	DOT_ROW((SI)(R10*1), 16(SI)(R10*1), (DX)(R10*1), 16(DX)(R10*1), Y6, Y7)
	ADDQ      $32, SI
	ADDQ      $32, DX
	SUBQ      $8, CX
	JNZ       dloop

	ACC_STORE
	VZEROUPPER
	RET

// func dot64ColsRowsAVX512(acc *float64, a, b *float32, stride, rows, n int)
//
// acc[c] += a[r·stride+c]·b[r·stride+c] for r = 0, 1, …, rows−1 in turn,
// c < n (a positive multiple of 8), rows ≥ 1: Dot64Cols over rows rows,
// with each block of acc loaded and stored once for all of them.
TEXT ·dot64ColsRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ stride+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ n+40(FP), CX
	SHLQ $2, R8

cols:
	VMOVUPD (DI), Z0
	MOVQ    SI, R10
	MOVQ    DX, R11
	MOVQ    R9, BX

rows:
	VCVTPS2PD (R10), Z1
	VCVTPS2PD (R11), Z2
	VMULPD    Z2, Z1, Z1
	VADDPD    Z1, Z0, Z0
	ADDQ      R8, R10
	ADDQ      R8, R11
	DECQ      BX
	JNZ       rows

	VMOVUPD Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JNZ     cols
	VZEROUPPER
	RET


// func axpyBF16AVX2(dst *float32, x *uint16, n int, alpha float32)
//
// Axpy of bfloat16 x widened in registers: dst[i] += float32(alpha·x[i]),
// n a positive multiple of 8.
TEXT ·axpyBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Y15

axbf_loop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMULPS    Y0, Y15, Y0
	VADDPS    (DI), Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, DI
	ADDQ      $16, SI
	SUBQ      $8, CX
	JNZ       axbf_loop
	VZEROUPPER
	RET

// func axpyF16F16C(dst *float32, x *uint16, n int, alpha float32)
//
// axpyBF16AVX2 for binary16 x, widened by VCVTPH2PS (F16C).
TEXT ·axpyF16F16C(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Y15

axf16_loop:
	VCVTPH2PS (SI), Y0
	VMULPS    Y0, Y15, Y0
	VADDPS    (DI), Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, DI
	ADDQ      $16, SI
	SUBQ      $8, CX
	JNZ       axf16_loop
	VZEROUPPER
	RET

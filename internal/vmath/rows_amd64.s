//go:build amd64 && !purego

#include "textflag.h"

// Float64 reductions of four rows at once: the lanes of SumSq64 and Dot64
// (element 8b+j of a row in lane j, each product of widened float32 exact,
// then one rounded add per element), kept per row in two registers:
// row k's lanes 0-3 in Y(2k), lanes 4-7 in Y(2k+1). A row's adds still
// happen in its own order; the four rows' chains only overlap, which is
// what a single row's latency-bound loop cannot do.

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
	VMOVUPD (AX), Y0
	VMOVUPD 32(AX), Y1
	VMOVUPD 64(AX), Y2
	VMOVUPD 96(AX), Y3
	VMOVUPD 128(AX), Y4
	VMOVUPD 160(AX), Y5
	VMOVUPD 192(AX), Y6
	VMOVUPD 224(AX), Y7

loop:
	VCVTPS2PD (SI), Y8
	VCVTPS2PD 16(SI), Y9
	VCVTPS2PD (SI)(R8*1), Y10
	VCVTPS2PD 16(SI)(R8*1), Y11
	VCVTPS2PD (SI)(R8*2), Y12
	VCVTPS2PD 16(SI)(R8*2), Y13
	VCVTPS2PD (SI)(R10*1), Y14
	VCVTPS2PD 16(SI)(R10*1), Y15
	VMULPD    Y8, Y8, Y8
	VMULPD    Y9, Y9, Y9
	VMULPD    Y10, Y10, Y10
	VMULPD    Y11, Y11, Y11
	VMULPD    Y12, Y12, Y12
	VMULPD    Y13, Y13, Y13
	VMULPD    Y14, Y14, Y14
	VMULPD    Y15, Y15, Y15
	VADDPD    Y8, Y0, Y0
	VADDPD    Y9, Y1, Y1
	VADDPD    Y10, Y2, Y2
	VADDPD    Y11, Y3, Y3
	VADDPD    Y12, Y4, Y4
	VADDPD    Y13, Y5, Y5
	VADDPD    Y14, Y6, Y6
	VADDPD    Y15, Y7, Y7
	ADDQ      $32, SI
	SUBQ      $8, CX
	JNZ       loop

	VMOVUPD Y0, (AX)
	VMOVUPD Y1, 32(AX)
	VMOVUPD Y2, 64(AX)
	VMOVUPD Y3, 96(AX)
	VMOVUPD Y4, 128(AX)
	VMOVUPD Y5, 160(AX)
	VMOVUPD Y6, 192(AX)
	VMOVUPD Y7, 224(AX)
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
	VMOVUPD (AX), Y0
	VMOVUPD 32(AX), Y1
	VMOVUPD 64(AX), Y2
	VMOVUPD 96(AX), Y3
	VMOVUPD 128(AX), Y4
	VMOVUPD 160(AX), Y5
	VMOVUPD 192(AX), Y6
	VMOVUPD 224(AX), Y7

dloop:
	VCVTPS2PD (SI), Y8
	VCVTPS2PD 16(SI), Y9
	VCVTPS2PD (DX), Y12
	VCVTPS2PD 16(DX), Y13
	VMULPD    Y12, Y8, Y8
	VMULPD    Y13, Y9, Y9
	VADDPD    Y8, Y0, Y0
	VADDPD    Y9, Y1, Y1
	VCVTPS2PD (SI)(R8*1), Y10
	VCVTPS2PD 16(SI)(R8*1), Y11
	VCVTPS2PD (DX)(R8*1), Y14
	VCVTPS2PD 16(DX)(R8*1), Y15
	VMULPD    Y14, Y10, Y10
	VMULPD    Y15, Y11, Y11
	VADDPD    Y10, Y2, Y2
	VADDPD    Y11, Y3, Y3
	VCVTPS2PD (SI)(R8*2), Y8
	VCVTPS2PD 16(SI)(R8*2), Y9
	VCVTPS2PD (DX)(R8*2), Y12
	VCVTPS2PD 16(DX)(R8*2), Y13
	VMULPD    Y12, Y8, Y8
	VMULPD    Y13, Y9, Y9
	VADDPD    Y8, Y4, Y4
	VADDPD    Y9, Y5, Y5
	VCVTPS2PD (SI)(R10*1), Y10
	VCVTPS2PD 16(SI)(R10*1), Y11
	VCVTPS2PD (DX)(R10*1), Y14
	VCVTPS2PD 16(DX)(R10*1), Y15
	VMULPD    Y14, Y10, Y10
	VMULPD    Y15, Y11, Y11
	VADDPD    Y10, Y6, Y6
	VADDPD    Y11, Y7, Y7
	ADDQ      $32, SI
	ADDQ      $32, DX
	SUBQ      $8, CX
	JNZ       dloop

	VMOVUPD Y0, (AX)
	VMOVUPD Y1, 32(AX)
	VMOVUPD Y2, 64(AX)
	VMOVUPD Y3, 96(AX)
	VMOVUPD Y4, 128(AX)
	VMOVUPD Y5, 160(AX)
	VMOVUPD Y6, 192(AX)
	VMOVUPD Y7, 224(AX)
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

//go:build arm64

#include "textflag.h"

// The NEON micro-kernel: the 6×16 tile of kernelGo6x16 in V0..V23 (row r
// in V(4r)..V(4r+3), four lanes each), the packed B row in V24..V27, A
// broadcast through V28/V29. Per k: one 64-byte load of B, six
// load-and-replicates of A and 24 FMLA, each lane's sum over k in order
// with one rounding a step, as fma32 in the Go kernel.

// negzero is −0.0, the addend of alpha·acc: FMLA adds to a register, and
// −0 + x is x for every x, −0 and NaNs included, so FMLA from −0 rounds
// alpha·acc exactly as a multiply does.
DATA negzero<>+0(SB)/4, $0x80000000
GLOBL negzero<>(SB), RODATA|NOPTR, $4

// ROW adds A (broadcast in T) times the B row to row R's accumulators.
#define ROW(T, A0, A1, A2, A3) \
	VFMLA T.S4, V24.S4, A0.S4; \
	VFMLA T.S4, V25.S4, A1.S4; \
	VFMLA T.S4, V26.S4, A2.S4; \
	VFMLA T.S4, V27.S4, A3.S4

// SCALE sets V28 = alpha·ACC (V30 alpha, V31 −0).
#define SCALE(ACC) \
	VMOV  V31.B16, V28.B16; \
	VFMLA V30.S4, ACC.S4, V28.S4

// STOREV stores alpha·ACC at R5, advancing R5 by 16 bytes.
#define STOREV(ACC) \
	SCALE(ACC); \
	VST1.P [V28.S4], 16(R5)

// STOREV_C stores alpha·ACC + beta·c (V27 beta; fused) over the c at R5,
// advancing R5 by 16 bytes.
#define STOREV_C(ACC) \
	SCALE(ACC);                  \
	VLD1  (R5), [V29.S4];        \
	VFMLA V27.S4, V29.S4, V28.S4; \
	VST1.P [V28.S4], 16(R5)

// func kernel6x16NEON(kc int, a *float32, rs, qs int, b, c *float32, ldc int, alpha, beta float32, loadC int)
//
// kc ≥ 1; the A element (i, p) at a + 4·(i·rs + p·qs), B packed (kc, 16),
// C rows ldc elements apart (see kernelFunc).
TEXT ·kernel6x16NEON(SB), NOSPLIT, $0-72
	MOVD kc+0(FP), R0
	MOVD a+8(FP), R9
	MOVD rs+16(FP), R2
	LSL  $2, R2, R2
	MOVD qs+24(FP), R3
	LSL  $2, R3, R3
	MOVD b+32(FP), R4
	MOVD c+40(FP), R5
	MOVD ldc+48(FP), R6
	LSL  $2, R6, R6
	SUB  $64, R6, R6         // from the end of a row of the tile to the next
	ADD  R2, R9, R10
	ADD  R2, R10, R11
	ADD  R2, R11, R12
	ADD  R2, R12, R13
	ADD  R2, R13, R14

	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16

loop:
	VLD1.P 64(R4), [V24.S4, V25.S4, V26.S4, V27.S4]
	VLD1R  (R9), [V28.S4]
	VLD1R  (R10), [V29.S4]
	ROW(V28, V0, V1, V2, V3)
	ROW(V29, V4, V5, V6, V7)
	VLD1R  (R11), [V28.S4]
	VLD1R  (R12), [V29.S4]
	ROW(V28, V8, V9, V10, V11)
	ROW(V29, V12, V13, V14, V15)
	VLD1R  (R13), [V28.S4]
	VLD1R  (R14), [V29.S4]
	ROW(V28, V16, V17, V18, V19)
	ROW(V29, V20, V21, V22, V23)
	ADD    R3, R9, R9
	ADD    R3, R10, R10
	ADD    R3, R11, R11
	ADD    R3, R12, R12
	ADD    R3, R13, R13
	ADD    R3, R14, R14
	SUBS   $1, R0, R0
	BNE    loop

	MOVD  $alpha+56(FP), R7
	VLD1R (R7), [V30.S4]
	MOVD  $beta+60(FP), R7
	VLD1R (R7), [V27.S4]
	MOVD  $negzero<>(SB), R7
	VLD1R (R7), [V31.S4]
	MOVD  loadC+64(FP), R8
	CBZ   R8, overwrite

	STOREV_C(V0)
	STOREV_C(V1)
	STOREV_C(V2)
	STOREV_C(V3)
	ADD R6, R5, R5
	STOREV_C(V4)
	STOREV_C(V5)
	STOREV_C(V6)
	STOREV_C(V7)
	ADD R6, R5, R5
	STOREV_C(V8)
	STOREV_C(V9)
	STOREV_C(V10)
	STOREV_C(V11)
	ADD R6, R5, R5
	STOREV_C(V12)
	STOREV_C(V13)
	STOREV_C(V14)
	STOREV_C(V15)
	ADD R6, R5, R5
	STOREV_C(V16)
	STOREV_C(V17)
	STOREV_C(V18)
	STOREV_C(V19)
	ADD R6, R5, R5
	STOREV_C(V20)
	STOREV_C(V21)
	STOREV_C(V22)
	STOREV_C(V23)
	RET

overwrite:
	STOREV(V0)
	STOREV(V1)
	STOREV(V2)
	STOREV(V3)
	ADD R6, R5, R5
	STOREV(V4)
	STOREV(V5)
	STOREV(V6)
	STOREV(V7)
	ADD R6, R5, R5
	STOREV(V8)
	STOREV(V9)
	STOREV(V10)
	STOREV(V11)
	ADD R6, R5, R5
	STOREV(V12)
	STOREV(V13)
	STOREV(V14)
	STOREV(V15)
	ADD R6, R5, R5
	STOREV(V16)
	STOREV(V17)
	STOREV(V18)
	STOREV(V19)
	ADD R6, R5, R5
	STOREV(V20)
	STOREV(V21)
	STOREV(V22)
	STOREV(V23)
	RET

#include "textflag.h"

// Both micro-kernels read element (i, p) of the A micro-panel at
// a + i·rs + p·qs (byte strides here): a packed panel (rs = 1, qs = MR
// elements), a row-major block of A (rs = lda, qs = 1) or a column-major
// one (rs = 1, qs = lda). Row r of the panel is addressed from SI (rows
// 0-4, 6, 8, 10, 12) or BX = SI + 5·rs (rows 5, 7, 9, 11, 13) plus
// R9 = rs, R10 = 3·rs or R11 = 5·rs times 1, 2, 4 or 8; SI and BX step to
// the next k by R12 = qs. The packed B row of the step is at DI.

// ---------------------------------------------------------------------
// AVX2 + FMA: the 6×16 tile in Y0..Y11 (row r in Y(2r), Y(2r+1)), the B
// row in Y12:Y13, A broadcast through Y14/Y15.

#define STEP6(BOFF) \
	VMOVUPS      (BOFF)(DI), Y12;      \
	VMOVUPS      (BOFF+32)(DI), Y13;   \
	VBROADCASTSS (SI), Y14;            \
	VFMADD231PS  Y12, Y14, Y0;         \
	VFMADD231PS  Y13, Y14, Y1;         \
	VBROADCASTSS (SI)(R9*1), Y15;      \
	VFMADD231PS  Y12, Y15, Y2;         \
	VFMADD231PS  Y13, Y15, Y3;         \
	VBROADCASTSS (SI)(R9*2), Y14;      \
	VFMADD231PS  Y12, Y14, Y4;         \
	VFMADD231PS  Y13, Y14, Y5;         \
	VBROADCASTSS (SI)(R10*1), Y15;     \
	VFMADD231PS  Y12, Y15, Y6;         \
	VFMADD231PS  Y13, Y15, Y7;         \
	VBROADCASTSS (SI)(R9*4), Y14;      \
	VFMADD231PS  Y12, Y14, Y8;         \
	VFMADD231PS  Y13, Y14, Y9;         \
	VBROADCASTSS (SI)(R11*1), Y15;     \
	VFMADD231PS  Y12, Y15, Y10;        \
	VFMADD231PS  Y13, Y15, Y11;        \
	ADDQ         R12, SI

// Row r of C: scale both accumulators by alpha (Y14), add beta·C (Y15) when
// loading, store, advance DX by one row.
#define SCALE6(R0, R1) \
	VMULPS Y14, R0, R0; \
	VMULPS Y14, R1, R1

#define STORE_LOAD6(R0, R1) \
	VFMADD231PS (DX), Y15, R0;   \
	VFMADD231PS 32(DX), Y15, R1; \
	VMOVUPS     R0, (DX);        \
	VMOVUPS     R1, 32(DX);      \
	ADDQ        R8, DX

#define STORE6(R0, R1) \
	VMOVUPS R0, (DX);   \
	VMOVUPS R1, 32(DX); \
	ADDQ    R8, DX

// func kernel6x16AVX2(kc int, a *float32, rs, qs int, b, c *float32, ldc int, alpha, beta float32, loadC int)
TEXT ·kernel6x16AVX2(SB), NOSPLIT, $0-72
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R9)(R9*4), R11
	MOVQ qs+24(FP), R12
	SHLQ $2, R12
	MOVQ b+32(FP), DI
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	SHLQ $2, R8

	// Pull the C tile towards L1 while the products run.
	MOVQ       DX, R13
	PREFETCHT0 (R13)
	PREFETCHT0 60(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 60(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 60(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 60(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 60(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 60(R13)

	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

	MOVQ  CX, AX
	SHRQ  $2, AX
	ANDQ  $3, CX
	TESTQ AX, AX
	JZ    tail6

loop6x4:
	STEP6(0)
	STEP6(64)
	STEP6(128)
	STEP6(192)
	ADDQ $256, DI
	DECQ AX
	JNZ  loop6x4

tail6:
	TESTQ CX, CX
	JZ    store6

loop6x1:
	STEP6(0)
	ADDQ $64, DI
	DECQ CX
	JNZ  loop6x1

store6:
	VBROADCASTSS alpha+56(FP), Y14
	VBROADCASTSS beta+60(FP), Y15
	SCALE6(Y0, Y1)
	SCALE6(Y2, Y3)
	SCALE6(Y4, Y5)
	SCALE6(Y6, Y7)
	SCALE6(Y8, Y9)
	SCALE6(Y10, Y11)
	MOVQ  loadC+64(FP), AX
	TESTQ AX, AX
	JZ    overwrite6
	STORE_LOAD6(Y0, Y1)
	STORE_LOAD6(Y2, Y3)
	STORE_LOAD6(Y4, Y5)
	STORE_LOAD6(Y6, Y7)
	STORE_LOAD6(Y8, Y9)
	STORE_LOAD6(Y10, Y11)
	VZEROUPPER
	RET

overwrite6:
	STORE6(Y0, Y1)
	STORE6(Y2, Y3)
	STORE6(Y4, Y5)
	STORE6(Y6, Y7)
	STORE6(Y8, Y9)
	STORE6(Y10, Y11)
	VZEROUPPER
	RET

// ---------------------------------------------------------------------
// AVX-512: the 14×32 tile in Z0..Z27 (row r in Z(2r), Z(2r+1)), the B row
// in Z28:Z29, A broadcast through Z30/Z31. Per k: two 64-byte loads,
// fourteen broadcasts and 28 VFMADD231PS.

#define ROW14(ADDR, T, R0, R1) \
	VBROADCASTSS ADDR, T;  \
	VFMADD231PS  Z28, T, R0; \
	VFMADD231PS  Z29, T, R1

#define STEP14(BOFF) \
	VMOVUPS (BOFF)(DI), Z28;    \
	VMOVUPS (BOFF+64)(DI), Z29; \
	ROW14((SI), Z30, Z0, Z1);          \
	ROW14((SI)(R9*1), Z31, Z2, Z3);    \
	ROW14((SI)(R9*2), Z30, Z4, Z5);    \
	ROW14((SI)(R10*1), Z31, Z6, Z7);   \
	ROW14((SI)(R9*4), Z30, Z8, Z9);    \
	ROW14((BX), Z31, Z10, Z11);        \
	ROW14((SI)(R10*2), Z30, Z12, Z13); \
	ROW14((BX)(R9*2), Z31, Z14, Z15);  \
	ROW14((SI)(R9*8), Z30, Z16, Z17);  \
	ROW14((BX)(R9*4), Z31, Z18, Z19);  \
	ROW14((SI)(R11*2), Z30, Z20, Z21); \
	ROW14((BX)(R10*2), Z31, Z22, Z23); \
	ROW14((SI)(R10*4), Z30, Z24, Z25); \
	ROW14((BX)(R9*8), Z31, Z26, Z27);  \
	ADDQ R12, SI;                      \
	ADDQ R12, BX

#define SCALE14(R0, R1) \
	VMULPS Z30, R0, R0; \
	VMULPS Z30, R1, R1

#define STORE_LOAD14(R0, R1) \
	VFMADD231PS (DX), Z31, R0;   \
	VFMADD231PS 64(DX), Z31, R1; \
	VMOVUPS     R0, (DX);        \
	VMOVUPS     R1, 64(DX);      \
	ADDQ        R8, DX

#define STORE14(R0, R1) \
	VMOVUPS R0, (DX);   \
	VMOVUPS R1, 64(DX); \
	ADDQ    R8, DX

#define PF2(REG) \
	PREFETCHT0 (REG);   \
	PREFETCHT0 64(REG); \
	ADDQ       R8, REG

// func kernel14x32AVX512(kc int, a *float32, rs, qs int, b, c *float32, ldc int, alpha, beta float32, loadC int)
TEXT ·kernel14x32AVX512(SB), NOSPLIT, $0-72
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R9)(R9*4), R11
	LEAQ (SI)(R11*1), BX
	MOVQ qs+24(FP), R12
	SHLQ $2, R12
	MOVQ b+32(FP), DI
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	SHLQ $2, R8

	// Pull the C tile towards L1 while the products run.
	MOVQ DX, R13
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)
	PF2(R13)

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27

	MOVQ  CX, AX
	SHRQ  $2, AX
	ANDQ  $3, CX
	TESTQ AX, AX
	JZ    tail14

loop14x4:
	STEP14(0)
	STEP14(128)
	STEP14(256)
	STEP14(384)
	ADDQ $512, DI
	DECQ AX
	JNZ  loop14x4

tail14:
	TESTQ CX, CX
	JZ    store14

loop14x1:
	STEP14(0)
	ADDQ $128, DI
	DECQ CX
	JNZ  loop14x1

store14:
	VBROADCASTSS alpha+56(FP), Z30
	VBROADCASTSS beta+60(FP), Z31
	SCALE14(Z0, Z1)
	SCALE14(Z2, Z3)
	SCALE14(Z4, Z5)
	SCALE14(Z6, Z7)
	SCALE14(Z8, Z9)
	SCALE14(Z10, Z11)
	SCALE14(Z12, Z13)
	SCALE14(Z14, Z15)
	SCALE14(Z16, Z17)
	SCALE14(Z18, Z19)
	SCALE14(Z20, Z21)
	SCALE14(Z22, Z23)
	SCALE14(Z24, Z25)
	SCALE14(Z26, Z27)
	MOVQ  loadC+64(FP), AX
	TESTQ AX, AX
	JZ    overwrite14
	STORE_LOAD14(Z0, Z1)
	STORE_LOAD14(Z2, Z3)
	STORE_LOAD14(Z4, Z5)
	STORE_LOAD14(Z6, Z7)
	STORE_LOAD14(Z8, Z9)
	STORE_LOAD14(Z10, Z11)
	STORE_LOAD14(Z12, Z13)
	STORE_LOAD14(Z14, Z15)
	STORE_LOAD14(Z16, Z17)
	STORE_LOAD14(Z18, Z19)
	STORE_LOAD14(Z20, Z21)
	STORE_LOAD14(Z22, Z23)
	STORE_LOAD14(Z24, Z25)
	STORE_LOAD14(Z26, Z27)
	VZEROUPPER
	RET

overwrite14:
	STORE14(Z0, Z1)
	STORE14(Z2, Z3)
	STORE14(Z4, Z5)
	STORE14(Z6, Z7)
	STORE14(Z8, Z9)
	STORE14(Z10, Z11)
	STORE14(Z12, Z13)
	STORE14(Z14, Z15)
	STORE14(Z16, Z17)
	STORE14(Z18, Z19)
	STORE14(Z20, Z21)
	STORE14(Z22, Z23)
	STORE14(Z24, Z25)
	STORE14(Z26, Z27)
	VZEROUPPER
	RET

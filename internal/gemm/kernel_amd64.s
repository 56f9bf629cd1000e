#include "textflag.h"

// One k step of the 6×16 tile: B row in Y12:Y13, A column broadcast through
// Y14/Y15, accumulators Y0..Y11 (row r in Y(2r), Y(2r+1)).
// AOFF and BOFF are byte offsets of the step within the unrolled block.
#define STEP(AOFF, BOFF) \
	VMOVUPS      (BOFF)(DI), Y12;     \
	VMOVUPS      (BOFF+32)(DI), Y13;  \
	VBROADCASTSS (AOFF)(SI), Y14;     \
	VFMADD231PS  Y12, Y14, Y0;        \
	VFMADD231PS  Y13, Y14, Y1;        \
	VBROADCASTSS (AOFF+4)(SI), Y15;   \
	VFMADD231PS  Y12, Y15, Y2;        \
	VFMADD231PS  Y13, Y15, Y3;        \
	VBROADCASTSS (AOFF+8)(SI), Y14;   \
	VFMADD231PS  Y12, Y14, Y4;        \
	VFMADD231PS  Y13, Y14, Y5;        \
	VBROADCASTSS (AOFF+12)(SI), Y15;  \
	VFMADD231PS  Y12, Y15, Y6;        \
	VFMADD231PS  Y13, Y15, Y7;        \
	VBROADCASTSS (AOFF+16)(SI), Y14;  \
	VFMADD231PS  Y12, Y14, Y8;        \
	VFMADD231PS  Y13, Y14, Y9;        \
	VBROADCASTSS (AOFF+20)(SI), Y15;  \
	VFMADD231PS  Y12, Y15, Y10;       \
	VFMADD231PS  Y13, Y15, Y11

// Row r of C: scale both accumulators by alpha (Y14), add beta·C (Y15) when
// loading, store, advance DX by one row.
#define SCALE(R0, R1) \
	VMULPS Y14, R0, R0; \
	VMULPS Y14, R1, R1

#define STORE_LOAD(R0, R1) \
	VFMADD231PS (DX), Y15, R0;   \
	VFMADD231PS 32(DX), Y15, R1; \
	VMOVUPS     R0, (DX);        \
	VMOVUPS     R1, 32(DX);      \
	ADDQ        R8, DX

#define STORE(R0, R1) \
	VMOVUPS R0, (DX);   \
	VMOVUPS R1, 32(DX); \
	ADDQ    R8, DX

// func kernel6x16AVX2(kc int, a, b, c *float32, ldc int, alpha, beta float32, loadC int)
TEXT ·kernel6x16AVX2(SB), NOSPLIT, $0-56
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8

	// Pull the C tile towards L1 while the products run.
	MOVQ       DX, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ       R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ       R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ       R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ       R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ       R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)

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

	MOVQ CX, R9
	SHRQ $2, R9
	ANDQ $3, CX
	TESTQ R9, R9
	JZ   tail

loop4:
	PREFETCHT0 384(SI)
	STEP(0, 0)
	STEP(24, 64)
	PREFETCHT0 448(SI)
	STEP(48, 128)
	STEP(72, 192)
	ADDQ $96, SI
	ADDQ $256, DI
	DECQ R9
	JNZ  loop4

tail:
	TESTQ CX, CX
	JZ    store

loop1:
	STEP(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loop1

store:
	VBROADCASTSS alpha+40(FP), Y14
	VBROADCASTSS beta+44(FP), Y15
	SCALE(Y0, Y1)
	SCALE(Y2, Y3)
	SCALE(Y4, Y5)
	SCALE(Y6, Y7)
	SCALE(Y8, Y9)
	SCALE(Y10, Y11)
	MOVQ  loadC+48(FP), AX
	TESTQ AX, AX
	JZ    overwrite
	STORE_LOAD(Y0, Y1)
	STORE_LOAD(Y2, Y3)
	STORE_LOAD(Y4, Y5)
	STORE_LOAD(Y6, Y7)
	STORE_LOAD(Y8, Y9)
	STORE_LOAD(Y10, Y11)
	VZEROUPPER
	RET

overwrite:
	STORE(Y0, Y1)
	STORE(Y2, Y3)
	STORE(Y4, Y5)
	STORE(Y6, Y7)
	STORE(Y8, Y9)
	STORE(Y10, Y11)
	VZEROUPPER
	RET

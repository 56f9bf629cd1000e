#include "textflag.h"

// Go's assembler has no AVX512-BF16 mnemonics, so VDPBF16PS is spelled out
// in bytes. Every use is
//
//	VDPBF16PS zmmD, zmmV, dword bcst [BASE + INDEX*SCALE]
//
// encoded as EVEX.512.F3.0F38.W0 52 /r with a broadcast memory operand and
// a zero 8-bit displacement:
//
//	62                 EVEX
//	R̄ X̄ B̄ R̄' 0 0 1 0  P0: R̄, R̄' = inverted bits 3, 4 of D; X̄, B̄ = inverted bit 3 of
//	                       INDEX, BASE; opcode map 0F38
//	0 v̄v̄v̄v̄ 1 1 0      P1: W0, inverted bits 0-3 of V, pp = F3
//	0 1 0 1 V̄' 0 0 0   P2: z = 0, L'L = 512, b = 1 (broadcast), inverted bit 4 of V, no mask
//	52                 opcode
//	01 ddd bbb         ModRM: mod = disp8, reg = bits 0-2 of D, rm = BASE (DPB)
//	01 ddd 100         ModRM: rm = SIB follows (DPBX)
//	ss iii bbb         SIB: log2 SCALE, bits 0-2 of INDEX, BASE (DPBX)
//	00                 disp8
//
// Registers are given by their numbers in the encoding:
#define NUM_BX 3
#define NUM_SI 6
#define NUM_R9 9
#define NUM_R10 10
#define NUM_R11 11
#define EVEX_DPB(D, V, INDEX, BASE) \
	BYTE $0x62; \
	BYTE $(((((D)>>3)&1)^1)<<7 | ((((INDEX)>>3)&1)^1)<<6 | ((((BASE)>>3)&1)^1)<<5 | ((((D)>>4)&1)^1)<<4 | 0x02); \
	BYTE $((((V)&15)^15)<<3 | 0x06); \
	BYTE $(0x50 | ((((V)>>4)&1)^1)<<3); \
	BYTE $0x52

// DPB(D, V, BASE): VDPBF16PS zmmD, zmmV, dword bcst [BASE].
#define DPB(D, V, BASE) \
	EVEX_DPB(D, V, 0, BASE); \
	BYTE $(0x40 | ((D)&7)<<3 | ((BASE)&7)); \
	BYTE $0x00

// DPBX(D, V, BASE, INDEX, SS): VDPBF16PS zmmD, zmmV, dword bcst [BASE + INDEX<<SS].
#define DPBX(D, V, BASE, INDEX, SS) \
	EVEX_DPB(D, V, INDEX, BASE); \
	BYTE $(0x44 | ((D)&7)<<3); \
	BYTE $((SS)<<6 | ((INDEX)&7)<<3 | ((BASE)&7)); \
	BYTE $0x00

// One K pair of the 14×32 tile: the packed B row in Z28:Z29, the pair of
// row r of the packed A panel broadcast from SI + r·rs, addressed as
// SI or BX = SI + 5·rs plus R9 = rs, R10 = 3·rs or R11 = 5·rs scaled;
// accumulators Z0..Z27 (row r in Z(2r), Z(2r+1)). BOFF is the byte offset
// of the pair's B row within the unrolled block; SI and BX then step to
// the next pair by R12 = qs.
#define STEP(BOFF) \
	VMOVDQU32 (BOFF)(DI), Z28; \
	VMOVDQU32 (BOFF+64)(DI), Z29; \
	DPB(0, 28, NUM_SI); DPB(1, 29, NUM_SI); \
	DPBX(2, 28, NUM_SI, NUM_R9, 0); DPBX(3, 29, NUM_SI, NUM_R9, 0); \
	DPBX(4, 28, NUM_SI, NUM_R9, 1); DPBX(5, 29, NUM_SI, NUM_R9, 1); \
	DPBX(6, 28, NUM_SI, NUM_R10, 0); DPBX(7, 29, NUM_SI, NUM_R10, 0); \
	DPBX(8, 28, NUM_SI, NUM_R9, 2); DPBX(9, 29, NUM_SI, NUM_R9, 2); \
	DPB(10, 28, NUM_BX); DPB(11, 29, NUM_BX); \
	DPBX(12, 28, NUM_SI, NUM_R10, 1); DPBX(13, 29, NUM_SI, NUM_R10, 1); \
	DPBX(14, 28, NUM_BX, NUM_R9, 1); DPBX(15, 29, NUM_BX, NUM_R9, 1); \
	DPBX(16, 28, NUM_SI, NUM_R9, 3); DPBX(17, 29, NUM_SI, NUM_R9, 3); \
	DPBX(18, 28, NUM_BX, NUM_R9, 2); DPBX(19, 29, NUM_BX, NUM_R9, 2); \
	DPBX(20, 28, NUM_SI, NUM_R11, 1); DPBX(21, 29, NUM_SI, NUM_R11, 1); \
	DPBX(22, 28, NUM_BX, NUM_R10, 1); DPBX(23, 29, NUM_BX, NUM_R10, 1); \
	DPBX(24, 28, NUM_SI, NUM_R10, 2); DPBX(25, 29, NUM_SI, NUM_R10, 2); \
	DPBX(26, 28, NUM_BX, NUM_R9, 3); DPBX(27, 29, NUM_BX, NUM_R9, 3); \
	ADDQ R12, SI; \
	ADDQ R12, BX

// Row r of C: scale both accumulators by alpha (Z28); add beta·C (Z29)
// when loading; store; advance DX by one row.
#define SCALE(R0, R1) \
	VMULPS Z28, R0, R0; \
	VMULPS Z28, R1, R1

#define STORE_LOAD(R0, R1) \
	VFMADD231PS (DX), Z29, R0;   \
	VFMADD231PS 64(DX), Z29, R1; \
	VMOVUPS     R0, (DX);        \
	VMOVUPS     R1, 64(DX);      \
	ADDQ        R8, DX

#define STORE(R0, R1) \
	VMOVUPS R0, (DX);   \
	VMOVUPS R1, 64(DX); \
	ADDQ    R8, DX

// func kernel14x32BF16(kq int, a, b *uint32, c *float32, ldc, rs, qs int, alpha, beta float32, loadC int)
TEXT ·kernel14x32BF16(SB), NOSPLIT, $0-72
	MOVQ kq+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	MOVQ rs+40(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R9)(R9*4), R11
	LEAQ (SI)(R11*1), BX
	MOVQ qs+48(FP), R12
	SHLQ $2, R12

	// Pull the C tile towards L1 while the products run.
	MOVQ DX, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	ADDQ       R8, R13
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)

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
	JZ    tail

loop4:
	STEP(0)
	STEP(128)
	STEP(256)
	STEP(384)
	ADDQ $512, DI
	DECQ AX
	JNZ  loop4

tail:
	TESTQ CX, CX
	JZ    store

loop1:
	STEP(0)
	ADDQ $128, DI
	DECQ CX
	JNZ  loop1

store:
	VBROADCASTSS alpha+56(FP), Z28
	VBROADCASTSS beta+60(FP), Z29
	SCALE(Z0, Z1)
	SCALE(Z2, Z3)
	SCALE(Z4, Z5)
	SCALE(Z6, Z7)
	SCALE(Z8, Z9)
	SCALE(Z10, Z11)
	SCALE(Z12, Z13)
	SCALE(Z14, Z15)
	SCALE(Z16, Z17)
	SCALE(Z18, Z19)
	SCALE(Z20, Z21)
	SCALE(Z22, Z23)
	SCALE(Z24, Z25)
	SCALE(Z26, Z27)
	MOVQ  loadC+64(FP), AX
	TESTQ AX, AX
	JZ    overwrite
	STORE_LOAD(Z0, Z1)
	STORE_LOAD(Z2, Z3)
	STORE_LOAD(Z4, Z5)
	STORE_LOAD(Z6, Z7)
	STORE_LOAD(Z8, Z9)
	STORE_LOAD(Z10, Z11)
	STORE_LOAD(Z12, Z13)
	STORE_LOAD(Z14, Z15)
	STORE_LOAD(Z16, Z17)
	STORE_LOAD(Z18, Z19)
	STORE_LOAD(Z20, Z21)
	STORE_LOAD(Z22, Z23)
	STORE_LOAD(Z24, Z25)
	STORE_LOAD(Z26, Z27)
	VZEROUPPER
	RET

overwrite:
	STORE(Z0, Z1)
	STORE(Z2, Z3)
	STORE(Z4, Z5)
	STORE(Z6, Z7)
	STORE(Z8, Z9)
	STORE(Z10, Z11)
	STORE(Z12, Z13)
	STORE(Z14, Z15)
	STORE(Z16, Z17)
	STORE(Z18, Z19)
	STORE(Z20, Z21)
	STORE(Z22, Z23)
	STORE(Z24, Z25)
	STORE(Z26, Z27)
	VZEROUPPER
	RET

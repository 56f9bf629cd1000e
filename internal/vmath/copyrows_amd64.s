//go:build amd64 && !purego

#include "textflag.h"

// func copyRowsAVX512(dst *float32, ldd int, src *float32, lds, rows, cols int)
//
// rows ≥ 1 rows of cols floats (a positive multiple of 16), 64 bytes a
// load and a store, four while four are left.
TEXT ·copyRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ rows+32(FP), CX
	MOVQ cols+40(FP), R10
	SHLQ $2, R10

crow:
	XORQ AX, AX
	LEAQ -256(R10), DX

c4:
	CMPQ    AX, DX
	JGT     c1
	VMOVUPS (SI)(AX*1), Z0
	VMOVUPS 64(SI)(AX*1), Z1
	VMOVUPS 128(SI)(AX*1), Z2
	VMOVUPS 192(SI)(AX*1), Z3
	VMOVUPS Z0, (DI)(AX*1)
	VMOVUPS Z1, 64(DI)(AX*1)
	VMOVUPS Z2, 128(DI)(AX*1)
	VMOVUPS Z3, 192(DI)(AX*1)
	ADDQ    $256, AX
	JMP     c4

c1:
	CMPQ    AX, R10
	JGE     cnext
	VMOVUPS (SI)(AX*1), Z0
	VMOVUPS Z0, (DI)(AX*1)
	ADDQ    $64, AX
	JMP     c1

cnext:
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ CX
	JNZ  crow
	VZEROUPPER
	RET

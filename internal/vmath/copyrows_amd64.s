//go:build amd64 && !purego

#include "textflag.h"
#include "bf16_amd64.h"

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


// func widenRowsAVX512(dst *float32, ldd int, src *uint16, lds, rows, cols, f16 int)
//
// rows ≥ 1 rows of cols (a positive multiple of 16) 16-bit patterns
// widened 16 at a time: bfloat16 shifted into the top half, binary16 by
// VCVTPH2PS.
TEXT ·widenRowsAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $1, R9
	MOVQ rows+32(FP), CX
	MOVQ cols+40(FP), R10
	SHLQ $1, R10
	MOVQ f16+48(FP), R11

wrow:
	XORQ AX, AX

wcol:
	TESTQ     R11, R11
	JNZ       wf16
	VPMOVZXWD (SI)(AX*1), Z0
	VPSLLD    $16, Z0, Z0
	JMP       wstore

wf16:
	VCVTPH2PS (SI)(AX*1), Z0

wstore:
	VMOVUPS Z0, (DI)(AX*2)
	ADDQ    $32, AX
	CMPQ    AX, R10
	JLT     wcol
	ADDQ    R9, SI
	ADDQ    R8, DI
	DECQ    CX
	JNZ     wrow
	VZEROUPPER
	RET

// func narrowRowsAVX512(dst *uint16, ldd int, src *float32, lds, rows, cols, mode int)
//
// rows ≥ 1 rows of cols (a positive multiple of 16) float32 rounded 16 at
// a time: mode 0 to bfloat16 by ToBF16's integer rounding (RINT_BF16),
// mode 2 to bfloat16 by VCVTNEPS2BF16 (AVX512_BF16; a vector holding a
// subnormal takes the integer rounding, as VCVTNEPS2BF16 flushes it),
// mode 1 to binary16 by VCVTPS2PH (immediate 0: nearest even, as ToF16).
TEXT ·narrowRowsAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $1, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ rows+32(FP), CX
	MOVQ cols+40(FP), R10
	SHLQ $1, R10
	MOVQ mode+48(FP), R11
	BF16_CONSTS(Z10, Z11, Z12, Z13, Z14)

nrow:
	XORQ AX, AX

ncol:
	VMOVUPS (SI)(AX*2), Z3
	CMPQ    R11, $1
	JEQ     nf16
	CMPQ    R11, $2
	JEQ     ncvt

nint:
	RINT_BF16(Z3, (DI)(AX*1), Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14)
	JMP     nnext

ncvt:
	STORE_BF16_Z3((DI)(AX*1), nint)
	JMP     nnext

nf16:
	VCVTPS2PH $0, Z3, (DI)(AX*1)

nnext:
	ADDQ $32, AX
	CMPQ AX, R10
	JLT  ncol
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ CX
	JNZ  nrow
	VZEROUPPER
	RET

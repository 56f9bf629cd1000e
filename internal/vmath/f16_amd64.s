//go:build amd64 && !purego

#include "textflag.h"

// F16C conversions, 8 lanes an instruction, 32 a loop turn while 32 are
// left, then 8 at a time. VCVTPS2PH's immediate 0 selects round to nearest
// even (bit 2 clear: the immediate, not MXCSR, gives the rounding).

// func fromF16F16C(dst *float32, src *uint16, n int)
//
// dst[i] = binary16 src[i] widened to float32 (exact).
TEXT ·fromF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-32, DX

fromf16_loop32:
	CMPQ      AX, DX
	JGE       fromf16_loop8
	VCVTPH2PS (SI)(AX*2), Y0
	VCVTPH2PS 16(SI)(AX*2), Y1
	VCVTPH2PS 32(SI)(AX*2), Y2
	VCVTPH2PS 48(SI)(AX*2), Y3
	VMOVUPS   Y0, (DI)(AX*4)
	VMOVUPS   Y1, 32(DI)(AX*4)
	VMOVUPS   Y2, 64(DI)(AX*4)
	VMOVUPS   Y3, 96(DI)(AX*4)
	ADDQ      $32, AX
	JMP       fromf16_loop32

fromf16_loop8:
	CMPQ      AX, CX
	JGE       fromf16_done
	VCVTPH2PS (SI)(AX*2), Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	JMP       fromf16_loop8

fromf16_done:
	VZEROUPPER
	RET

// func toF16F16C(dst *uint16, src *float32, n int)
//
// dst[i] = src[i] rounded to binary16, nearest even.
TEXT ·toF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-32, DX

tof16_loop32:
	CMPQ      AX, DX
	JGE       tof16_loop8
	VMOVUPS   (SI)(AX*4), Y0
	VMOVUPS   32(SI)(AX*4), Y1
	VMOVUPS   64(SI)(AX*4), Y2
	VMOVUPS   96(SI)(AX*4), Y3
	VCVTPS2PH $0, Y0, X0
	VCVTPS2PH $0, Y1, X1
	VCVTPS2PH $0, Y2, X2
	VCVTPS2PH $0, Y3, X3
	VMOVDQU   X0, (DI)(AX*2)
	VMOVDQU   X1, 16(DI)(AX*2)
	VMOVDQU   X2, 32(DI)(AX*2)
	VMOVDQU   X3, 48(DI)(AX*2)
	ADDQ      $32, AX
	JMP       tof16_loop32

tof16_loop8:
	CMPQ      AX, CX
	JGE       tof16_done
	VMOVUPS   (SI)(AX*4), Y0
	VCVTPS2PH $0, Y0, X0
	VMOVDQU   X0, (DI)(AX*2)
	ADDQ      $8, AX
	JMP       tof16_loop8

tof16_done:
	VZEROUPPER
	RET

// The AVX-512 forms of the same conversions: 16 lanes an instruction (the
// ymm forms convert 8 in the same time), 64 a loop turn while 64 are
// left, then 16, then one ymm step for a last 8 (n is a multiple of 8).

// func fromF16AVX512(dst *float32, src *uint16, n int)
TEXT ·fromF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-64, DX
	MOVQ CX, BX
	ANDQ $-16, BX

fromf16z_loop64:
	CMPQ      AX, DX
	JGE       fromf16z_loop16
	VCVTPH2PS (SI)(AX*2), Z0
	VCVTPH2PS 32(SI)(AX*2), Z1
	VCVTPH2PS 64(SI)(AX*2), Z2
	VCVTPH2PS 96(SI)(AX*2), Z3
	VMOVUPS   Z0, (DI)(AX*4)
	VMOVUPS   Z1, 64(DI)(AX*4)
	VMOVUPS   Z2, 128(DI)(AX*4)
	VMOVUPS   Z3, 192(DI)(AX*4)
	ADDQ      $64, AX
	JMP       fromf16z_loop64

fromf16z_loop16:
	CMPQ      AX, BX
	JGE       fromf16z_tail
	VCVTPH2PS (SI)(AX*2), Z0
	VMOVUPS   Z0, (DI)(AX*4)
	ADDQ      $16, AX
	JMP       fromf16z_loop16

fromf16z_tail:
	CMPQ      AX, CX
	JGE       fromf16z_done
	VCVTPH2PS (SI)(AX*2), Y0
	VMOVUPS   Y0, (DI)(AX*4)

fromf16z_done:
	VZEROUPPER
	RET

// func toF16AVX512(dst *uint16, src *float32, n int)
TEXT ·toF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-64, DX
	MOVQ CX, BX
	ANDQ $-16, BX

tof16z_loop64:
	CMPQ      AX, DX
	JGE       tof16z_loop16
	VMOVUPS   (SI)(AX*4), Z0
	VMOVUPS   64(SI)(AX*4), Z1
	VMOVUPS   128(SI)(AX*4), Z2
	VMOVUPS   192(SI)(AX*4), Z3
	VCVTPS2PH $0, Z0, Y0
	VCVTPS2PH $0, Z1, Y1
	VCVTPS2PH $0, Z2, Y2
	VCVTPS2PH $0, Z3, Y3
	VMOVDQU   Y0, (DI)(AX*2)
	VMOVDQU   Y1, 32(DI)(AX*2)
	VMOVDQU   Y2, 64(DI)(AX*2)
	VMOVDQU   Y3, 96(DI)(AX*2)
	ADDQ      $64, AX
	JMP       tof16z_loop64

tof16z_loop16:
	CMPQ      AX, BX
	JGE       tof16z_tail
	VMOVUPS   (SI)(AX*4), Z0
	VCVTPS2PH $0, Z0, Y0
	VMOVDQU   Y0, (DI)(AX*2)
	ADDQ      $16, AX
	JMP       tof16z_loop16

tof16z_tail:
	CMPQ      AX, CX
	JGE       tof16z_done
	VMOVUPS   (SI)(AX*4), Y0
	VCVTPS2PH $0, Y0, X0
	VMOVDQU   X0, (DI)(AX*2)

tof16z_done:
	VZEROUPPER
	RET

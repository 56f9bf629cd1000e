//go:build amd64 && !purego

#include "textflag.h"
#include "bf16_amd64.h"

// func qkNormRopeGrad64BF16(dx *uint16, dgain *float64, dout, x *uint16, rstd, cs, sn, gain *float32, rows, hx int)
//
// QKNormRopeGradBF16 for head dim 64 (half 32) on AVX512_BF16, a head in
// one pass: its four vectors of 16 (low half 0-15 and 16-31, high half
// 32-47 and 48-63) of x and dout are loaded once and stay in registers
// for both sums and for dx, where the generated kernel sweeps each head
// three times. The operations, their roundings and the sums' lane order
// (the low half's vectors, then the high half's, each vector's elements
// 0-7 then 8-15 into lanes 0-7) are those of qkNormRopeGradGo, so the
// bits are the same. dx may be x or dout: a head is read whole before
// any of it is stored. The row's cos and sin stay in Z22-Z25.
//
// Registers: DI dx, R11 dout, SI x (the head), R10 rstd, R13 gain,
// BX dgain (0: none), DX cs row, R8 sn row, R12 heads left. Z0-Z3 u
// (lo0, lo1, hi0, hi1), Z4-Z7 dout, Z8-Z11 y, Z12 Z13 Z16 Z17 du, Z14
// rstd, Z15 gain, Z18 Σ dout·y, Z19 Σ du·u, Z20 Z21 temporaries, Z26 m,
// Z27-Z31 ToBF16's constants.
TEXT ·qkNormRopeGrad64BF16(SB), NOSPLIT, $0-80
	MOVQ         dx+0(FP), DI
	MOVQ         dout+16(FP), R11
	MOVQ         x+24(FP), SI
	MOVQ         rstd+32(FP), R10
	MOVQ         cs+40(FP), DX
	MOVQ         sn+48(FP), R8
	BF16_CONSTS(Z27, Z28, Z29, Z30, Z31)
	MOVQ         $0x3f90000000000000, R9 // 1/64: m = s/D exactly as the division

g64row:
	MOVQ    gain+56(FP), R13
	MOVQ    dgain+8(FP), BX
	MOVQ    hx+72(FP), R12
	VMOVUPS (DX), Z22  // cs lo0
	VMOVUPS 64(DX), Z23 // cs lo1
	VMOVUPS (R8), Z24  // sn lo0
	VMOVUPS 64(R8), Z25 // sn lo1

g64head:
	VBROADCASTSS (R10), Z14
	VBROADCASTSS (R13), Z15

	// u = x·rstd; dout widened
	VPMOVZXWD (SI), Z0
	VPMOVZXWD 32(SI), Z1
	VPMOVZXWD 64(SI), Z2
	VPMOVZXWD 96(SI), Z3
	VPSLLD    $16, Z0, Z0
	VPSLLD    $16, Z1, Z1
	VPSLLD    $16, Z2, Z2
	VPSLLD    $16, Z3, Z3
	VMULPS    Z0, Z14, Z0
	VMULPS    Z1, Z14, Z1
	VMULPS    Z2, Z14, Z2
	VMULPS    Z3, Z14, Z3
	VPMOVZXWD (R11), Z4
	VPMOVZXWD 32(R11), Z5
	VPMOVZXWD 64(R11), Z6
	VPMOVZXWD 96(R11), Z7
	VPSLLD    $16, Z4, Z4
	VPSLLD    $16, Z5, Z5
	VPSLLD    $16, Z6, Z6
	VPSLLD    $16, Z7, Z7

	// du_lo = g·(ga·cs + gc·sn); du_hi = g·(gc·cs − ga·sn)
	VMULPS Z22, Z4, Z12
	VMULPS Z24, Z6, Z20
	VADDPS Z20, Z12, Z12
	VMULPS Z12, Z15, Z12
	VMULPS Z23, Z5, Z13
	VMULPS Z25, Z7, Z20
	VADDPS Z20, Z13, Z13
	VMULPS Z13, Z15, Z13
	VMULPS Z22, Z6, Z16
	VMULPS Z24, Z4, Z20
	VSUBPS Z20, Z16, Z16
	VMULPS Z16, Z15, Z16
	VMULPS Z23, Z7, Z17
	VMULPS Z25, Z5, Z20
	VSUBPS Z20, Z17, Z17
	VMULPS Z17, Z15, Z17

// DOT adds float64(A)·float64(B) of a vector of 16 to the lanes of ACC.
#define DOT(A, YA, B, YB, ACC) DOT16_F64(A, YA, B, YB, ACC, Z20, Y20, Z21, Y21)

// SUM8 leaves sum8 of the lanes of Z in X (Z's low register), T a
// temporary: ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)).
#define SUM8(Z, Y, X, YT, XT) \
	VEXTRACTF64X4 $1, Z, YT;  \
	VADDPD        YT, Y, Y;   \
	VEXTRACTF128  $1, Y, XT;  \
	VADDPD        XT, X, X;   \
	VPERMILPD     $1, X, XT;  \
	VADDSD        XT, X, X

	TESTQ BX, BX
	JZ    g64nogy

	// y_lo = ua·cs − uc·sn; y_hi = ua·sn + uc·cs; dgain[h] += Σ dout·y
	VMULPS Z22, Z0, Z8
	VMULPS Z24, Z2, Z20
	VSUBPS Z20, Z8, Z8
	VMULPS Z23, Z1, Z9
	VMULPS Z25, Z3, Z20
	VSUBPS Z20, Z9, Z9
	VMULPS Z24, Z0, Z10
	VMULPS Z22, Z2, Z20
	VADDPS Z20, Z10, Z10
	VMULPS Z25, Z1, Z11
	VMULPS Z23, Z3, Z20
	VADDPS Z20, Z11, Z11
	VPXORQ Z18, Z18, Z18
	DOT(Z4, Y4, Z8, Y8, Z18)
	DOT(Z5, Y5, Z9, Y9, Z18)
	DOT(Z6, Y6, Z10, Y10, Z18)
	DOT(Z7, Y7, Z11, Y11, Z18)
	VMOVAPD Z18, Z4
	SUM8(Z4, Y4, X4, Y5, X5)
	VADDSD  (BX), X4, X4
	VMOVSD  X4, (BX)
	ADDQ    $8, BX

g64nogy:
	// m = float32(Σ du·u / D)
	VPXORQ  Z19, Z19, Z19
	DOT(Z12, Y12, Z0, Y0, Z19)
	DOT(Z13, Y13, Z1, Y1, Z19)
	DOT(Z16, Y16, Z2, Y2, Z19)
	DOT(Z17, Y17, Z3, Y3, Z19)
	VMOVAPD      Z19, Z6
	SUM8(Z6, Y6, X6, Y7, X7)
	VMOVQ        R9, X7
	VMULSD       X7, X6, X6
	VCVTSD2SS    X6, X6, X6
	VBROADCASTSS X6, Z26

	// dx = rstd·(du − u·m)
	VMULPS Z26, Z0, Z0
	VSUBPS Z0, Z12, Z12
	VMULPS Z12, Z14, Z12
	VMULPS Z26, Z1, Z1
	VSUBPS Z1, Z13, Z13
	VMULPS Z13, Z14, Z13
	VMULPS Z26, Z2, Z2
	VSUBPS Z2, Z16, Z16
	VMULPS Z16, Z14, Z16
	VMULPS Z26, Z3, Z3
	VSUBPS Z3, Z17, Z17
	VMULPS Z17, Z14, Z17

	VFPCLASSPSZ $0x20, Z12, K1 // subnormal
	VFPCLASSPSZ $0x20, Z13, K2
	VFPCLASSPSZ $0x20, Z16, K3
	VFPCLASSPSZ $0x20, Z17, K4
	KORW        K1, K2, K1
	KORW        K3, K4, K3
	KORTESTW    K1, K3
	JNZ         g64int

	// VCVTNEPS2BF16 Z12, Y12; Z13, Y13; Z16, Y16; Z17, Y17
	BYTE      $0x62; BYTE $0x52; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xe4
	BYTE      $0x62; BYTE $0x52; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xed
	BYTE      $0x62; BYTE $0xa2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xc0
	BYTE      $0x62; BYTE $0xa2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xc9
	VMOVDQU32 Y12, (DI)
	VMOVDQU32 Y13, 32(DI)
	VMOVDQU32 Y16, 64(DI)
	VMOVDQU32 Y17, 96(DI)

g64next:
	ADDQ $128, SI
	ADDQ $128, R11
	ADDQ $128, DI
	ADDQ $4, R10
	ADDQ $4, R13
	DECQ R12
	JNZ  g64head
	ADDQ $128, DX
	ADDQ $128, R8
	DECQ rows+64(FP)
	JNZ  g64row
	VZEROUPPER
	RET

g64int:
	RINT_BF16(Z12, (DI), Z20, Z21, Z26, Z27, Z28, Z29, Z30, Z31)
	RINT_BF16(Z13, 32(DI), Z20, Z21, Z26, Z27, Z28, Z29, Z30, Z31)
	RINT_BF16(Z16, 64(DI), Z20, Z21, Z26, Z27, Z28, Z29, Z30, Z31)
	RINT_BF16(Z17, 96(DI), Z20, Z21, Z26, Z27, Z28, Z29, Z30, Z31)
	JMP g64next

//go:build amd64 && !purego

#include "textflag.h"

// OnlineSoftmax and OnlineSoftmaxEnd on AVX-512, a tile of rows in one
// call, and the exponentials of OnlineSoftmax on AVX2 with FMA, a row at a
// time (the rest of a row in Go). The exponential is ExpFMA's sequence:
// the same fused multiply-adds, and two steps done by single instructions
// that give the same bits on the arguments that occur here, x = s − m' in
// [−Inf, 0] (never NaN: rows whose m' is not finite go back to Go):
//   - VRNDSCALEPS/VROUNDPS round x·log₂e to the nearest integer, ties to
//     even, as math.RoundToEven does;
//   - VSCALEFPS multiplies e by 2^k, k ≥ −126 for x ≥ −87.3: the exact
//     product rounded once, as the multiply by the float 2^k rounds it.
// Below −87.3 a mask flushes the result to +0, as ExpFMA does.

#define LOG2E ·vconst+0(SB)
#define C1 ·vconst+64(SB)
#define C2 ·vconst+96(SB)
#define P0 ·vconst+128(SB)
#define P1 ·vconst+160(SB)
#define P2 ·vconst+192(SB)
#define P3 ·vconst+224(SB)
#define P4 ·vconst+256(SB)
#define P5 ·vconst+288(SB)
#define ONE ·vconst+320(SB)
#define BIAS ·vconst+352(SB)
#define EXPLO ·vconst+384(SB)

// VCMPPS predicates.
#define UNORD_Q $0x03
#define GE_OQ $0x1d

// Z16 log₂e, Z17 −Inf, Z18 C1, Z19 C2, Z20..Z25 P0..P5, Z26 one, Z28
// −87.3, Z29 zero.
#define LOADCONSTS \
	VBROADCASTSS LOG2E, Z16;      \
	VBROADCASTSS C1, Z18;         \
	VBROADCASTSS C2, Z19;         \
	VBROADCASTSS P0, Z20;         \
	VBROADCASTSS P1, Z21;         \
	VBROADCASTSS P2, Z22;         \
	VBROADCASTSS P3, Z23;         \
	VBROADCASTSS P4, Z24;         \
	VBROADCASTSS P5, Z25;         \
	VBROADCASTSS ONE, Z26;        \
	VBROADCASTSS EXPLO, Z28;      \
	MOVL         $0xff800000, AX; \
	VPBROADCASTD AX, Z17;         \
	VPXORD       Z29, Z29, Z29

// EXPZ sets R = ExpFMA(X) for X in [−Inf, 0] (K, T, Z7 scratch; K2
// clobbered; X kept).
#define EXPZ(X, K, R, T) \
	VMULPS       Z16, X, K;        \
	VRNDSCALEPS  $8, K, K;         \
	VMOVAPS      X, R;             \
	VFNMADD231PS Z18, K, R;        \
	VFNMADD231PS Z19, K, R;        \
	VMOVAPS      Z20, T;           \
	VFMADD213PS  Z21, R, T;        \
	VFMADD213PS  Z22, R, T;        \
	VFMADD213PS  Z23, R, T;        \
	VFMADD213PS  Z24, R, T;        \
	VFMADD213PS  Z25, R, T;        \
	VMULPS       R, R, Z7;         \
	VFMADD213PS  R, Z7, T;         \
	VADDPS       Z26, T, T;        \
	VCMPPS       GE_OQ, Z28, X, K2; \
	VSCALEFPS.Z  K, T, K2, R

// TAILMASK sets K to the low CX bits (0 < CX < 16; R14 clobbered).
#define TAILMASK(K) \
	MOVL  $1, R14; \
	SHLL  CX, R14; \
	DECL  R14;     \
	KMOVW R14, K

// func onlineSoftmaxAVX512(s *float32, lds, rows, width, n0 int, o *float32, ldo, d int, m *float32, l *float64) int
//
// width ≥ 1; returns the rows done, stopping before a row with n ≥ 1 whose
// m' is not finite. Two passes over the rows: the maxima and rescales of
// all rows, then the exponentials of all rows, so that each row's chain of
// dependent steps (maximum, fold, m', exponentials, sum, fold) overlaps
// with its neighbours' instead of running end to end.
//
// DI row of s, R12 row of o, R8 and R13 their strides in bytes, SI the
// row, R9 its n, R10 width, R11 n0, DX m, BX l; AX an index into the row.
TEXT ·onlineSoftmaxAVX512(SB), NOSPLIT, $0-88
	XORQ SI, SI
	MOVQ SI, ret+80(FP)
	MOVQ rows+16(FP), CX
	TESTQ CX, CX
	JLE  done
	LOADCONSTS
	MOVQ s+0(FP), DI
	MOVQ lds+8(FP), R8
	SHLQ $2, R8
	MOVQ width+24(FP), R10
	MOVQ n0+32(FP), R11
	MOVQ o+40(FP), R12
	MOVQ ldo+48(FP), R13
	SHLQ $2, R13
	MOVQ m+64(FP), DX
	MOVQ l+72(FP), BX

	// Pass 1: m', and ℓ and o rescaled.
row1:
	CMPQ    SI, rows+16(FP)
	JGE     pass2
	XORQ    AX, AX
	LEAQ    (R11)(SI*1), R9
	TESTQ   R9, R9
	JLE     next1          // n ≤ 0: nothing to do here
	CMPQ    R9, R10
	CMOVQGT R10, R9        // n = min(n0 + r, width)

	// The maximum of s[:n] in Z8..Z11, NaNs flagged in K4.
	VMOVAPS Z17, Z8
	VMOVAPS Z17, Z9
	VMOVAPS Z17, Z10
	VMOVAPS Z17, Z11
	KXORW   K4, K4, K4
	MOVQ    R9, CX
	ANDQ    $-64, CX

max64:
	CMPQ    AX, CX
	JGE     max16pre
	VMOVUPS (DI)(AX*4), Z0
	VMOVUPS 64(DI)(AX*4), Z1
	VMOVUPS 128(DI)(AX*4), Z2
	VMOVUPS 192(DI)(AX*4), Z3
	VMAXPS  Z0, Z8, Z8
	VMAXPS  Z1, Z9, Z9
	VMAXPS  Z2, Z10, Z10
	VMAXPS  Z3, Z11, Z11
	VCMPPS  UNORD_Q, Z0, Z0, K1
	VCMPPS  UNORD_Q, Z1, Z1, K2
	KORW    K1, K4, K4
	KORW    K2, K4, K4
	VCMPPS  UNORD_Q, Z2, Z2, K1
	VCMPPS  UNORD_Q, Z3, Z3, K2
	KORW    K1, K4, K4
	KORW    K2, K4, K4
	ADDQ    $64, AX
	JMP     max64

max16pre:
	MOVQ R9, CX
	ANDQ $-16, CX

max16:
	CMPQ    AX, CX
	JGE     maxtail
	VMOVUPS (DI)(AX*4), Z0
	VMAXPS  Z0, Z8, Z8
	VCMPPS  UNORD_Q, Z0, Z0, K1
	KORW    K1, K4, K4
	ADDQ    $16, AX
	JMP     max16

maxtail:
	MOVQ      R9, CX
	SUBQ      AX, CX
	JZ        maxfold
	TAILMASK(K1)
	VMOVUPS.Z (DI)(AX*4), K1, Z0
	VMAXPS    Z0, Z9, K1, Z9
	VCMPPS    UNORD_Q, Z0, Z0, K1, K2
	KORW      K2, K4, K4

maxfold:
	KORTESTW      K4, K4
	JNE           pass2           // a NaN score: Go does the row
	VMAXPS        Z9, Z8, Z8
	VMAXPS        Z11, Z10, Z10
	VMAXPS        Z10, Z8, Z8
	VEXTRACTF32X8 $1, Z8, Y9
	VMAXPS        Y9, Y8, Y8
	VEXTRACTF128  $1, Y8, X9
	VMAXPS        X9, X8, X8
	VPERMILPS     $0x4e, X8, X9
	VMAXPS        X9, X8, X8
	VPERMILPS     $0xb1, X8, X9
	VMAXPS        X9, X8, X8
	VMOVSS        (DX)(SI*4), X1  // m
	VUCOMISS      X1, X1
	JPS           pass2           // m is NaN
	VMAXSS        X1, X8, X8
	VADDSS        X29, X8, X8     // m' (+0 for a zero maximum)
	VSUBSS        X8, X8, X2
	VUCOMISS      X2, X2
	JPS           pass2           // m' is infinite
	VMOVSS        X8, (DX)(SI*4)

	// m' ≠ m: α = Exp32(m − m'), ℓ ← ℓ·α, o ← o·α.
	VUCOMISS     X1, X8
	JEQ          next1
	VXORPS       X4, X4, X4       // α = 0 from m = −Inf
	VUCOMISS     X17, X1
	JEQ          alpha
	VSUBSS       X8, X1, X2
	VBROADCASTSS X2, Z2
	EXPZ(Z2, Z3, Z4, Z5)

alpha:
	VBROADCASTSS X4, Z4
	VCVTSS2SD    X4, X5, X5
	VMOVSD       (BX)(SI*8), X6
	VMULSD       X5, X6, X6
	VMOVSD       X6, (BX)(SI*8)
	MOVQ         d+56(FP), CX
	XORQ         AX, AX

scale16:
	LEAQ    16(AX), R14
	CMPQ    R14, CX
	JGT     scaletail
	VMOVUPS (R12)(AX*4), Z0
	VMULPS  Z4, Z0, Z0
	VMOVUPS Z0, (R12)(AX*4)
	MOVQ    R14, AX
	JMP     scale16

scaletail:
	SUBQ      AX, CX
	JZ        next1
	TAILMASK(K1)
	VMOVUPS.Z (R12)(AX*4), K1, Z0
	VMULPS    Z4, Z0, Z0
	VMOVUPS   Z0, K1, (R12)(AX*4)

next1:
	ADDQ R8, DI
	ADDQ R13, R12
	INCQ SI
	JMP  row1

	// Pass 2, over the rows pass 1 finished: s[i] ← ExpFMA(s[i] − m')
	// for i < n, summed in Z12's 16 float32 lanes (element i to lane
	// i mod 16), folded into ℓ; s[n:width] ← 0.
pass2:
	MOVQ SI, ret+80(FP)
	XORQ SI, SI
	MOVQ s+0(FP), DI

row2:
	CMPQ         SI, ret+80(FP)
	JGE          done
	XORQ         AX, AX
	LEAQ         (R11)(SI*1), R9
	TESTQ        R9, R9
	JLE          clear          // n ≤ 0: clear the whole row
	CMPQ         R9, R10
	CMOVQGT      R10, R9
	VBROADCASTSS (DX)(SI*4), Z15
	VPXORD       Z12, Z12, Z12
	MOVQ         R9, CX
	ANDQ         $-16, CX

exp16:
	CMPQ    AX, CX
	JGE     exptail
	VMOVUPS (DI)(AX*4), Z0
	VSUBPS  Z15, Z0, Z0
	EXPZ(Z0, Z1, Z2, Z3)
	VMOVUPS Z2, (DI)(AX*4)
	VADDPS  Z2, Z12, Z12
	ADDQ    $16, AX
	JMP     exp16

	// The last t = n%16 elements, with the lanes past them zeroed: they add
	// nothing to the sums, and they are the row's first cleared elements,
	// stored with the exponentials from a whole block (masked only at the
	// row's end).
exptail:
	MOVQ      R9, CX
	SUBQ      AX, CX
	JZ        fold
	TAILMASK(K1)
	VMOVUPS.Z (DI)(AX*4), K1, Z0
	VSUBPS    Z15, Z0, Z0
	EXPZ(Z0, Z1, Z2, Z3)
	VMOVAPS.Z Z2, K1, Z2
	VADDPS    Z2, Z12, Z12
	LEAQ      16(AX), R14
	CMPQ      R14, R10
	JGT       tailpart
	VMOVUPS   Z2, (DI)(AX*4)
	MOVQ      R14, AX
	JMP       fold

tailpart:
	MOVQ    R10, CX
	SUBQ    AX, CX
	TAILMASK(K2)
	VMOVUPS Z2, K2, (DI)(AX*4)
	MOVQ    R10, AX

	// fold16: d_j = lane j + lane j+8 in float64, then
	// ((d0+d4) + (d2+d6)) + ((d1+d5) + (d3+d7)).
fold:
	VCVTPS2PD     Y12, Z13
	VEXTRACTF32X8 $1, Z12, Y1
	VCVTPS2PD     Y1, Z1
	VADDPD        Z1, Z13, Z13
	VEXTRACTF64X4 $1, Z13, Y1
	VADDPD        Y1, Y13, Y13
	VEXTRACTF128  $1, Y13, X1
	VADDPD        X1, X13, X13
	VPERMILPD     $1, X13, X1
	VADDSD        X1, X13, X13

sumdone:
	VMOVSD (BX)(SI*8), X6
	VADDSD X13, X6, X6
	VMOVSD X6, (BX)(SI*8)

	// s[AX:width] ← 0.
clear:
	MOVQ    R10, CX
	SUBQ    AX, CX
	JLE     next2
	CMPQ    CX, $16
	JLT     clearpart
	VMOVUPS Z29, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     clear

clearpart:
	TAILMASK(K1)
	VMOVUPS Z29, K1, (DI)(AX*4)

next2:
	ADDQ R8, DI
	INCQ SI
	JMP  row2

done:
	VZEROUPPER
	RET

// func onlineEndAVX512(o *float32, ldo, rows, d int, l *float64)
//
// o[r·ldo+i] ← o[r·ldo+i]·float32(1/l[r]); rows, d ≥ 1.
TEXT ·onlineEndAVX512(SB), NOSPLIT, $0-40
	MOVQ o+0(FP), DI
	MOVQ ldo+8(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R9
	MOVQ d+24(FP), R10
	MOVQ l+32(FP), BX
	MOVQ $0x3ff0000000000000, AX
	VMOVQ AX, X3                   // 1.0

endrow:
	VMOVSD       (BX), X1
	VDIVSD       X1, X3, X2
	VCVTSD2SS    X2, X2, X2
	VBROADCASTSS X2, Z4
	XORQ         AX, AX

end16:
	LEAQ    16(AX), R14
	CMPQ    R14, R10
	JGT     endtail
	VMOVUPS (DI)(AX*4), Z0
	VMULPS  Z4, Z0, Z0
	VMOVUPS Z0, (DI)(AX*4)
	MOVQ    R14, AX
	JMP     end16

endtail:
	MOVQ      R10, CX
	SUBQ      AX, CX
	JZ        endnext
	TAILMASK(K1)
	VMOVUPS.Z (DI)(AX*4), K1, Z0
	VMULPS    Z4, Z0, Z0
	VMOVUPS   Z0, K1, (DI)(AX*4)

endnext:
	ADDQ R8, DI
	ADDQ $8, BX
	DECQ R9
	JNZ  endrow
	VZEROUPPER
	RET

// The AVX2 tail masks: tailmask<>+4·(8−t) holds t lanes of
// all ones, then zeros.
DATA tailmask<>+0(SB)/8, $-1
DATA tailmask<>+8(SB)/8, $-1
DATA tailmask<>+16(SB)/8, $-1
DATA tailmask<>+24(SB)/8, $-1
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// EXPF sets R = ExpFMA(X) for X in [−Inf, 0] on 8 lanes (K, T, M scratch;
// X kept): EXPZ's sequence, with 2^k built from its exponent bits.
#define EXPF(X, K, R, T, M) \
	VMULPS       LOG2E, X, K;   \
	VROUNDPS     $0, K, K;      \
	VMOVAPS      X, R;          \
	VFNMADD231PS C1, K, R;      \
	VFNMADD231PS C2, K, R;      \
	VMOVUPS      P0, T;         \
	VFMADD213PS  P1, R, T;      \
	VFMADD213PS  P2, R, T;      \
	VFMADD213PS  P3, R, T;      \
	VFMADD213PS  P4, R, T;      \
	VFMADD213PS  P5, R, T;      \
	VMULPS       R, R, M;       \
	VFMADD213PS  R, M, T;       \
	VADDPS       ONE, T, T;     \
	VCVTPS2DQ    K, K;          \
	VPADDD       BIAS, K, K;    \
	VPSLLD       $23, K, K;     \
	VMULPS       K, T, R;       \
	VCMPPS       GE_OQ, EXPLO, X, M; \
	VANDPS       M, R, R

// EXPBLOCK8 does the 8 elements at (DI)(AX*4) into accumulator A.
#define EXPBLOCK8(A) \
	VMOVUPS (DI)(AX*4), Y0;   \
	VSUBPS  Y15, Y0, Y0;      \
	EXPF(Y0, Y1, Y2, Y3, Y4); \
	VMOVUPS Y2, (DI)(AX*4);   \
	VADDPS  Y2, A, A

// EXPPART does the BX < 8 elements at (DI)(AX*4) into accumulator A,
// through the mask Y14 (R8 clobbered).
#define EXPPART(A) \
	MOVQ       $8, R8;                  \
	SUBQ       BX, R8;                  \
	LEAQ       tailmask<>(SB), SI;      \
	VMOVDQU    (SI)(R8*4), Y14;         \
	VMASKMOVPS (DI)(AX*4), Y14, Y0;     \
	VSUBPS     Y15, Y0, Y0;             \
	EXPF(Y0, Y1, Y2, Y3, Y4);           \
	VANDPS     Y14, Y2, Y2;             \
	VMASKMOVPS Y2, Y14, (DI)(AX*4);     \
	VADDPS     Y2, A, A

// func onlineExpAVX2(x *float32, n int, shift float32, acc *[16]float32)
//
// x[i] = ExpFMA(x[i] − shift) for i < n, added to acc[i mod 16]; n ≥ 1.
TEXT ·onlineExpAVX2(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS shift+16(FP), Y15
	MOVQ         acc+24(FP), DX
	VMOVUPS      (DX), Y12
	VMOVUPS      32(DX), Y13
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-16, BX

avx2loop:
	CMPQ AX, BX
	JGE  avx2tail
	EXPBLOCK8(Y12)
	ADDQ $8, AX
	EXPBLOCK8(Y13)
	ADDQ $8, AX
	JMP  avx2loop

avx2tail:
	MOVQ CX, BX
	SUBQ AX, BX
	JZ   avx2done
	CMPQ BX, $8
	JLT  avx2low
	EXPBLOCK8(Y12)
	ADDQ $8, AX
	SUBQ $8, BX
	JZ   avx2done
	EXPPART(Y13)
	JMP  avx2done

avx2low:
	EXPPART(Y12)

avx2done:
	VMOVUPS Y12, (DX)
	VMOVUPS Y13, 32(DX)
	VZEROUPPER
	RET

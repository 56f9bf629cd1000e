//go:build amd64 && !purego

#include "textflag.h"

// The cross-entropy kernels of ce.go, 8 lanes (AVX2) and 16 lanes
// (AVX-512) a block. Every multiply, add and divide rounds on its own in
// the order of Exp32, Tanh32, softcapExp1 and ceGrad1 (no FMA), so each
// lane returns the bits of the Go definitions. Sums go by units of 16 as
// softcapExpGo's: lane j of 8 float64 lanes adds e[16c+j] + e[16c+8+j]
// (the float32 sum); the AVX2 kernel pairs its 8-lane blocks so.
//
// Tanh32's odd polynomial is computed for every block; its exponential
// branch (1 − 2/(e^{2a} + 1), a divide and the blends) only when a lane of
// the block has |x/c| ≥ 0.625 or is NaN, which logits below 0.625·cap in
// magnitude never do.

// Rows of ·vconst (8 lanes, 32 bytes each; the order of the cXxx list in
// vmath_amd64.go).
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
#define EXPHI ·vconst+416(SB)
#define ABSMASK ·vconst+448(SB)
#define SIGNMASK ·vconst+480(SB)
#define TWO ·vconst+512(SB)
#define TANHLO ·vconst+544(SB)
#define TANHHI ·vconst+576(SB)
#define Q0 ·vconst+608(SB)
#define Q1 ·vconst+640(SB)
#define Q2 ·vconst+672(SB)
#define Q3 ·vconst+704(SB)
#define Q4 ·vconst+736(SB)
#define LSB ·vconst+768(SB)
#define HALFBF16 ·vconst+800(SB)
#define INFBITS ·vconst+832(SB)
#define QUIETBF ·vconst+864(SB)

// VCMPPS predicates.
#define LT_OS $0x01
#define UNORD_Q $0x03
#define GT_OQ $0x1e

// ---- 8 lanes (AVX2) -------------------------------------------------------

// EXPCORE sets R = Exp32(X) for X in [−87.3, 88] (K, T scratch; X kept),
// the sequence of vmath_amd64.s's macro of that name but for VROUNDPS,
// which rounds x·log₂e to the nearest integer, ties to even, as adding and
// subtracting the magic number does for |x·log₂e| < 2²².
#define EXPCORE(X, K, R, T) \
	VMULPS     LOG2E, X, K; \
	VROUNDPS   $0, K, K;    \
	VMULPS     C1, K, T;    \
	VSUBPS     T, X, R;     \
	VMULPS     C2, K, T;    \
	VSUBPS     T, R, R;     \
	VMULPS     P0, R, T;    \
	VADDPS     P1, T, T;    \
	VMULPS     R, T, T;     \
	VADDPS     P2, T, T;    \
	VMULPS     R, T, T;     \
	VADDPS     P3, T, T;    \
	VMULPS     R, T, T;     \
	VADDPS     P4, T, T;    \
	VMULPS     R, T, T;     \
	VADDPS     P5, T, T;    \
	VMULPS     R, T, T;     \
	VMULPS     R, T, T;     \
	VADDPS     R, T, T;     \
	VADDPS     ONE, T, R;   \
	VCVTTPS2DQ K, K;        \
	VPADDD     BIAS, K, K;  \
	VPSLLD     $23, K, K;   \
	VMULPS     K, R, R

// EXPSPECIAL: 0 where X < −87.3, X where X is NaN (M scratch).
#define EXPSPECIAL(X, R, M) \
	VCMPPS    LT_OS, EXPLO, X, M; \
	VANDNPS   R, M, R;            \
	VCMPPS    UNORD_Q, X, X, M;   \
	VBLENDVPS M, X, R, R

// TANHPOLY sets P = x + (Q(y)·y)·x and Y = y = X², Tanh32's odd
// polynomial.
#define TANHPOLY(X, P, Y) \
	VMULPS X, X, Y;  \
	VMULPS Q0, Y, P; \
	VADDPS Q1, P, P; \
	VMULPS Y, P, P;  \
	VADDPS Q2, P, P; \
	VMULPS Y, P, P;  \
	VADDPS Q3, P, P; \
	VMULPS Y, P, P;  \
	VADDPS Q4, P, P; \
	VMULPS Y, P, P;  \
	VMULPS X, P, P;  \
	VADDPS X, P, P

// TANHREST sets R = Tanh32(X) from P = TANHPOLY(X): the exponential
// branch, then the blends for a < 0.625 (P), a > 44 (±1) and NaN (X).
// A, K, T, M scratch; X, P kept.
#define TANHREST(X, A, P, R, K, T, M) \
	VANDPS    ABSMASK, X, A;       \
	VADDPS    A, A, M;             \
	EXPCORE(M, K, R, T);           \
	VADDPS    ONE, R, R;           \
	VMOVUPS   TWO, T;              \
	VDIVPS    R, T, R;             \
	VMOVUPS   ONE, T;              \
	VSUBPS    R, T, R;             \
	VANDPS    SIGNMASK, X, T;      \
	VXORPS    T, R, R;             \
	VCMPPS    LT_OS, TANHLO, A, M; \
	VBLENDVPS M, P, R, R;          \
	VORPS     ONE, T, K;           \
	VCMPPS    GT_OQ, TANHHI, A, M; \
	VBLENDVPS M, K, R, R;          \
	VCMPPS    UNORD_Q, X, X, M;    \
	VBLENDVPS M, X, R, R

// func softcapExpAVX2(e *float32, sech2, x unsafe.Pointer, n int, c, s float32, acc *[8]float64, flags int) int
//
// th = Tanh32(x[i]/c); e[i] = Exp32(c·th − s); sech2[i] = 1 − th·th if
// sech2 is not nil; acc[j] += e[16c+j] + e[16c+8+j], or e[16c+j] for a
// last unpaired block. x is bfloat16 if flags&1. A block whose every
// y = x/c has y² < 0.625² (so |y| < 0.625 and no NaN) takes th from the
// odd polynomial alone; with flags&2 (every c·th − s is known to lie in
// [−87, 88]) it also skips the exponential's range checks. It prefetches
// the n elements after x: the next row's, where rows are contiguous.
TEXT ·softcapExpAVX2(SB), NOSPLIT, $0-64
	MOVQ         e+0(FP), DI
	MOVQ         sech2+8(FP), R8
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Y15
	VBROADCASTSS s+36(FP), Y14
	MOVQ         acc+40(FP), DX
	MOVQ         flags+48(FP), R9
	VMOVUPD      (DX), Y12
	VMOVUPD      32(DX), Y13
	MOVL         $0x3ec80000, BX
	MOVL         BX, X11
	VPBROADCASTD X11, Y11
	TESTQ $1, R9
	JNZ   scexp8_pfbf16
	LEAQ  (SI)(CX*4), R10
	JMP   scexp8_pfset

scexp8_pfbf16:
	LEAQ (SI)(CX*2), R10

scexp8_pfset:
	XORQ  AX, AX

scexp8_loop:
	CMPQ  AX, CX
	JGE   scexp8_done
	TESTQ $1, R9
	JNZ   scexp8_bf16
	PREFETCHT0 (R10)(AX*4)
	VMOVUPS    (SI)(AX*4), Y0
	JMP        scexp8_x

scexp8_bf16:
	PREFETCHT0 (R10)(AX*2)
	VPMOVZXWD  (SI)(AX*2), Y0
	VPSLLD     $16, Y0, Y0

scexp8_x:
	VDIVPS    Y15, Y0, Y0
	TANHPOLY(Y0, Y3, Y2)
	VCMPPS    LT_OS, Y11, Y2, Y2
	VMOVMSKPS Y2, BX
	CMPL      BX, $0xff
	JNE       scexp8_wide
	VMULPS    Y15, Y3, Y4
	VSUBPS    Y14, Y4, Y4
	TESTQ     $2, R9
	JZ        scexp8_checked
	EXPCORE(Y4, Y5, Y6, Y7)
	JMP       scexp8_store

scexp8_wide:
	TANHREST(Y0, Y1, Y3, Y4, Y5, Y6, Y7)
	VMOVAPS Y4, Y3
	VMULPS  Y15, Y3, Y4
	VSUBPS  Y14, Y4, Y4

scexp8_checked:
	VCMPPS    GT_OQ, EXPHI, Y4, Y5
	VMOVMSKPS Y5, BX
	TESTL     BX, BX
	JNZ       scexp8_done
	EXPCORE(Y4, Y5, Y6, Y7)
	EXPSPECIAL(Y4, Y6, Y7)

scexp8_store:
	TESTQ   R8, R8
	JZ      scexp8_sum
	VMULPS  Y3, Y3, Y7
	VMOVUPS ONE, Y8
	VSUBPS  Y7, Y8, Y8
	VMOVUPS Y8, (R8)(AX*4)

scexp8_sum:
	// The first block of a unit of 16 waits in Y9, unstored (x may be e),
	// until the second is done.
	TESTQ   $8, AX
	JNZ     scexp8_pair
	VMOVAPS Y6, Y9
	ADDQ    $8, AX
	JMP     scexp8_loop

scexp8_pair:
	VMOVUPS      Y9, -32(DI)(AX*4)
	VMOVUPS      Y6, (DI)(AX*4)
	VADDPS       Y9, Y6, Y6
	VCVTPS2PD    X6, Y7
	VEXTRACTF128 $1, Y6, X8
	VCVTPS2PD    X8, Y8
	VADDPD       Y7, Y12, Y12
	VADDPD       Y8, Y13, Y13
	ADDQ         $8, AX
	JMP          scexp8_loop

scexp8_done:
	// After the first block of a unit of 16: at the end of x it is the
	// unpaired last block and its e goes to the lanes alone; stopped
	// before the second, the unit is left whole to the caller.
	TESTQ $8, AX
	JZ    scexp8_out
	CMPQ  AX, CX
	JEQ   scexp8_last
	SUBQ  $8, AX
	JMP   scexp8_out

scexp8_last:
	VMOVUPS      Y9, -32(DI)(AX*4)
	VCVTPS2PD    X9, Y7
	VEXTRACTF128 $1, Y9, X8
	VCVTPS2PD    X8, Y8
	VADDPD       Y7, Y12, Y12
	VADDPD       Y8, Y13, Y13

scexp8_out:
	VMOVUPD Y12, (DX)
	VMOVUPD Y13, 32(DX)
	VZEROUPPER
	MOVQ    AX, ret+56(FP)
	RET

// func ceGradAVX2(dst unsafe.Pointer, e, sech2 *float32, n int, q, scale float32, bf16 int)
//
// dst[i] = ((e[i]·sech2[i])·q)·scale, rounded to bfloat16 as toBF16AVX2
// does if bf16 is set. It prefetches the n elements after dst, the next
// row's, which a whole row's computation then separates from its stores.
TEXT ·ceGradAVX2(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         e+8(FP), SI
	MOVQ         sech2+16(FP), R8
	MOVQ         n+24(FP), CX
	VBROADCASTSS q+32(FP), Y15
	VBROADCASTSS scale+36(FP), Y14
	MOVQ         bf16+40(FP), R9
	TESTQ R9, R9
	JNZ   cegrad8_pfbf16
	LEAQ  (DI)(CX*4), R10
	JMP   cegrad8_pfset

cegrad8_pfbf16:
	LEAQ (DI)(CX*2), R10

cegrad8_pfset:
	XORQ  AX, AX

cegrad8_loop:
	CMPQ    AX, CX
	JGE     cegrad8_done
	VMOVUPS (SI)(AX*4), Y0
	VMULPS  (R8)(AX*4), Y0, Y0
	VMULPS  Y15, Y0, Y0
	VMULPS  Y14, Y0, Y0
	TESTQ   R9, R9
	JNZ     cegrad8_bf16
	PREFETCHT0 (R10)(AX*4)
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     cegrad8_loop

cegrad8_bf16:
	PREFETCHT0   (R10)(AX*2)
	VPSRLD       $16, Y0, Y1
	VPAND        LSB, Y1, Y2
	VPADDD       Y2, Y0, Y2
	VPADDD       HALFBF16, Y2, Y2
	VPSRLD       $16, Y2, Y2
	VPAND        ABSMASK, Y0, Y3
	VPCMPGTD     INFBITS, Y3, Y3
	VPOR         QUIETBF, Y1, Y1
	VPBLENDVB    Y3, Y1, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPACKUSDW    X3, X2, X2
	VMOVDQU      X2, (DI)(AX*2)
	ADDQ         $8, AX
	JMP          cegrad8_loop

cegrad8_done:
	VZEROUPPER
	RET

// ---- 16 lanes (AVX-512) ---------------------------------------------------

// The AVX-512 kernels hold in registers Z16 log₂e, Z18 C1, Z19 C2, Z26
// one, Z28 −87.3, Z29 88 (LOADCONSTS16) and take the polynomials'
// coefficients as broadcast memory operands, which leaves registers for
// four blocks in flight.
#define LOADCONSTS16 \
	VBROADCASTSS LOG2E, Z16; \
	VBROADCASTSS C1, Z18;    \
	VBROADCASTSS C2, Z19;    \
	VBROADCASTSS ONE, Z26;   \
	VBROADCASTSS EXPLO, Z28; \
	VBROADCASTSS EXPHI, Z29

// EXPCORE16 sets R = Exp32(X) for X in [−87.3, 88] (K, T scratch; X
// kept). It is EXPCORE with two AVX-512 shortcuts that give the same
// bits: VRNDSCALEPS rounds x·log₂e to the nearest integer, ties to even,
// as adding and subtracting the magic number does for |x·log₂e| < 2²²;
// VSCALEFPS multiplies by 2^k exactly, as the multiply by the float with
// exponent bits k + 127 does while 2^k is normal (k ≥ −126 here).
#define EXPCORE16(X, K, R, T) \
	VMULPS      Z16, X, K; \
	VRNDSCALEPS $8, K, K; \
	VMULPS      Z18, K, T; \
	VSUBPS      T, X, R; \
	VMULPS      Z19, K, T; \
	VSUBPS      T, R, R; \
	VMULPS.BCST P0, R, T; \
	VADDPS.BCST P1, T, T; \
	VMULPS      R, T, T; \
	VADDPS.BCST P2, T, T; \
	VMULPS      R, T, T; \
	VADDPS.BCST P3, T, T; \
	VMULPS      R, T, T; \
	VADDPS.BCST P4, T, T; \
	VMULPS      R, T, T; \
	VADDPS.BCST P5, T, T; \
	VMULPS      R, T, T; \
	VMULPS      R, T, T; \
	VADDPS      R, T, T; \
	VADDPS      Z26, T, R; \
	VSCALEFPS   K, R, R

// EXPSPECIAL16: 0 where X < −87.3, X where X is NaN.
#define EXPSPECIAL16(X, R) \
	VCMPPS  LT_OS, Z28, X, K2; \
	VPXORD  R, R, K2, R;       \
	VCMPPS  UNORD_Q, X, X, K3; \
	VMOVAPS X, K3, R

// TANHPOLY16 sets P = TANHPOLY(X) on 16 lanes from Y = X².
#define TANHPOLY16(Y, X, P) \
	VMULPS.BCST Q0, Y, P; \
	VADDPS.BCST Q1, P, P; \
	VMULPS      Y, P, P; \
	VADDPS.BCST Q2, P, P; \
	VMULPS      Y, P, P; \
	VADDPS.BCST Q3, P, P; \
	VMULPS      Y, P, P; \
	VADDPS.BCST Q4, P, P; \
	VMULPS      Y, P, P; \
	VMULPS      X, P, P; \
	VADDPS      X, P, P

// TANHPOLY16X4 and EXPCORE16X4 are TANHPOLY16 and EXPCORE16 on four
// blocks, A to D, their instructions interleaved: each is a chain of
// dependent operations, and only several chains side by side in the
// scheduler keep both vector ports busy.
#define TANHPOLY16X4(YA, XA, PA, YB, XB, PB, YC, XC, PC, YD, XD, PD) \
	VMULPS.BCST Q0, YA, PA; \
	VMULPS.BCST Q0, YB, PB; \
	VMULPS.BCST Q0, YC, PC; \
	VMULPS.BCST Q0, YD, PD; \
	VADDPS.BCST Q1, PA, PA; \
	VADDPS.BCST Q1, PB, PB; \
	VADDPS.BCST Q1, PC, PC; \
	VADDPS.BCST Q1, PD, PD; \
	VMULPS      YA, PA, PA; \
	VMULPS      YB, PB, PB; \
	VMULPS      YC, PC, PC; \
	VMULPS      YD, PD, PD; \
	VADDPS.BCST Q2, PA, PA; \
	VADDPS.BCST Q2, PB, PB; \
	VADDPS.BCST Q2, PC, PC; \
	VADDPS.BCST Q2, PD, PD; \
	VMULPS      YA, PA, PA; \
	VMULPS      YB, PB, PB; \
	VMULPS      YC, PC, PC; \
	VMULPS      YD, PD, PD; \
	VADDPS.BCST Q3, PA, PA; \
	VADDPS.BCST Q3, PB, PB; \
	VADDPS.BCST Q3, PC, PC; \
	VADDPS.BCST Q3, PD, PD; \
	VMULPS      YA, PA, PA; \
	VMULPS      YB, PB, PB; \
	VMULPS      YC, PC, PC; \
	VMULPS      YD, PD, PD; \
	VADDPS.BCST Q4, PA, PA; \
	VADDPS.BCST Q4, PB, PB; \
	VADDPS.BCST Q4, PC, PC; \
	VADDPS.BCST Q4, PD, PD; \
	VMULPS      YA, PA, PA; \
	VMULPS      YB, PB, PB; \
	VMULPS      YC, PC, PC; \
	VMULPS      YD, PD, PD; \
	VMULPS      XA, PA, PA; \
	VMULPS      XB, PB, PB; \
	VMULPS      XC, PC, PC; \
	VMULPS      XD, PD, PD; \
	VADDPS      XA, PA, PA; \
	VADDPS      XB, PB, PB; \
	VADDPS      XC, PC, PC; \
	VADDPS      XD, PD, PD

#define EXPCORE16X4(XA, KA, RA, TA, XB, KB, RB, TB, XC, KC, RC, TC, XD, KD, RD, TD) \
	VMULPS      Z16, XA, KA; \
	VMULPS      Z16, XB, KB; \
	VMULPS      Z16, XC, KC; \
	VMULPS      Z16, XD, KD; \
	VRNDSCALEPS $8, KA, KA; \
	VRNDSCALEPS $8, KB, KB; \
	VRNDSCALEPS $8, KC, KC; \
	VRNDSCALEPS $8, KD, KD; \
	VMULPS      Z18, KA, TA; \
	VMULPS      Z18, KB, TB; \
	VMULPS      Z18, KC, TC; \
	VMULPS      Z18, KD, TD; \
	VSUBPS      TA, XA, RA; \
	VSUBPS      TB, XB, RB; \
	VSUBPS      TC, XC, RC; \
	VSUBPS      TD, XD, RD; \
	VMULPS      Z19, KA, TA; \
	VMULPS      Z19, KB, TB; \
	VMULPS      Z19, KC, TC; \
	VMULPS      Z19, KD, TD; \
	VSUBPS      TA, RA, RA; \
	VSUBPS      TB, RB, RB; \
	VSUBPS      TC, RC, RC; \
	VSUBPS      TD, RD, RD; \
	VMULPS.BCST P0, RA, TA; \
	VMULPS.BCST P0, RB, TB; \
	VMULPS.BCST P0, RC, TC; \
	VMULPS.BCST P0, RD, TD; \
	VADDPS.BCST P1, TA, TA; \
	VADDPS.BCST P1, TB, TB; \
	VADDPS.BCST P1, TC, TC; \
	VADDPS.BCST P1, TD, TD; \
	VMULPS      RA, TA, TA; \
	VMULPS      RB, TB, TB; \
	VMULPS      RC, TC, TC; \
	VMULPS      RD, TD, TD; \
	VADDPS.BCST P2, TA, TA; \
	VADDPS.BCST P2, TB, TB; \
	VADDPS.BCST P2, TC, TC; \
	VADDPS.BCST P2, TD, TD; \
	VMULPS      RA, TA, TA; \
	VMULPS      RB, TB, TB; \
	VMULPS      RC, TC, TC; \
	VMULPS      RD, TD, TD; \
	VADDPS.BCST P3, TA, TA; \
	VADDPS.BCST P3, TB, TB; \
	VADDPS.BCST P3, TC, TC; \
	VADDPS.BCST P3, TD, TD; \
	VMULPS      RA, TA, TA; \
	VMULPS      RB, TB, TB; \
	VMULPS      RC, TC, TC; \
	VMULPS      RD, TD, TD; \
	VADDPS.BCST P4, TA, TA; \
	VADDPS.BCST P4, TB, TB; \
	VADDPS.BCST P4, TC, TC; \
	VADDPS.BCST P4, TD, TD; \
	VMULPS      RA, TA, TA; \
	VMULPS      RB, TB, TB; \
	VMULPS      RC, TC, TC; \
	VMULPS      RD, TD, TD; \
	VADDPS.BCST P5, TA, TA; \
	VADDPS.BCST P5, TB, TB; \
	VADDPS.BCST P5, TC, TC; \
	VADDPS.BCST P5, TD, TD; \
	VMULPS      RA, TA, TA; \
	VMULPS      RB, TB, TB; \
	VMULPS      RC, TC, TC; \
	VMULPS      RD, TD, TD; \
	VMULPS      RA, TA, TA; \
	VMULPS      RB, TB, TB; \
	VMULPS      RC, TC, TC; \
	VMULPS      RD, TD, TD; \
	VADDPS      RA, TA, TA; \
	VADDPS      RB, TB, TB; \
	VADDPS      RC, TC, TC; \
	VADDPS      RD, TD, TD; \
	VADDPS      Z26, TA, RA; \
	VADDPS      Z26, TB, RB; \
	VADDPS      Z26, TC, RC; \
	VADDPS      Z26, TD, RD; \
	VSCALEFPS   KA, RA, RA; \
	VSCALEFPS   KB, RB, RB; \
	VSCALEFPS   KC, RC, RC; \
	VSCALEFPS   KD, RD, RD

// TANHREST16 is TANHREST on 16 lanes (K1, K2, K3 scratch).
#define TANHREST16(X, A, P, R, K, T, M) \
	VPANDD.BCST  ABSMASK, X, A;          \
	VADDPS       A, A, M;                \
	EXPCORE16(M, K, R, T);               \
	VADDPS       Z26, R, R;              \
	VBROADCASTSS TWO, T;                 \
	VDIVPS       R, T, R;                \
	VSUBPS       R, Z26, R;              \
	VPANDD.BCST  SIGNMASK, X, T;         \
	VPXORD       T, R, R;                \
	VCMPPS.BCST  LT_OS, TANHLO, A, K1;   \
	VMOVAPS      P, K1, R;               \
	VPORD        Z26, T, K;              \
	VCMPPS.BCST  GT_OQ, TANHHI, A, K2;   \
	VMOVAPS      K, K2, R;               \
	VCMPPS       UNORD_Q, X, X, K3;      \
	VMOVAPS      X, K3, R

// UNITSUM adds the unit of 16 exponentials E (EY its low half) to the
// lanes Z13: float32(e[j] + e[8+j]) widened (TY, UY, U scratch).
#define UNITSUM(E, EY, TY, UY, U) \
	VEXTRACTF32X8 $1, E, UY;  \
	VADDPS        UY, EY, TY; \
	VCVTPS2PD     TY, U;      \
	VADDPD        U, Z13, Z13


// func softcapExpAVX512(e *float32, sech2, x unsafe.Pointer, n int, c, s float32, acc *[8]float64, flags int) int
//
// softcapExpAVX2 on blocks of 16, each a unit of the sum. A block whose
// every y = x/c has y² < 0.625² (so |y| < 0.625 and no NaN) takes th from
// the odd polynomial alone. With flags&2 (every c·th − s is known to lie
// in [−87, 88]) such a block skips the exponential's range checks, and
// four blocks run together where every |x| is below 0.6249994·c (then
// |y| < 0.625 however x/c rounds).
TEXT ·softcapExpAVX512(SB), NOSPLIT, $0-64
	MOVQ         e+0(FP), DI
	MOVQ         sech2+8(FP), R8
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Z30
	VBROADCASTSS s+36(FP), Z31
	MOVQ         acc+40(FP), DX
	MOVQ         flags+48(FP), R9
	VMOVUPD      (DX), Z13
	LOADCONSTS16
	MOVL         $0x3ec80000, BX // 0.625²
	VPBROADCASTD BX, Z15
	MOVL         $0x3f1ffff6, BX // 0.625·(1 − 2⁻²⁰), rounded down
	VPBROADCASTD BX, Z14
	VMULPS       Z30, Z14, Z14
	XORQ         R11, R11
	XORQ         AX, AX
	TESTQ        $1, R9
	JNZ          scexp16_pfbf16
	LEAQ         (SI)(CX*4), R10
	JMP          scexp16_loop

scexp16_pfbf16:
	LEAQ (SI)(CX*2), R10

scexp16_loop:
	CMPQ  AX, CX
	JGE   scexp16_done
	TESTQ R11, R11
	JNZ   scexp16_countdown
	TESTQ $2, R9
	JZ    scexp16_one
	LEAQ  64(AX), BX
	CMPQ  BX, CX
	JGT   scexp16_one

	// Four blocks, A to D at AX, AX+16, AX+32, AX+48, if every |x| is
	// below Z14 (so every |y| < 0.625): x and then y in X, y² in Y, th in
	// P, z − s in V, e in X (registers of each block: X, Y, P, V, K).
	TESTQ      $1, R9
	JNZ        scexp16_qAbf16
	PREFETCHT0 0(R10)(AX*4)
	VMOVUPS    0(SI)(AX*4), Z0
	JMP        scexp16_qA

scexp16_qAbf16:
	PREFETCHT0 0(R10)(AX*2)
	VPMOVZXWD  0(SI)(AX*2), Z0
	VPSLLD     $16, Z0, Z0

scexp16_qA:
	VPANDD.BCST ABSMASK, Z0, Z1
	VCMPPS      LT_OS, Z14, Z1, K1
	TESTQ      $1, R9
	JNZ        scexp16_qBbf16
	PREFETCHT0 64(R10)(AX*4)
	VMOVUPS    64(SI)(AX*4), Z5
	JMP        scexp16_qB

scexp16_qBbf16:
	VPMOVZXWD  32(SI)(AX*2), Z5
	VPSLLD     $16, Z5, Z5

scexp16_qB:
	VPANDD.BCST ABSMASK, Z5, Z6
	VCMPPS      LT_OS, Z14, Z6, K1, K1
	TESTQ      $1, R9
	JNZ        scexp16_qCbf16
	PREFETCHT0 128(R10)(AX*4)
	VMOVUPS    128(SI)(AX*4), Z10
	JMP        scexp16_qC

scexp16_qCbf16:
	PREFETCHT0 64(R10)(AX*2)
	VPMOVZXWD  64(SI)(AX*2), Z10
	VPSLLD     $16, Z10, Z10

scexp16_qC:
	VPANDD.BCST ABSMASK, Z10, Z11
	VCMPPS      LT_OS, Z14, Z11, K1, K1
	TESTQ      $1, R9
	JNZ        scexp16_qDbf16
	PREFETCHT0 192(R10)(AX*4)
	VMOVUPS    192(SI)(AX*4), Z21
	JMP        scexp16_qD

scexp16_qDbf16:
	VPMOVZXWD  96(SI)(AX*2), Z21
	VPSLLD     $16, Z21, Z21

scexp16_qD:
	VPANDD.BCST ABSMASK, Z21, Z22
	VCMPPS      LT_OS, Z14, Z22, K1, K1
	KORTESTW K1, K1
	JCC      scexp16_quadfail
	VDIVPS   Z30, Z0, Z0
	VDIVPS   Z30, Z5, Z5
	VDIVPS   Z30, Z10, Z10
	VDIVPS   Z30, Z21, Z21
	VMULPS   Z0, Z0, Z1
	VMULPS   Z5, Z5, Z6
	VMULPS   Z10, Z10, Z11
	VMULPS   Z21, Z21, Z22
	TANHPOLY16X4(Z1, Z0, Z2, Z6, Z5, Z7, Z11, Z10, Z12, Z22, Z21, Z23)
	VMULPS   Z30, Z2, Z3
	VMULPS   Z30, Z7, Z8
	VMULPS   Z30, Z12, Z17
	VMULPS   Z30, Z23, Z24
	VSUBPS   Z31, Z3, Z3
	VSUBPS   Z31, Z8, Z8
	VSUBPS   Z31, Z17, Z17
	VSUBPS   Z31, Z24, Z24
	EXPCORE16X4(Z3, Z4, Z0, Z1, Z8, Z9, Z5, Z6, Z17, Z20, Z10, Z11, Z24, Z25, Z21, Z22)
	VMOVUPS  Z0, 0(DI)(AX*4)
	VMOVUPS  Z5, 64(DI)(AX*4)
	VMOVUPS  Z10, 128(DI)(AX*4)
	VMOVUPS  Z21, 192(DI)(AX*4)
	TESTQ    R8, R8
	JZ       scexp16_qsum
	VMULPS   Z2, Z2, Z1
	VMULPS   Z7, Z7, Z6
	VMULPS   Z12, Z12, Z11
	VMULPS   Z23, Z23, Z22
	VSUBPS   Z1, Z26, Z1
	VSUBPS   Z6, Z26, Z6
	VSUBPS   Z11, Z26, Z11
	VSUBPS   Z22, Z26, Z22
	VMOVUPS  Z1, 0(R8)(AX*4)
	VMOVUPS  Z6, 64(R8)(AX*4)
	VMOVUPS  Z11, 128(R8)(AX*4)
	VMOVUPS  Z22, 192(R8)(AX*4)

scexp16_qsum:
	UNITSUM(Z0, Y0, Y1, Y3, Z3)
	UNITSUM(Z5, Y5, Y6, Y8, Z8)
	UNITSUM(Z10, Y10, Y11, Y17, Z17)
	UNITSUM(Z21, Y21, Y22, Y24, Z24)
	ADDQ     $64, AX
	JMP      scexp16_loop

	// Not all four in the polynomial's range: the next four blocks one
	// by one.
scexp16_quadfail:
	MOVQ     $4, R11
	JMP      scexp16_one

scexp16_countdown:
	DECQ R11

	// One block at AX: y in Z0, y² in Z2, th in Z3, z − s in Z4, e in Z6.
scexp16_one:
	TESTQ $1, R9
	JNZ   scexp16_bf16
	PREFETCHT0 (R10)(AX*4)
	VMOVUPS    (SI)(AX*4), Z0
	JMP        scexp16_x

scexp16_bf16:
	PREFETCHT0 (R10)(AX*2)
	VPMOVZXWD  (SI)(AX*2), Z0
	VPSLLD     $16, Z0, Z0

scexp16_x:
	VDIVPS   Z30, Z0, Z0
	VMULPS   Z0, Z0, Z2
	VCMPPS   LT_OS, Z15, Z2, K1
	TANHPOLY16(Z2, Z0, Z3)
	KORTESTW K1, K1
	JCC      scexp16_wide
	VMULPS   Z30, Z3, Z4
	VSUBPS   Z31, Z4, Z4
	TESTQ    $2, R9
	JZ       scexp16_checked
	EXPCORE16(Z4, Z5, Z6, Z7)
	JMP      scexp16_store

scexp16_wide:
	TANHREST16(Z0, Z1, Z3, Z4, Z5, Z6, Z7)
	VMOVAPS Z4, Z3
	VMULPS  Z30, Z3, Z4
	VSUBPS  Z31, Z4, Z4

scexp16_checked:
	VCMPPS   GT_OQ, Z29, Z4, K4
	KORTESTW K4, K4
	JNE      scexp16_done
	EXPCORE16(Z4, Z5, Z6, Z7)
	EXPSPECIAL16(Z4, Z6)

scexp16_store:
	VMOVUPS  Z6, (DI)(AX*4)
	TESTQ    R8, R8
	JZ       scexp16_sum
	VMULPS   Z3, Z3, Z7
	VSUBPS   Z7, Z26, Z7
	VMOVUPS  Z7, (R8)(AX*4)

scexp16_sum:
	UNITSUM(Z6, Y6, Y7, Y8, Z8)
	ADDQ     $16, AX
	JMP      scexp16_loop

scexp16_done:
	VMOVUPD Z13, (DX)
	VZEROUPPER
	MOVQ    AX, ret+56(FP)
	RET

// func ceGradAVX512(dst unsafe.Pointer, e, sech2 *float32, n int, q, scale float32, bf16 int)
//
// ceGradAVX2 on blocks of 16 (the rounding of toBF16AVX512).
TEXT ·ceGradAVX512(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         e+8(FP), SI
	MOVQ         sech2+16(FP), R8
	MOVQ         n+24(FP), CX
	VBROADCASTSS q+32(FP), Z15
	VBROADCASTSS scale+36(FP), Z14
	MOVQ         bf16+40(FP), R9
	VPBROADCASTD LSB, Z10
	VPBROADCASTD HALFBF16, Z11
	VPBROADCASTD ABSMASK, Z12
	VPBROADCASTD INFBITS, Z13
	VPBROADCASTD QUIETBF, Z9
	TESTQ R9, R9
	JNZ   cegrad16_pfbf16
	LEAQ  (DI)(CX*4), R10
	JMP   cegrad16_pfset

cegrad16_pfbf16:
	LEAQ (DI)(CX*2), R10

cegrad16_pfset:
	XORQ  AX, AX

cegrad16_loop:
	CMPQ    AX, CX
	JGE     cegrad16_done
	VMOVUPS (SI)(AX*4), Z0
	VMULPS  (R8)(AX*4), Z0, Z0
	VMULPS  Z15, Z0, Z0
	VMULPS  Z14, Z0, Z0
	TESTQ   R9, R9
	JNZ     cegrad16_bf16
	PREFETCHT0 (R10)(AX*4)
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     cegrad16_loop

cegrad16_bf16:
	PREFETCHT0   (R10)(AX*2)
	VPSRLD    $16, Z0, Z1
	VPANDD    Z10, Z1, Z2
	VPADDD    Z2, Z0, Z2
	VPADDD    Z11, Z2, Z2
	VPSRLD    $16, Z2, Z2
	VPANDD    Z12, Z0, Z3
	VPCMPUD   $6, Z13, Z3, K1
	VPORD     Z9, Z1, K1, Z2
	VPMOVDW   Z2, (DI)(AX*2)
	ADDQ      $16, AX
	JMP       cegrad16_loop

cegrad16_done:
	VZEROUPPER
	RET

// ---- tables (16-bit logits) -------------------------------------------------

// BF16ROUND16 rounds the 16 float32 in Z0 to bfloat16 bits in Y2, as
// toBF16AVX512 does (Z9..Z12 and Z15: 1, 0x7fff, 0x7fffffff, 0x7f800000,
// 0x40; Z1, Z3, K1 scratch).
#define BF16ROUND16 \
	VPSRLD  $16, Z0, Z1;      \
	VPANDD  Z9, Z1, Z2;       \
	VPADDD  Z2, Z0, Z2;       \
	VPADDD  Z10, Z2, Z2;      \
	VPSRLD  $16, Z2, Z2;      \
	VPANDD  Z11, Z0, Z3;      \
	VPCMPUD $6, Z12, Z3, K1;  \
	VPORD   Z15, Z1, K1, Z2

// BF16ROUND8 rounds the 8 float32 in Y0 to bfloat16 bits in X2, as
// toBF16AVX2 does (Y1, Y3 scratch).
#define BF16ROUND8 \
	VPSRLD       $16, Y0, Y1;     \
	VPAND        LSB, Y1, Y2;     \
	VPADDD       Y2, Y0, Y2;      \
	VPADDD       HALFBF16, Y2, Y2; \
	VPSRLD       $16, Y2, Y2;     \
	VPAND        ABSMASK, Y0, Y3; \
	VPCMPGTD     INFBITS, Y3, Y3; \
	VPOR         QUIETBF, Y1, Y1; \
	VPBLENDVB    Y3, Y1, Y2, Y2;  \
	VEXTRACTI128 $1, Y2, X3;      \
	VPACKUSDW    X3, X2, X2

// GATHER16 sets D to te's entries at the 16 patterns at x+OFF (bytes)
// from AX (I, K scratch).
#define GATHER16(OFF, I, K, D) \
	VPMOVZXWD  OFF(SI)(AX*2), I; \
	KXNORW     K, K, K;          \
	VPXORD     D, D, D;          \
	VPGATHERDD (R8)(I*4), K, D

// GATHER8 is GATHER16 on 8 lanes (M scratch: the gather's mask).
#define GATHER8(OFF, I, M, D) \
	VPMOVZXWD  OFF(SI)(AX*2), I; \
	VPCMPEQD   M, M, M;          \
	VPXOR      D, D, D;          \
	VPGATHERDD M, (R8)(I*4), D

// func ceTableSumAVX2(e unsafe.Pointer, x *uint16, n int, te *float32, acc *[8]float64)
//
// e[i] = te[x[i]] (if e is not nil) and the sum by units of 16, as
// softcapExpAVX2 sums.
TEXT ·ceTableSumAVX2(SB), NOSPLIT, $0-40
	MOVQ    e+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    te+24(FP), R8
	MOVQ    acc+32(FP), DX
	VMOVUPD (DX), Y12
	VMOVUPD 32(DX), Y13
	LEAQ    (SI)(CX*2), R10
	XORQ    AX, AX

tsum8_loop:
	LEAQ 16(AX), BX
	CMPQ BX, CX
	JGT  tsum8_last
	PREFETCHT0 (R10)(AX*2)
	GATHER8(0, Y0, Y4, Y1)
	GATHER8(16, Y2, Y5, Y3)
	TESTQ   DI, DI
	JZ      tsum8_sum
	VMOVUPS Y1, (DI)(AX*4)
	VMOVUPS Y3, 32(DI)(AX*4)

tsum8_sum:
	VADDPS       Y3, Y1, Y1
	VCVTPS2PD    X1, Y6
	VEXTRACTF128 $1, Y1, X7
	VCVTPS2PD    X7, Y7
	VADDPD       Y6, Y12, Y12
	VADDPD       Y7, Y13, Y13
	ADDQ         $16, AX
	JMP          tsum8_loop

tsum8_last:
	CMPQ AX, CX
	JGE  tsum8_done
	GATHER8(0, Y0, Y4, Y1)
	TESTQ   DI, DI
	JZ      tsum8_sumlast
	VMOVUPS Y1, (DI)(AX*4)

tsum8_sumlast:
	VCVTPS2PD    X1, Y6
	VEXTRACTF128 $1, Y1, X7
	VCVTPS2PD    X7, Y7
	VADDPD       Y6, Y12, Y12
	VADDPD       Y7, Y13, Y13

tsum8_done:
	VMOVUPD Y12, (DX)
	VMOVUPD Y13, 32(DX)
	VZEROUPPER
	RET

// func ceTableSumAVX512(e unsafe.Pointer, x *uint16, n int, te *float32, acc *[8]float64)
//
// ceTableSumAVX2 on units of 16, four gathers in flight where it can.
TEXT ·ceTableSumAVX512(SB), NOSPLIT, $0-40
	MOVQ    e+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    te+24(FP), R8
	MOVQ    acc+32(FP), DX
	VMOVUPD (DX), Z13
	LEAQ    (SI)(CX*2), R10
	XORQ    AX, AX

tsum16_loop4:
	LEAQ 64(AX), BX
	CMPQ BX, CX
	JGT  tsum16_loop1
	PREFETCHT0 (R10)(AX*2)
	PREFETCHT0 64(R10)(AX*2)
	GATHER16(0, Z0, K1, Z1)
	GATHER16(32, Z2, K2, Z3)
	GATHER16(64, Z4, K3, Z5)
	GATHER16(96, Z6, K4, Z7)
	TESTQ   DI, DI
	JZ      tsum16_sum4
	VMOVUPS Z1, (DI)(AX*4)
	VMOVUPS Z3, 64(DI)(AX*4)
	VMOVUPS Z5, 128(DI)(AX*4)
	VMOVUPS Z7, 192(DI)(AX*4)

tsum16_sum4:
	UNITSUM(Z1, Y1, Y8, Y9, Z9)
	UNITSUM(Z3, Y3, Y10, Y11, Z11)
	UNITSUM(Z5, Y5, Y8, Y9, Z9)
	UNITSUM(Z7, Y7, Y10, Y11, Z11)
	ADDQ $64, AX
	JMP  tsum16_loop4

tsum16_loop1:
	CMPQ AX, CX
	JGE  tsum16_done
	GATHER16(0, Z0, K1, Z1)
	TESTQ   DI, DI
	JZ      tsum16_sum1
	VMOVUPS Z1, (DI)(AX*4)

tsum16_sum1:
	UNITSUM(Z1, Y1, Y8, Y9, Z9)
	ADDQ $16, AX
	JMP  tsum16_loop1

tsum16_done:
	VMOVUPD Z13, (DX)
	VZEROUPPER
	RET

// func ceGradTableAVX2(dst unsafe.Pointer, x *uint16, n int, teg *float32, q, scale float32, bf16 int)
//
// dst[i] = (teg[x[i]]·q)·scale, rounded to bfloat16 as toBF16AVX2 does if
// bf16 is set. It prefetches the next row's x and dst.
TEXT ·ceGradTableAVX2(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         teg+24(FP), R8
	VBROADCASTSS q+32(FP), Y15
	VBROADCASTSS scale+36(FP), Y14
	MOVQ         bf16+40(FP), R9
	LEAQ         (SI)(CX*2), R10
	LEAQ         (DI)(CX*4), R11
	TESTQ        R9, R9
	JZ           tgrad8_start
	LEAQ         (DI)(CX*2), R11

tgrad8_start:
	XORQ AX, AX

tgrad8_loop:
	CMPQ AX, CX
	JGE  tgrad8_done
	PREFETCHT0 (R10)(AX*2)
	GATHER8(0, Y4, Y5, Y0)
	VMULPS Y15, Y0, Y0
	VMULPS Y14, Y0, Y0
	TESTQ  R9, R9
	JNZ    tgrad8_bf16
	PREFETCHT0 (R11)(AX*4)
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     tgrad8_loop

tgrad8_bf16:
	PREFETCHT0 (R11)(AX*2)
	BF16ROUND8
	VMOVDQU X2, (DI)(AX*2)
	ADDQ    $8, AX
	JMP     tgrad8_loop

tgrad8_done:
	VZEROUPPER
	RET

// func ceGradTableAVX512(dst unsafe.Pointer, x *uint16, n int, teg *float32, q, scale float32, bf16 int)
//
// ceGradTableAVX2 on blocks of 16.
TEXT ·ceGradTableAVX512(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         teg+24(FP), R8
	VBROADCASTSS q+32(FP), Z14
	VBROADCASTSS scale+36(FP), Z13
	MOVQ         bf16+40(FP), R9
	VPBROADCASTD LSB, Z9
	VPBROADCASTD HALFBF16, Z10
	VPBROADCASTD ABSMASK, Z11
	VPBROADCASTD INFBITS, Z12
	VPBROADCASTD QUIETBF, Z15
	LEAQ         (SI)(CX*2), R10
	LEAQ         (DI)(CX*4), R11
	TESTQ        R9, R9
	JZ           tgrad16_start
	LEAQ         (DI)(CX*2), R11

tgrad16_start:
	XORQ AX, AX

tgrad16_loop:
	CMPQ AX, CX
	JGE  tgrad16_done
	PREFETCHT0 (R10)(AX*2)
	GATHER16(0, Z4, K2, Z0)
	VMULPS Z14, Z0, Z0
	VMULPS Z13, Z0, Z0
	TESTQ  R9, R9
	JNZ    tgrad16_bf16
	PREFETCHT0 (R11)(AX*4)
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     tgrad16_loop

tgrad16_bf16:
	PREFETCHT0 (R11)(AX*2)
	BF16ROUND16
	VPMOVDW Z2, (DI)(AX*2)
	ADDQ    $16, AX
	JMP     tgrad16_loop

tgrad16_done:
	VZEROUPPER
	RET

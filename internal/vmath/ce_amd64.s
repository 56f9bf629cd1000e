//go:build amd64 && !purego

#include "textflag.h"
#include "bf16_amd64.h"

// The cross-entropy kernels of ce.go, 8 lanes (AVX2 with FMA) and 16
// lanes (AVX-512) a block. SoftcapZ and ExpCE run in the order of their Go
// definitions, every fused multiply-add a VFMADD and every other multiply,
// add and divide rounded on its own, so each lane returns the bits of the
// Go code; CEGrad's products round one by one (no FMA). Sums go as
// ceAddUnits's: a whole unit of 64 is four 16-lane vectors added in
// order, their halves added and widened to the 8 float64 lanes (the AVX2
// kernels add their even and their odd blocks of 8 apart, which is the
// same); the blocks after go by pairs. Every lane of every block is
// computed here, overflow included: no block goes back to Go.
//
// SoftcapZ's odd polynomial is computed for every block; its exponential
// branch (a divide, ExpCE, the corrected quotient and the blends) only
// when a lane of the block has (x/c)² ≥ 0.625² or is NaN, which logits
// below 0.625·cap in magnitude never do.

// Rows of ·ceconst (8 lanes, 32 bytes each; the order of the ceXxx list
// in ce_amd64.go). The AVX-512 kernels broadcast a row's first lane.
#define CW ·ceconst+0(SB)
#define CQ0 ·ceconst+32(SB)
#define CQ1 ·ceconst+64(SB)
#define CQ2 ·ceconst+96(SB)
#define CQ3 ·ceconst+128(SB)
#define CQ4 ·ceconst+160(SB)
#define CLOG2E ·ceconst+192(SB)
#define CMAGIC ·ceconst+224(SB)
#define CLN2HI ·ceconst+256(SB)
#define CLN2LO ·ceconst+288(SB)
#define CE6 ·ceconst+320(SB)
#define CE5 ·ceconst+352(SB)
#define CE4 ·ceconst+384(SB)
#define CE3 ·ceconst+416(SB)
#define CE2 ·ceconst+448(SB)
#define CONE ·ceconst+480(SB)
#define CTWO ·ceconst+512(SB)
#define CSIGN ·ceconst+544(SB)
#define CEXPLO ·ceconst+576(SB)
#define CEXPINF ·ceconst+608(SB)
#define CBIAS ·ceconst+640(SB)
#define CINF ·ceconst+672(SB)

// Rows of ·vconst that the bfloat16 rounding uses (see vmath_amd64.go).
#define ABSMASK ·vconst+448(SB)
#define LSB ·vconst+768(SB)
#define HALFBF16 ·vconst+800(SB)
#define INFBITS ·vconst+832(SB)
#define QUIETBF ·vconst+864(SB)

// CEPFAHEAD is how far ahead of its loads the softcap kernels prefetch,
// in bytes: half a row of 1024 float32 logits, which takes a row's time to
// arrive at 2 threads (a whole row ahead, or none, is slower), and within
// L1 for any row length.
#define CEPFAHEAD 2048

// VCMPPS predicates.
#define LT_OS $0x01
#define UNORD_Q $0x03
#define GT_OQ $0x1e

// ---- 8 lanes (AVX2 with FMA) ----------------------------------------------

// CEEXP8 sets P = ExpCE(X) for X in [−87.3, 88]; X becomes r, K scratch.
// k = X·log₂e + magic − magic rounds the exact product to an integer,
// ties to even; 2^k is built from its bits (k + 127 in the exponent).
#define CEEXP8(X, K, P) \
	VMOVUPS      CMAGIC, K;    \
	VFMADD231PS  CLOG2E, X, K; \
	VSUBPS       CMAGIC, K, K; \
	VFNMADD231PS CLN2HI, K, X; \
	VFNMADD231PS CLN2LO, K, X; \
	VMOVUPS      CE6, P;       \
	VFMADD213PS  CE5, X, P;    \
	VFMADD213PS  CE4, X, P;    \
	VFMADD213PS  CE3, X, P;    \
	VFMADD213PS  CE2, X, P;    \
	VFMADD213PS  CONE, X, P;   \
	VFMADD213PS  CONE, X, P;   \
	VCVTPS2DQ    K, K;         \
	VPADDD       CBIAS, K, K;  \
	VPSLLD       $23, K, K;    \
	VMULPS       K, P, P

// CEEXP8W is CEEXP8 for X in [−87.3, 89], where k reaches 128: 2^k is
// applied as 2^(k>>1) and then 2^(k − k>>1), each a normal float32, so
// that the product still rounds once (T scratch).
#define CEEXP8W(X, K, P, T) \
	VMOVUPS      CMAGIC, K;    \
	VFMADD231PS  CLOG2E, X, K; \
	VSUBPS       CMAGIC, K, K; \
	VFNMADD231PS CLN2HI, K, X; \
	VFNMADD231PS CLN2LO, K, X; \
	VMOVUPS      CE6, P;       \
	VFMADD213PS  CE5, X, P;    \
	VFMADD213PS  CE4, X, P;    \
	VFMADD213PS  CE3, X, P;    \
	VFMADD213PS  CE2, X, P;    \
	VFMADD213PS  CONE, X, P;   \
	VFMADD213PS  CONE, X, P;   \
	VCVTPS2DQ    K, K;         \
	VPSRAD       $1, K, T;     \
	VPSUBD       T, K, K;      \
	VPADDD       CBIAS, T, T;  \
	VPSLLD       $23, T, T;    \
	VMULPS       T, P, P;      \
	VPADDD       CBIAS, K, K;  \
	VPSLLD       $23, K, K;    \
	VMULPS       K, P, P

// CEEXPSPECIAL8: P = 0 where U < −87.3, +Inf where U > 89, U where U is
// NaN (M scratch).
#define CEEXPSPECIAL8(U, P, M) \
	VCMPPS    LT_OS, CEXPLO, U, M;  \
	VANDNPS   P, M, P;              \
	VCMPPS    GT_OQ, CEXPINF, U, M; \
	VBLENDVPS M, CINF, P, P;        \
	VCMPPS    UNORD_Q, U, U, M;     \
	VBLENDVPS M, U, P, P

// CEWIDEN8 adds the 8 float32 of V (X its low half) to the float64 lanes
// at DX (Y7, Y8 scratch).
#define CEWIDEN8(V, X) \
	VCVTPS2PD    X, Y7;        \
	VEXTRACTF128 $1, V, X8;    \
	VCVTPS2PD    X8, Y8;       \
	VADDPD       (DX), Y7, Y7;   \
	VADDPD       32(DX), Y8, Y8; \
	VMOVUPD      Y7, (DX);       \
	VMOVUPD      Y8, 32(DX)

// func softcapExpAVX2(e *float32, sech2, x unsafe.Pointer, n int, c, rc, s float32, acc *[8]float64, flags int)
//
// z, g = softcapZ(x[i], c, rc); e[i] = ExpCE(z − s); sech2[i] = g if
// sech2 is not nil; the e added to acc's lanes as ceAddUnits adds them. x
// is bfloat16 if flags&1. A block whose every w = (x·rc)² is below 0.625²
// (so no NaN) takes z and g from the odd polynomial alone; with flags&2
// (every z − s is known to lie in [−87, 88]) it also skips the
// exponential's range checks. It prefetches CEPFAHEAD bytes ahead of the
// logits it loads, into the next row where rows are contiguous.
TEXT ·softcapExpAVX2(SB), NOSPLIT, $0-64
	MOVQ         e+0(FP), DI
	MOVQ         sech2+8(FP), R8
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Y15
	VBROADCASTSS rc+36(FP), Y13
	VBROADCASTSS s+40(FP), Y14
	MOVQ         acc+48(FP), DX
	MOVQ         flags+56(FP), R9
	MOVQ         CX, R12
	ANDQ         $-64, R12
	LEAQ         CEPFAHEAD(SI), R10
	XORQ         AX, AX

	// One block at AX: x in Y0, w and then g in Y1, the polynomial's
	// lanes in Y2, t in Y3, z and then z − s in Y4, e in Y6. The sums of
	// a whole unit of 64 gather in Y10 (even blocks) and Y11 (odd); after
	// the last whole unit the first block of a pair waits in Y10.
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
	VMULPS       Y13, Y0, Y1
	VMULPS       Y1, Y1, Y1
	VCMPPS       LT_OS, CW, Y1, Y2
	VMOVUPS      CQ0, Y3
	VFMADD213PS  CQ1, Y1, Y3
	VFMADD213PS  CQ2, Y1, Y3
	VFMADD213PS  CQ3, Y1, Y3
	VFMADD213PS  CQ4, Y1, Y3
	VMULPS       Y1, Y3, Y3
	VMOVAPS      Y0, Y4
	VFMADD231PS  Y3, Y0, Y4
	VADDPS       CONE, Y3, Y5
	VMULPS       Y5, Y1, Y1
	VFNMADD213PS CONE, Y5, Y1
	VMOVMSKPS    Y2, BX
	CMPL         BX, $0xff
	JNE          scexp8_wide
	VSUBPS       Y14, Y4, Y4
	TESTQ        $2, R9
	JZ           scexp8_checked
	CEEXP8(Y4, Y5, Y6)
	JMP          scexp8_store

	// The exponential branch into Y3 (z) and Y8 (g), blended into the
	// lanes Y2 does not hold: y = x/c in Y3, m = −2|y| in Y5, d in Y7;
	// then x itself where it is NaN.
scexp8_wide:
	VDIVPS       Y15, Y0, Y3
	VORPS        CSIGN, Y3, Y5
	VADDPS       Y5, Y5, Y5
	VMOVAPS      Y5, Y8
	CEEXP8W(Y8, Y6, Y7, Y9)
	CEEXPSPECIAL8(Y5, Y7, Y9)
	VADDPS       CONE, Y7, Y5
	VSUBPS       CONE, Y5, Y6
	VSUBPS       Y6, Y7, Y6
	VADDPS       Y7, Y7, Y8
	VDIVPS       Y5, Y8, Y9
	VFNMADD231PS Y9, Y5, Y8
	VFNMADD231PS Y9, Y6, Y8
	VDIVPS       Y5, Y8, Y8
	VADDPS       Y8, Y9, Y9
	VANDPS       CSIGN, Y3, Y3
	VXORPS       Y15, Y3, Y3
	VFNMADD231PS Y9, Y3, Y3
	VMOVUPS      CTWO, Y8
	VSUBPS       Y9, Y8, Y8
	VMULPS       Y9, Y8, Y8
	VBLENDVPS    Y2, Y4, Y3, Y4
	VBLENDVPS    Y2, Y1, Y8, Y1
	VCMPPS       UNORD_Q, Y0, Y0, Y9
	VBLENDVPS    Y9, Y0, Y4, Y4
	VBLENDVPS    Y9, Y0, Y1, Y1
	VSUBPS       Y14, Y4, Y4

scexp8_checked:
	VMOVAPS Y4, Y7
	CEEXP8W(Y7, Y5, Y6, Y8)
	CEEXPSPECIAL8(Y4, Y6, Y7)

scexp8_store:
	VMOVUPS Y6, (DI)(AX*4)
	TESTQ   R8, R8
	JZ      scexp8_sum
	VMOVUPS Y1, (R8)(AX*4)

scexp8_sum:
	CMPQ  AX, R12
	JGE   scexp8_pairs
	MOVQ  AX, BX
	ANDQ  $63, BX
	JZ    scexp8_lo0
	CMPQ  BX, $8
	JEQ   scexp8_hi0
	TESTQ $8, BX
	JNZ   scexp8_hi
	VADDPS Y6, Y10, Y10
	JMP   scexp8_next

scexp8_lo0:
	VMOVAPS Y6, Y10
	JMP     scexp8_next

scexp8_hi0:
	VMOVAPS Y6, Y11
	JMP     scexp8_next

scexp8_hi:
	VADDPS Y6, Y11, Y11
	CMPQ   BX, $56
	JNE    scexp8_next
	VADDPS Y11, Y10, Y6
	CEWIDEN8(Y6, X6)
	JMP    scexp8_next

scexp8_pairs:
	TESTQ   $8, AX
	JNZ     scexp8_pair
	VMOVAPS Y6, Y10
	JMP     scexp8_next

scexp8_pair:
	VADDPS Y10, Y6, Y6
	CEWIDEN8(Y6, X6)

scexp8_next:
	ADDQ $8, AX
	JMP  scexp8_loop

scexp8_done:
	// A last block of 8 without its pair goes to the lanes alone.
	TESTQ $8, CX
	JZ    scexp8_out
	CEWIDEN8(Y10, X10)

scexp8_out:
	VZEROUPPER
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

// The AVX-512 softcap kernel holds in registers Z31 s, Z30 c, Z29 rc, Z28
// 0.625², Z27 log₂e, Z26 the magic number, Z25 one, Z24 and Z23 ln 2's
// two parts, Z22 E6, Z21 Q0, Z20 −87.3, Z19 89, Z18 +Inf, the float64
// lanes in Z13 and a unit's float32 sum in Z17; the other coefficients are
// broadcast memory operands. Four blocks in flight take Z0–Z12 and
// Z14–Z16, four registers each.
#define LOADCONSTS16 \
	VBROADCASTSS CW, Z28;     \
	VBROADCASTSS CLOG2E, Z27; \
	VBROADCASTSS CMAGIC, Z26; \
	VBROADCASTSS CONE, Z25;   \
	VBROADCASTSS CLN2HI, Z24; \
	VBROADCASTSS CLN2LO, Z23; \
	VBROADCASTSS CE6, Z22;    \
	VBROADCASTSS CQ0, Z21;    \
	VBROADCASTSS CEXPLO, Z20; \
	VBROADCASTSS CEXPINF, Z19; \
	VBROADCASTSS CINF, Z18

// CEW16 sets W = w = (X·rc)².
#define CEW16(X, W) \
	VMULPS Z29, X, W; \
	VMULPS W, W, W

// CET16 sets T = t = w·Q(w) from W = w.
#define CET16(W, T) \
	VMOVAPS          Z21, T;   \
	VFMADD213PS.BCST CQ1, W, T; \
	VFMADD213PS.BCST CQ2, W, T; \
	VFMADD213PS.BCST CQ3, W, T; \
	VFMADD213PS.BCST CQ4, W, T; \
	VMULPS           W, T, T

// CEG16 turns W = w into g = fma(−(w·a), a, 1), a = 1 + T (A scratch).
#define CEG16(W, T, A) \
	VADDPS       Z25, T, A; \
	VMULPS       A, W, W;   \
	VFNMADD213PS Z25, A, W

// CEEXP16 sets P = ExpCE(X) for X in [−87.3, 89]; X becomes r, K scratch.
// VSCALEFPS multiplies by 2^k with one rounding, +Inf past the largest
// float32 (k = 128).
#define CEEXP16(X, K, P) \
	VMOVAPS          Z26, K;    \
	VFMADD231PS      Z27, X, K; \
	VSUBPS           Z26, K, K; \
	VFNMADD231PS     Z24, K, X; \
	VFNMADD231PS     Z23, K, X; \
	VMOVAPS          Z22, P;    \
	VFMADD213PS.BCST CE5, X, P; \
	VFMADD213PS.BCST CE4, X, P; \
	VFMADD213PS.BCST CE3, X, P; \
	VFMADD213PS.BCST CE2, X, P; \
	VFMADD213PS      Z25, X, P; \
	VFMADD213PS      Z25, X, P; \
	VSCALEFPS        K, P, P

// CEEXPMASKS16 sets K2 where U < −87.3 (ExpCE 0), K4 where U > 89
// (ExpCE +Inf) and K3 where U is NaN (ExpCE U); CEEXPSPECIAL16 applies
// them to P.
#define CEEXPMASKS16(U) \
	VCMPPS LT_OS, Z20, U, K2; \
	VCMPPS GT_OQ, Z19, U, K4; \
	VCMPPS UNORD_Q, U, U, K3

#define CEEXPSPECIAL16(U, P) \
	VPXORD  P, P, K2, P; \
	VMOVAPS Z18, K4, P;  \
	VMOVAPS U, K3, P

// CET16X4 and CEEXP16X4 are CET16 and CEEXP16 on four blocks, their
// instructions interleaved: each is a chain of dependent operations, and
// only several chains side by side keep both vector ports busy.
#define CET16X4(WA, TA, WB, TB, WC, TC, WD, TD) \
	VMOVAPS          Z21, TA;     \
	VMOVAPS          Z21, TB;     \
	VMOVAPS          Z21, TC;     \
	VMOVAPS          Z21, TD;     \
	VFMADD213PS.BCST CQ1, WA, TA; \
	VFMADD213PS.BCST CQ1, WB, TB; \
	VFMADD213PS.BCST CQ1, WC, TC; \
	VFMADD213PS.BCST CQ1, WD, TD; \
	VFMADD213PS.BCST CQ2, WA, TA; \
	VFMADD213PS.BCST CQ2, WB, TB; \
	VFMADD213PS.BCST CQ2, WC, TC; \
	VFMADD213PS.BCST CQ2, WD, TD; \
	VFMADD213PS.BCST CQ3, WA, TA; \
	VFMADD213PS.BCST CQ3, WB, TB; \
	VFMADD213PS.BCST CQ3, WC, TC; \
	VFMADD213PS.BCST CQ3, WD, TD; \
	VFMADD213PS.BCST CQ4, WA, TA; \
	VFMADD213PS.BCST CQ4, WB, TB; \
	VFMADD213PS.BCST CQ4, WC, TC; \
	VFMADD213PS.BCST CQ4, WD, TD; \
	VMULPS           WA, TA, TA;  \
	VMULPS           WB, TB, TB;  \
	VMULPS           WC, TC, TC;  \
	VMULPS           WD, TD, TD

#define CEEXP16X4(XA, KA, PA, XB, KB, PB, XC, KC, PC, XD, KD, PD) \
	VMOVAPS          Z26, KA;     \
	VMOVAPS          Z26, KB;     \
	VMOVAPS          Z26, KC;     \
	VMOVAPS          Z26, KD;     \
	VFMADD231PS      Z27, XA, KA; \
	VFMADD231PS      Z27, XB, KB; \
	VFMADD231PS      Z27, XC, KC; \
	VFMADD231PS      Z27, XD, KD; \
	VSUBPS           Z26, KA, KA; \
	VSUBPS           Z26, KB, KB; \
	VSUBPS           Z26, KC, KC; \
	VSUBPS           Z26, KD, KD; \
	VFNMADD231PS     Z24, KA, XA; \
	VFNMADD231PS     Z24, KB, XB; \
	VFNMADD231PS     Z24, KC, XC; \
	VFNMADD231PS     Z24, KD, XD; \
	VFNMADD231PS     Z23, KA, XA; \
	VFNMADD231PS     Z23, KB, XB; \
	VFNMADD231PS     Z23, KC, XC; \
	VFNMADD231PS     Z23, KD, XD; \
	VMOVAPS          Z22, PA;     \
	VMOVAPS          Z22, PB;     \
	VMOVAPS          Z22, PC;     \
	VMOVAPS          Z22, PD;     \
	VFMADD213PS.BCST CE5, XA, PA; \
	VFMADD213PS.BCST CE5, XB, PB; \
	VFMADD213PS.BCST CE5, XC, PC; \
	VFMADD213PS.BCST CE5, XD, PD; \
	VFMADD213PS.BCST CE4, XA, PA; \
	VFMADD213PS.BCST CE4, XB, PB; \
	VFMADD213PS.BCST CE4, XC, PC; \
	VFMADD213PS.BCST CE4, XD, PD; \
	VFMADD213PS.BCST CE3, XA, PA; \
	VFMADD213PS.BCST CE3, XB, PB; \
	VFMADD213PS.BCST CE3, XC, PC; \
	VFMADD213PS.BCST CE3, XD, PD; \
	VFMADD213PS.BCST CE2, XA, PA; \
	VFMADD213PS.BCST CE2, XB, PB; \
	VFMADD213PS.BCST CE2, XC, PC; \
	VFMADD213PS.BCST CE2, XD, PD; \
	VFMADD213PS      Z25, XA, PA; \
	VFMADD213PS      Z25, XB, PB; \
	VFMADD213PS      Z25, XC, PC; \
	VFMADD213PS      Z25, XD, PD; \
	VFMADD213PS      Z25, XA, PA; \
	VFMADD213PS      Z25, XB, PB; \
	VFMADD213PS      Z25, XC, PC; \
	VFMADD213PS      Z25, XD, PD; \
	VSCALEFPS        KA, PA, PA;  \
	VSCALEFPS        KB, PB, PB;  \
	VSCALEFPS        KC, PC, PC;  \
	VSCALEFPS        KD, PD, PD

// UNITSUM adds the 16 float32 sums E (EY its low half) of a unit to the
// lanes Z13: float32(e[j] + e[8+j]) widened (TY, UY, U scratch).
#define UNITSUM(E, EY, TY, UY, U) \
	VEXTRACTF32X8 $1, E, UY;  \
	VADDPS        UY, EY, TY; \
	VCVTPS2PD     TY, U;      \
	VADDPD        U, Z13, Z13

// CELOADF32 loads 16 float32 logits at byte OFF from x+4·AX into X, and
// prefetches the next row's; CELOADBF16 the same for bfloat16 (OFF bytes
// from x+2·AX), widened.
#define CELOADF32(OFF, X) \
	PREFETCHT0 OFF(R10)(AX*4); \
	VMOVUPS    OFF(SI)(AX*4), X

#define CELOADBF16(OFF, X) \
	PREFETCHT0 OFF(R10)(AX*2);   \
	VPMOVZXWD  OFF(SI)(AX*2), X; \
	VPSLLD     $16, X, X

// func softcapExpAVX512(e *float32, sech2, x unsafe.Pointer, n int, c, rc, s float32, acc *[8]float64, flags int)
//
// softcapExpAVX2 on blocks of 16 (n a multiple of 16). A block whose
// every w = (x·rc)² is below 0.625² takes z and g from the odd polynomial
// alone. With flags&2 (every z − s is known to lie in [−87, 88]) such a
// block skips the exponential's range checks, and the four of a whole
// unit of 64 run together where all four are so.
TEXT ·softcapExpAVX512(SB), NOSPLIT, $0-64
	MOVQ         e+0(FP), DI
	MOVQ         sech2+8(FP), R8
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Z30
	VBROADCASTSS rc+36(FP), Z29
	VBROADCASTSS s+40(FP), Z31
	MOVQ         acc+48(FP), DX
	MOVQ         flags+56(FP), R9
	VMOVUPD      (DX), Z13
	LOADCONSTS16
	MOVQ         CX, R12
	ANDQ         $-64, R12
	XORQ         R11, R11
	XORQ         AX, AX
	LEAQ         CEPFAHEAD(SI), R10

scexp16_loop:
	CMPQ  AX, CX
	JGE   scexp16_done
	TESTQ R11, R11
	JNZ   scexp16_countdown
	TESTQ $2, R9
	JZ    scexp16_one
	LEAQ  64(AX), BX
	CMPQ  BX, R12
	JGT   scexp16_one

	// Four blocks, A to D at AX, AX+16, AX+32, AX+48, if every w is below
	// 0.625²: x, then z − s, then r in X; w, then g, then scratch in W;
	// t, then e in T; k in K. (X, W, T, K) = A (Z0, Z1, Z2, Z3), B (Z4,
	// Z5, Z6, Z7), C (Z8, Z9, Z10, Z11), D (Z12, Z14, Z15, Z16).
	TESTQ $1, R9
	JNZ   scexp16_qbf16
	CELOADF32(0, Z0)
	CELOADF32(64, Z4)
	CELOADF32(128, Z8)
	CELOADF32(192, Z12)
	JMP   scexp16_qw

scexp16_qbf16:
	CELOADBF16(0, Z0)
	CELOADBF16(32, Z4)
	CELOADBF16(64, Z8)
	CELOADBF16(96, Z12)

scexp16_qw:
	CEW16(Z0, Z1)
	CEW16(Z4, Z5)
	CEW16(Z8, Z9)
	CEW16(Z12, Z14)
	VCMPPS   LT_OS, Z28, Z1, K1
	VCMPPS   LT_OS, Z28, Z5, K1, K1
	VCMPPS   LT_OS, Z28, Z9, K1, K1
	VCMPPS   LT_OS, Z28, Z14, K1, K1
	KORTESTW K1, K1
	JCC      scexp16_quadfail
	CET16X4(Z1, Z2, Z5, Z6, Z9, Z10, Z14, Z15)
	TESTQ    R8, R8
	JZ       scexp16_qz
	CEG16(Z1, Z2, Z3)
	CEG16(Z5, Z6, Z7)
	CEG16(Z9, Z10, Z11)
	CEG16(Z14, Z15, Z16)
	VMOVUPS  Z1, 0(R8)(AX*4)
	VMOVUPS  Z5, 64(R8)(AX*4)
	VMOVUPS  Z9, 128(R8)(AX*4)
	VMOVUPS  Z14, 192(R8)(AX*4)

scexp16_qz:
	VFMADD231PS Z2, Z0, Z0
	VFMADD231PS Z6, Z4, Z4
	VFMADD231PS Z10, Z8, Z8
	VFMADD231PS Z15, Z12, Z12
	VSUBPS      Z31, Z0, Z0
	VSUBPS      Z31, Z4, Z4
	VSUBPS      Z31, Z8, Z8
	VSUBPS      Z31, Z12, Z12
	CEEXP16X4(Z0, Z3, Z2, Z4, Z7, Z6, Z8, Z11, Z10, Z12, Z16, Z15)
	VMOVUPS     Z2, 0(DI)(AX*4)
	VMOVUPS     Z6, 64(DI)(AX*4)
	VMOVUPS     Z10, 128(DI)(AX*4)
	VMOVUPS     Z15, 192(DI)(AX*4)
	VADDPS      Z6, Z2, Z2
	VADDPS      Z10, Z2, Z2
	VADDPS      Z15, Z2, Z2
	UNITSUM(Z2, Y2, Y1, Y3, Z3)
	ADDQ        $64, AX
	JMP         scexp16_loop

	// Not all four in the polynomial's range: this block and the unit's
	// three others one by one.
scexp16_quadfail:
	MOVQ $3, R11
	JMP  scexp16_one

scexp16_countdown:
	DECQ R11

	// One block at AX: x in Z0, w and then g in Z1, t in Z2, z and then
	// z − s in Z4; the exponential branch in Z6–Z12 and Z14–Z16; e in Z6.
scexp16_one:
	TESTQ $1, R9
	JNZ   scexp16_bf16
	CELOADF32(0, Z0)
	JMP   scexp16_x

scexp16_bf16:
	CELOADBF16(0, Z0)

scexp16_x:
	CEW16(Z0, Z1)
	VCMPPS      LT_OS, Z28, Z1, K1
	CET16(Z1, Z2)
	VMOVAPS     Z0, Z4
	VFMADD231PS Z2, Z0, Z4
	CEG16(Z1, Z2, Z3)
	KORTESTW    K1, K1
	JCC         scexp16_wide
	VSUBPS      Z31, Z4, Z4
	TESTQ       $2, R9
	JZ          scexp16_checked
	CEEXP16(Z4, Z5, Z6)
	JMP         scexp16_store

	// y = x/c in Z6, m = −2|y| in Z7, d in Z8; z into Z4 and g into Z1
	// where K1 is clear, then x itself where it is NaN.
scexp16_wide:
	VDIVPS           Z30, Z0, Z6
	VPORD.BCST       CSIGN, Z6, Z7
	VADDPS           Z7, Z7, Z7
	CEEXPMASKS16(Z7)
	VMOVAPS          Z7, Z9
	CEEXP16(Z9, Z10, Z8)
	CEEXPSPECIAL16(Z7, Z8)
	VADDPS           Z25, Z8, Z9
	VSUBPS           Z25, Z9, Z10
	VSUBPS           Z10, Z8, Z10
	VADDPS           Z8, Z8, Z11
	VDIVPS           Z9, Z11, Z12
	VFNMADD231PS     Z12, Z9, Z11
	VFNMADD231PS     Z12, Z10, Z11
	VDIVPS           Z9, Z11, Z11
	VADDPS           Z11, Z12, Z12
	VPANDD.BCST      CSIGN, Z6, Z14
	VPXORD           Z30, Z14, Z14
	VFNMADD231PS     Z12, Z14, Z14
	VBROADCASTSS     CTWO, Z15
	VSUBPS           Z12, Z15, Z15
	VMULPS           Z12, Z15, Z15
	KNOTW            K1, K2
	VMOVAPS          Z14, K2, Z4
	VMOVAPS          Z15, K2, Z1
	VCMPPS           UNORD_Q, Z0, Z0, K3
	VMOVAPS          Z0, K3, Z4
	VMOVAPS          Z0, K3, Z1
	VSUBPS           Z31, Z4, Z4

scexp16_checked:
	CEEXPMASKS16(Z4)
	VMOVAPS  Z4, Z7
	CEEXP16(Z7, Z5, Z6)
	CEEXPSPECIAL16(Z4, Z6)

scexp16_store:
	VMOVUPS Z6, (DI)(AX*4)
	TESTQ   R8, R8
	JZ      scexp16_sum
	VMOVUPS Z1, (R8)(AX*4)

	// In a whole unit of 64 the blocks gather in Z17, and the fourth
	// goes to the lanes with them; after the last whole unit each block
	// is a unit of 16.
scexp16_sum:
	CMPQ  AX, R12
	JGE   scexp16_sum16
	MOVQ  AX, BX
	ANDQ  $63, BX
	JNZ   scexp16_add
	VMOVAPS Z6, Z17
	JMP   scexp16_next

scexp16_add:
	VADDPS Z6, Z17, Z17
	CMPQ   BX, $48
	JNE    scexp16_next
	UNITSUM(Z17, Y17, Y7, Y8, Z8)
	JMP    scexp16_next

scexp16_sum16:
	UNITSUM(Z6, Y6, Y7, Y8, Z8)

scexp16_next:
	ADDQ $16, AX
	JMP  scexp16_loop

scexp16_done:
	VMOVUPD Z13, (DX)
	VZEROUPPER
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
#define BF16ROUND16 ROUND_BF16(Z0, Z3, Z1, Z2, Z9, Z10, Z11, Z12, Z15)

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
// e[i] = te[x[i]] (if e is not nil) and the sum as softcapExpAVX2 sums:
// a whole unit of 64 as its even blocks of 8 and its odd ones, each added
// in order, then the two; then pairs.
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

tsum8_loop64:
	LEAQ 64(AX), BX
	CMPQ BX, CX
	JGT  tsum8_loop
	PREFETCHT0 (R10)(AX*2)
	PREFETCHT0 64(R10)(AX*2)
	GATHER8(0, Y0, Y4, Y1)
	GATHER8(16, Y0, Y4, Y3)
	TESTQ   DI, DI
	JZ      tsum8_u1
	VMOVUPS Y1, (DI)(AX*4)
	VMOVUPS Y3, 32(DI)(AX*4)

tsum8_u1:
	GATHER8(32, Y0, Y4, Y5)
	GATHER8(48, Y0, Y4, Y6)
	TESTQ   DI, DI
	JZ      tsum8_u1s
	VMOVUPS Y5, 64(DI)(AX*4)
	VMOVUPS Y6, 96(DI)(AX*4)

tsum8_u1s:
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y3, Y3
	GATHER8(64, Y0, Y4, Y5)
	GATHER8(80, Y0, Y4, Y6)
	TESTQ   DI, DI
	JZ      tsum8_u2s
	VMOVUPS Y5, 128(DI)(AX*4)
	VMOVUPS Y6, 160(DI)(AX*4)

tsum8_u2s:
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y3, Y3
	GATHER8(96, Y0, Y4, Y5)
	GATHER8(112, Y0, Y4, Y6)
	TESTQ   DI, DI
	JZ      tsum8_u3s
	VMOVUPS Y5, 192(DI)(AX*4)
	VMOVUPS Y6, 224(DI)(AX*4)

tsum8_u3s:
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y3, Y3
	VADDPS       Y3, Y1, Y1
	VCVTPS2PD    X1, Y6
	VEXTRACTF128 $1, Y1, X7
	VCVTPS2PD    X7, Y7
	VADDPD       Y6, Y12, Y12
	VADDPD       Y7, Y13, Y13
	ADDQ         $64, AX
	JMP          tsum8_loop64

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
// ceTableSumAVX2 on blocks of 16 (n a multiple of 16), the four of a whole
// unit of 64 in flight together.
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
	VADDPS Z3, Z1, Z1
	VADDPS Z5, Z1, Z1
	VADDPS Z7, Z1, Z1
	UNITSUM(Z1, Y1, Y8, Y9, Z9)
	ADDQ   $64, AX
	JMP    tsum16_loop4

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
// bf16 is 1, to binary16 by VCVTPS2PH (F16C; nearest even, as ToF16) if it
// is 2. It prefetches the next row's x and dst.
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
	CMPQ    R9, $2
	JEQ     tgrad8_f16
	BF16ROUND8
	VMOVDQU X2, (DI)(AX*2)
	ADDQ    $8, AX
	JMP     tgrad8_loop

tgrad8_f16:
	VCVTPS2PH $0, Y0, (DI)(AX*2)
	ADDQ      $8, AX
	JMP       tgrad8_loop

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
	BF16_CONSTS(Z9, Z10, Z11, Z12, Z15)
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
	CMPQ    R9, $2
	JEQ     tgrad16_f16
	BF16ROUND16
	VPMOVDW Z2, (DI)(AX*2)
	ADDQ    $16, AX
	JMP     tgrad16_loop

tgrad16_f16:
	VCVTPS2PH $0, Z0, (DI)(AX*2)
	ADDQ      $16, AX
	JMP       tgrad16_loop

tgrad16_done:
	VZEROUPPER
	RET

// func softcapZFMA(x, c, rc float32) (z, sech2 float32, ok bool)
//
// SoftcapZ of one x (z, and g as sech2) by its odd polynomial, the scalar
// sequence of the kernels above; ok is false, and z and g are not set,
// where w = (x·rc)² is not below 0.625² (or is NaN): the exponential
// branch is Go's.
TEXT ·softcapZFMA(SB), NOSPLIT, $0-25
	VMOVSS       x+0(FP), X0
	VMOVSS       rc+8(FP), X1
	VMULSS       X1, X0, X1
	VMULSS       X1, X1, X1
	VUCOMISS     CW, X1
	JPS          szfma_no
	JCC          szfma_no
	VMOVSS       CQ0, X2
	VFMADD213SS  CQ1, X1, X2
	VFMADD213SS  CQ2, X1, X2
	VFMADD213SS  CQ3, X1, X2
	VFMADD213SS  CQ4, X1, X2
	VMULSS       X1, X2, X2
	VFMADD231SS  X2, X0, X0
	VADDSS       CONE, X2, X3
	VMULSS       X3, X1, X1
	VFNMADD213SS CONE, X3, X1
	VMOVSS       X0, z+16(FP)
	VMOVSS       X1, sech2+20(FP)
	MOVB         $1, ok+24(FP)
	RET

szfma_no:
	MOVB $0, ok+24(FP)
	RET

//go:build amd64 && !purego

#include "textflag.h"

// AVX2 kernels, 8 float32 lanes a block. Every multiply and add rounds on
// its own (no FMA), in the order of Exp32 and Tanh32, so each lane returns
// the bits the Go functions return. Constants are rows of ·vconst (8 lanes,
// 32 bytes each; the order is the cXxx list of vmath_amd64.go).

#define LOG2E ·vconst+0(SB)
#define MAGIC ·vconst+32(SB)
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

// EXPCORE sets R = Exp32(X) for X in [−87.3, 88] (K, T scratch; X kept):
// k = round(x·log₂e), r = (x − k·C1) − k·C2, e = ((p·r)·r + r) + 1 with
// p = P(r) by Horner, R = e·2^k.
#define EXPCORE(X, K, R, T) \
	VMULPS     LOG2E, X, K; \
	VADDPS     MAGIC, K, K; \
	VSUBPS     MAGIC, K, K; \
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

// EXPSPECIAL applies Exp32's special cases below 88 to R = EXPCORE(X):
// 0 where X < −87.3, X where X is NaN (M scratch).
#define EXPSPECIAL(X, R, M) \
	VCMPPS    LT_OS, EXPLO, X, M; \
	VANDNPS   R, M, R;            \
	VCMPPS    UNORD_Q, X, X, M;   \
	VBLENDVPS M, X, R, R

// EXPGUARD jumps to L if a lane of X is above 88, where Exp32 leaves the
// polynomial (M scratch, BX clobbered).
#define EXPGUARD(X, M, L) \
	VCMPPS    GT_OQ, EXPHI, X, M; \
	VMOVMSKPS M, BX;              \
	TESTL     BX, BX;             \
	JNZ       L

// TANH sets R = Tanh32(X) (A, Z, P, K, T, M scratch; X kept): the odd
// polynomial in P, 1 − 2/(e^{2a} + 1) with x's sign in R, then the blends
// for a < 0.625, a > 44 (±1) and NaN (x).
#define TANH(X, R, A, Z, P, K, T, M) \
	VANDPS    ABSMASK, X, A;        \
	VMULPS    X, X, Z;              \
	VMULPS    Q0, Z, P;             \
	VADDPS    Q1, P, P;             \
	VMULPS    Z, P, P;              \
	VADDPS    Q2, P, P;             \
	VMULPS    Z, P, P;              \
	VADDPS    Q3, P, P;             \
	VMULPS    Z, P, P;              \
	VADDPS    Q4, P, P;             \
	VMULPS    Z, P, P;              \
	VMULPS    X, P, P;              \
	VADDPS    X, P, P;              \
	VADDPS    A, A, Z;              \
	EXPCORE(Z, K, R, T);            \
	VADDPS    ONE, R, R;            \
	VMOVUPS   TWO, T;               \
	VDIVPS    R, T, R;              \
	VMOVUPS   ONE, T;               \
	VSUBPS    R, T, R;              \
	VANDPS    SIGNMASK, X, T;       \
	VXORPS    T, R, R;              \
	VCMPPS    LT_OS, TANHLO, A, M;  \
	VBLENDVPS M, P, R, R;           \
	VORPS     ONE, T, P;            \
	VCMPPS    GT_OQ, TANHHI, A, M;  \
	VBLENDVPS M, P, R, R;           \
	VCMPPS    UNORD_Q, X, X, M;     \
	VBLENDVPS M, X, R, R

// func expSubAVX2(dst, src *float32, n int, shift float32, acc *[8]float64) int
//
// dst[i] = Exp32(src[i] − shift); acc[j] += dst[8b+j] in float64.
TEXT ·expSubAVX2(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y15
	MOVQ         acc+32(FP), DX
	VMOVUPD      (DX), Y13
	VMOVUPD      32(DX), Y14
	XORQ         AX, AX

expsub_loop:
	CMPQ    AX, CX
	JGE     expsub_done
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y15, Y0, Y0
	EXPGUARD(Y0, Y1, expsub_done)
	EXPCORE(Y0, Y1, Y2, Y3)
	EXPSPECIAL(Y0, Y2, Y3)
	VMOVUPS      Y2, (DI)(AX*4)
	VCVTPS2PD    X2, Y3
	VEXTRACTF128 $1, Y2, X4
	VCVTPS2PD    X4, Y4
	VADDPD       Y3, Y13, Y13
	VADDPD       Y4, Y14, Y14
	ADDQ         $8, AX
	JMP          expsub_loop

expsub_done:
	VMOVUPD Y13, (DX)
	VMOVUPD Y14, 32(DX)
	VZEROUPPER
	MOVQ    AX, ret+40(FP)
	RET

// func maxAVX2(x *float32, n int, acc *[8]float32) int
//
// acc[j] = maxStep(acc[j], x[8b+j]); returns nonzero if an x is NaN.
TEXT ·maxAVX2(SB), NOSPLIT, $0-32
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    acc+16(FP), DX
	VMOVUPS (DX), Y0
	VXORPS  Y1, Y1, Y1
	XORQ    AX, AX

max_loop:
	CMPQ    AX, CX
	JGE     max_done
	VMOVUPS (SI)(AX*4), Y2
	VMAXPS  Y2, Y0, Y0
	VCMPPS  UNORD_Q, Y2, Y2, Y3
	VORPS   Y3, Y1, Y1
	ADDQ    $8, AX
	JMP     max_loop

max_done:
	VMOVUPS   Y0, (DX)
	VMOVMSKPS Y1, AX
	VZEROUPPER
	MOVQ      AX, ret+24(FP)
	RET

// func tanhAVX2(dst, src *float32, n int)
//
// dst[i] = Tanh32(src[i]).
TEXT ·tanhAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

tanh_loop:
	CMPQ    AX, CX
	JGE     tanh_done
	VMOVUPS (SI)(AX*4), Y0
	TANH(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     tanh_loop

tanh_done:
	VZEROUPPER
	RET

// func softcapAVX2(th, z, x *float32, n int, c float32, acc *[8]float32) int
//
// th[i] = Tanh32(x[i]/c); z[i] = c·th[i]; acc as maxAVX2 over z.
TEXT ·softcapAVX2(SB), NOSPLIT, $0-56
	MOVQ         th+0(FP), DI
	MOVQ         z+8(FP), R8
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Y15
	MOVQ         acc+40(FP), DX
	VMOVUPS      (DX), Y14
	VXORPS       Y13, Y13, Y13
	XORQ         AX, AX

softcap_loop:
	CMPQ    AX, CX
	JGE     softcap_done
	VMOVUPS (SI)(AX*4), Y0
	VDIVPS  Y15, Y0, Y0
	TANH(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VMOVUPS Y1, (DI)(AX*4)
	VMULPS  Y15, Y1, Y1
	VMOVUPS Y1, (R8)(AX*4)
	VMAXPS  Y1, Y14, Y14
	VCMPPS  UNORD_Q, Y1, Y1, Y2
	VORPS   Y2, Y13, Y13
	ADDQ    $8, AX
	JMP     softcap_loop

softcap_done:
	VMOVUPS   Y14, (DX)
	VMOVMSKPS Y13, AX
	VZEROUPPER
	MOVQ      AX, ret+48(FP)
	RET

// func softmaxGradAVX2(s, dp *float32, n int, lse, delta float32) int
//
// s[i] = p = Exp32(s[i] − lse); dp[i] = p·(dp[i] − delta).
TEXT ·softmaxGradAVX2(SB), NOSPLIT, $0-40
	MOVQ         s+0(FP), DI
	MOVQ         dp+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS lse+24(FP), Y15
	VBROADCASTSS delta+28(FP), Y14
	XORQ         AX, AX

softmaxgrad_loop:
	CMPQ    AX, CX
	JGE     softmaxgrad_done
	VMOVUPS (DI)(AX*4), Y0
	VSUBPS  Y15, Y0, Y0
	EXPGUARD(Y0, Y1, softmaxgrad_done)
	EXPCORE(Y0, Y1, Y2, Y3)
	EXPSPECIAL(Y0, Y2, Y3)
	VMOVUPS Y2, (DI)(AX*4)
	VMOVUPS (SI)(AX*4), Y4
	VSUBPS  Y14, Y4, Y4
	VMULPS  Y4, Y2, Y2
	VMOVUPS Y2, (SI)(AX*4)
	ADDQ    $8, AX
	JMP     softmaxgrad_loop

softmaxgrad_done:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET

// func divAVX2(dst, src *float32, n int, d float32)
//
// dst[i] = src[i]/d.
TEXT ·divAVX2(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS d+24(FP), Y15
	XORQ         AX, AX

div_loop:
	CMPQ    AX, CX
	JGE     div_done
	VMOVUPS (SI)(AX*4), Y0
	VDIVPS  Y15, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     div_loop

div_done:
	VZEROUPPER
	RET

// func fromBF16AVX2(dst *float32, src *uint16, n int)
//
// dst[i] = bits src[i] << 16.
TEXT ·fromBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

frombf16_loop:
	CMPQ      AX, CX
	JGE       frombf16_done
	VPMOVZXWD (SI)(AX*2), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	JMP       frombf16_loop

frombf16_done:
	VZEROUPPER
	RET

// func toBF16AVX2(dst *uint16, src *float32, n int)
//
// dst[i] = bf16Bits(src[i]): round to nearest even on the integer bits,
// NaN kept quiet with its sign.
TEXT ·toBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

tobf16_loop:
	CMPQ         AX, CX
	JGE          tobf16_done
	VMOVDQU      (SI)(AX*4), Y0
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
	JMP          tobf16_loop

tobf16_done:
	VZEROUPPER
	RET

//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 versions of expSubAVX2 and softmaxGradAVX2: the same float32
// operations in the same order (EXPCORE of vmath_amd64.s on 16 lanes, no
// FMA), so every lane returns the bits the AVX2 and Go kernels return,
// at half the instructions per element. Sums keep the AVX2 kernel's 8
// float64 lanes: element 16c+j and then 16c+8+j go to lane j, which is the
// order of two 8-lane blocks.

// Constants broadcast from the first lane of each ·vconst row (rows are
// 32 bytes; see vmath_amd64.go).
#define LOADCONSTS \
	VBROADCASTSS ·vconst+0(SB), Z16;   \
	VBROADCASTSS ·vconst+32(SB), Z17;  \
	VBROADCASTSS ·vconst+64(SB), Z18;  \
	VBROADCASTSS ·vconst+96(SB), Z19;  \
	VBROADCASTSS ·vconst+128(SB), Z20; \
	VBROADCASTSS ·vconst+160(SB), Z21; \
	VBROADCASTSS ·vconst+192(SB), Z22; \
	VBROADCASTSS ·vconst+224(SB), Z23; \
	VBROADCASTSS ·vconst+256(SB), Z24; \
	VBROADCASTSS ·vconst+288(SB), Z25; \
	VBROADCASTSS ·vconst+320(SB), Z26; \
	VPBROADCASTD ·vconst+352(SB), Z27; \
	VBROADCASTSS ·vconst+384(SB), Z28; \
	VBROADCASTSS ·vconst+416(SB), Z29

// EXPCORE16 sets R = Exp32(X) for X in [−87.3, 88] (K, T scratch; X kept),
// EXPCORE's sequence: Z16 log₂e, Z17 magic, Z18 C1, Z19 C2, Z20..Z25
// P0..P5, Z26 one, Z27 the exponent bias.
#define EXPCORE16(X, K, R, T) \
	VMULPS     Z16, X, K; \
	VADDPS     Z17, K, K; \
	VSUBPS     Z17, K, K; \
	VMULPS     Z18, K, T; \
	VSUBPS     T, X, R;   \
	VMULPS     Z19, K, T; \
	VSUBPS     T, R, R;   \
	VMULPS     Z20, R, T; \
	VADDPS     Z21, T, T; \
	VMULPS     R, T, T;   \
	VADDPS     Z22, T, T; \
	VMULPS     R, T, T;   \
	VADDPS     Z23, T, T; \
	VMULPS     R, T, T;   \
	VADDPS     Z24, T, T; \
	VMULPS     R, T, T;   \
	VADDPS     Z25, T, T; \
	VMULPS     R, T, T;   \
	VMULPS     R, T, T;   \
	VADDPS     R, T, T;   \
	VADDPS     Z26, T, R; \
	VCVTTPS2DQ K, K;      \
	VPADDD     Z27, K, K; \
	VPSLLD     $23, K, K; \
	VMULPS     K, R, R

// EXPSPECIAL16: 0 where X < −87.3 (Z28), X where X is NaN.
#define EXPSPECIAL16(X, R) \
	VCMPPS $0x01, Z28, X, K2; \
	VPXORD R, R, K2, R;       \
	VCMPPS $0x03, X, X, K3;   \
	VMOVAPS X, K3, R

// EXPGUARD16 jumps to L if a lane of X is above 88 (Z29).
#define EXPGUARD16(X, L) \
	VCMPPS   $0x1e, Z29, X, K1; \
	KORTESTW K1, K1;            \
	JNE      L

// func expSubAVX512(dst, src *float32, n int, shift float32, acc *[8]float64) int
//
// n is a multiple of 16; returns how many elements it did (stopping before
// a block of 16 with an argument above 88).
TEXT ·expSubAVX512(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS shift+24(FP), Z15
	MOVQ         acc+32(FP), DX
	VMOVUPD      (DX), Z13
	LOADCONSTS
	XORQ         AX, AX

expsub512_loop:
	CMPQ    AX, CX
	JGE     expsub512_done
	VMOVUPS (SI)(AX*4), Z0
	VSUBPS  Z15, Z0, Z0
	EXPGUARD16(Z0, expsub512_done)
	EXPCORE16(Z0, Z1, Z2, Z3)
	EXPSPECIAL16(Z0, Z2)
	VMOVUPS       Z2, (DI)(AX*4)
	VCVTPS2PD     Y2, Z3
	VEXTRACTF32X8 $1, Z2, Y4
	VCVTPS2PD     Y4, Z4
	VADDPD        Z3, Z13, Z13
	VADDPD        Z4, Z13, Z13
	ADDQ          $16, AX
	JMP           expsub512_loop

expsub512_done:
	VMOVUPD Z13, (DX)
	VZEROUPPER
	MOVQ    AX, ret+40(FP)
	RET

// func softmaxGradAVX512(s, dp *float32, n int, lse, delta float32) int
//
// s[i] ← p = Exp32(s[i] − lse); dp[i] ← p·(dp[i] − delta). n is a
// multiple of 16; returns how many elements it did.
TEXT ·softmaxGradAVX512(SB), NOSPLIT, $0-40
	MOVQ         s+0(FP), DI
	MOVQ         dp+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS lse+24(FP), Z15
	VBROADCASTSS delta+28(FP), Z14
	LOADCONSTS
	XORQ         AX, AX

softmaxgrad512_loop:
	CMPQ    AX, CX
	JGE     softmaxgrad512_done
	VMOVUPS (DI)(AX*4), Z0
	VSUBPS  Z15, Z0, Z0
	EXPGUARD16(Z0, softmaxgrad512_done)
	EXPCORE16(Z0, Z1, Z2, Z3)
	EXPSPECIAL16(Z0, Z2)
	VMOVUPS (SI)(AX*4), Z4
	VMOVUPS Z2, (DI)(AX*4)
	VSUBPS  Z14, Z4, Z4
	VMULPS  Z4, Z2, Z2
	VMOVUPS Z2, (SI)(AX*4)
	ADDQ    $16, AX
	JMP     softmaxgrad512_loop

softmaxgrad512_done:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET

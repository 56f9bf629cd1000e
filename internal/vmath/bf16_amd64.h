// Macros of the bfloat16 AVX-512 kernels (bf16_avx512_amd64.s, rows16_amd64.s,
// qknorm64_amd64.s, ce_amd64.s): ToBF16's integer rounding and its
// constants, VCVTNEPS2BF16 (which the Go assembler does not know) and the
// float64 dot of a vector.

// BF16_CONSTS broadcasts the integer rounding's constants: 1, 0x7fff,
// 0x7fffffff, 0x7f800000 (+Inf) and 0x40 (the quiet bit of a bfloat16
// NaN), from vconst (rows cLSB, cHalfBF16, cAbs, cInfBits, cQuietBF).
#define BF16_CONSTS(ONE, HALF, ABS, INF, QUIET) \
	VPBROADCASTD ·vconst+768(SB), ONE;   \
	VPBROADCASTD ·vconst+800(SB), HALF;  \
	VPBROADCASTD ·vconst+448(SB), ABS;   \
	VPBROADCASTD ·vconst+832(SB), INF;   \
	VPBROADCASTD ·vconst+864(SB), QUIET

// ROUND_BF16 rounds the 16 float32 of S to bfloat16 as bf16Bits does,
// leaving the patterns in the dwords of T2: add 0x7fff plus the bit above
// the cut and shift down; a NaN keeps its top half with the quiet bit set.
// T0, T1 are temporaries, K1 is clobbered, S is kept.
#define ROUND_BF16(S, T0, T1, T2, ONE, HALF, ABS, INF, QUIET) \
	VPSRLD  $16, S, T1;           \
	VPANDD  ONE, T1, T2;          \
	VPADDD  T2, S, T2;            \
	VPADDD  HALF, T2, T2;         \
	VPSRLD  $16, T2, T2;          \
	VPANDD  ABS, S, T0;           \
	VPCMPUD $6, INF, T0, K1;      \
	VPORD   QUIET, T1, K1, T2

// RINT_BF16 is ROUND_BF16 with the 16 patterns stored at MEM.
#define RINT_BF16(S, MEM, T0, T1, T2, ONE, HALF, ABS, INF, QUIET) \
	ROUND_BF16(S, T0, T1, T2, ONE, HALF, ABS, INF, QUIET); \
	VPMOVDW T2, MEM

// STORE_BF16_Z3 stores the 16 float32 of Z3 at MEM rounded to bfloat16 by
// VCVTNEPS2BF16 Z3, Y3 (EVEX.512.F3.0F38.W0 72 /r, as bytes), which
// rounds to nearest even and quiets a NaN as bf16Bits does but flushes a
// subnormal to zero: when Z3 holds one it jumps to INT instead, where the
// kernel rounds by RINT_BF16 and comes back. K1 is clobbered.
#define STORE_BF16_Z3(MEM, INT) \
	VFPCLASSPSZ $0x20, Z3, K1; \
	KORTESTW    K1, K1;        \
	JNZ         INT;           \
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xdb; \
	VMOVDQU     Y3, MEM

// DOT16_F64 adds float64(A)·float64(B) over 16 float32 lanes to the 8
// float64 lanes of ACC, elements 0-7 and then 8-15 (Dot64's lane order;
// each product is exact, so the fused multiply-add rounds once, as the
// separate add would). YA, YB are A's and B's low halves; TA, TB (YTA,
// YTB) temporaries.
#define DOT16_F64(A, YA, B, YB, ACC, TA, YTA, TB, YTB) \
	VCVTPS2PD     YA, TA;        \
	VCVTPS2PD     YB, TB;        \
	VFMADD231PD   TB, TA, ACC;   \
	VEXTRACTF32X8 $1, A, YTA;    \
	VEXTRACTF32X8 $1, B, YTB;    \
	VCVTPS2PD     YTA, TA;       \
	VCVTPS2PD     YTB, TB;       \
	VFMADD231PD   TB, TA, ACC

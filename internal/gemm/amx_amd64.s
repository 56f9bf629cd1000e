#include "textflag.h"

// Go's assembler has no AMX mnemonics, so the tile instructions are spelled
// out in bytes (VEX.128 0F38 encodings). Each macro is one instruction on
// fixed registers; the comment after it is the instruction in Intel syntax,
// which TestAMXEncodings assembles with the system's assembler and compares
// byte for byte.
#define LDTILECFG_DI BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x07 // ldtilecfg [rdi]
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // tilerelease
#define TILEZERO_0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // tilezero tmm0
#define TILEZERO_1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // tilezero tmm1
#define TILEZERO_2 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // tilezero tmm2
#define TILEZERO_3 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // tilezero tmm3
#define TILEZERO_4 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xe0 // tilezero tmm4
#define CVT_Y2_Z0 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // vcvtneps2bf16 ymm2, zmm0
#define CVT_Y5_Z4 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xec // vcvtneps2bf16 ymm5, zmm4
#define CVT_Y7_Z6 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xfe // vcvtneps2bf16 ymm7, zmm6

// SPLIT3_Z0 splits the 16 float32 of Z0 into three bfloat16 terms,
// Y2 = h = bf16(x), Y5 = m = bf16(x − h), Y7 = l = bf16(x − h − m) (each
// difference exact in float32; VCVTNEPS2BF16 rounds to nearest even,
// quiets a NaN and reads a subnormal as zero). Clobbers Z3, Z4, Z6.
#define SPLIT3_Z0 \
	CVT_Y2_Z0; \
	VPMOVZXWD Y2, Z3; \
	VPSLLD    $16, Z3, Z3; \
	VSUBPS    Z3, Z0, Z4; \
	CVT_Y5_Z4; \
	VPMOVZXWD Y5, Z3; \
	VPSLLD    $16, Z3, Z3; \
	VSUBPS    Z3, Z4, Z6; \
	CVT_Y7_Z6
#define LOAD_C0 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x10 // tileloadd tmm0, [r8+r10*1]
#define LOAD_C1 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x4c; BYTE $0x10; BYTE $0x40 // tileloadd tmm1, [r8+r10*1+64]
#define LOAD_C2 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x11 // tileloadd tmm2, [r9+r10*1]
#define LOAD_C3 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x5c; BYTE $0x11; BYTE $0x40 // tileloadd tmm3, [r9+r10*1+64]
#define LOAD_A0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x08 // tileloadd tmm4, [rax+rcx*1]
#define LOAD_A1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x0b // tileloadd tmm5, [rbx+rcx*1]
#define LOADT1_A0 BYTE $0xc4; BYTE $0xe2; BYTE $0x79; BYTE $0x4b; BYTE $0x24; BYTE $0x08 // tileloaddt1 tmm4, [rax+rcx*1]
#define LOADT1_A1 BYTE $0xc4; BYTE $0xe2; BYTE $0x79; BYTE $0x4b; BYTE $0x2c; BYTE $0x0b // tileloaddt1 tmm5, [rbx+rcx*1]
#define LOAD_B0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x32 // tileloadd tmm6, [rdx+rsi*1]
#define LOAD_B1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x7c; BYTE $0x32; BYTE $0x40 // tileloadd tmm7, [rdx+rsi*1+64]
#define STORE_C0 BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x10 // tilestored [r8+r10*1], tmm0
#define STORE_C1 BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x10; BYTE $0x40 // tilestored [r8+r10*1+64], tmm1
#define STORE_C2 BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x11 // tilestored [r9+r10*1], tmm2
#define STORE_C3 BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x5c; BYTE $0x11; BYTE $0x40 // tilestored [r9+r10*1+64], tmm3
#define DP_00 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4 // tdpbf16ps tmm0, tmm4, tmm6
#define DP_01 BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc // tdpbf16ps tmm1, tmm4, tmm7
#define DP_10 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5 // tdpbf16ps tmm2, tmm5, tmm6
#define DP_11 BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd // tdpbf16ps tmm3, tmm5, tmm7

// Offsets of the fields of amxArgs (amx_amd64.go; TestAMXArgsLayout).
#define A_A 64
#define A_AROW 72
#define A_APANEL 80
#define A_B 88
#define A_BPANEL 96
#define A_KCHUNKS 104
#define A_MT 112
#define A_NT 120
#define A_LD 128
#define A_LDSTRIDE 136
#define A_LDMODE 144
#define A_ST 152
#define A_STSTRIDE 160
#define A_STMODE 168
#define A_SCRATCH 176
#define A_ALPHA 184
#define A_KREP 192
#define A_ASTREAM 200

// K_PRODUCTS multiplies the loaded A and B tiles into the four C tiles
// and moves A and B on by one chunk (16 pair rows of B: 32 words each).
#define K_PRODUCTS \
	DP_00; \
	DP_01; \
	DP_10; \
	DP_11; \
	ADDQ $64, AX; \
	ADDQ $64, BX; \
	ADDQ $2048, DX

// func amxMacro(p *amxArgs)
//
// For jn < nt (32-column micro-panels of B) and, inside, im < mt (32-row
// panels of A): the 32×32 block of C in four 16×16 tiles tmm0..3, loaded
// from ld (or zero), plus Σ over kChunks chunks of 16 K pairs of
// A tiles tmm4, tmm5 (rows 0-15, 16-31) times B tiles tmm6, tmm7 (columns
// 0-15, 16-31), stored to st. ld and st address the block (0, 0) in float32
// (mode 1) or bfloat16 (mode 2); a bfloat16 block is widened into scratch
// before it is loaded, and a block stored as bfloat16 goes through scratch
// and is rounded to nearest even (a NaN keeps its top half with the quiet
// bit set), as vmath.ToBF16 rounds. Store mode 3 is float32 times alpha
// (each sum multiplied once, rounded to float32).
TEXT ·amxMacro(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), DI
	LDTILECFG_DI
	MOVL         $1, R11
	VPBROADCASTD R11, Z10
	MOVL         $0x7fff, R11
	VPBROADCASTD R11, Z11
	MOVL         $0x7fffffff, R11
	VPBROADCASTD R11, Z12
	MOVL         $0x7f800000, R11
	VPBROADCASTD R11, Z13
	MOVL         $0x40, R11
	VPBROADCASTD R11, Z14
	XORQ         R12, R12 // jn

jn_loop:
	XORQ R13, R13 // im

im_loop:
	// A rows 0 and 16 of panel im, B micro-panel jn.
	MOVQ   A_APANEL(DI), AX
	IMULQ  R13, AX
	ADDQ   A_A(DI), AX
	MOVQ   A_AROW(DI), CX
	IMUL3Q $16, CX, BX
	ADDQ   AX, BX
	MOVQ   A_BPANEL(DI), DX
	IMULQ  R12, DX
	ADDQ   A_B(DI), DX
	MOVQ   $128, SI

	// The C block: zero, or loaded from ld.
	MOVQ  A_LDMODE(DI), R8
	TESTQ R8, R8
	JNZ   c_load
	TILEZERO_0
	TILEZERO_1
	TILEZERO_2
	TILEZERO_3
	JMP   k_start

c_load:
	MOVQ   A_LDSTRIDE(DI), R10
	IMUL3Q $32, R10, R9
	IMULQ  R13, R9
	ADDQ   A_LD(DI), R9   // row 0 of the block
	CMPQ   R8, $2
	JGE    c_load16
	MOVQ   R12, R8
	SHLQ   $7, R8         // 32 float32 per micro-panel
	ADDQ   R9, R8
	JMP    c_load_tiles

c_load16:
	MOVQ R12, R8
	SHLQ $6, R8     // 32 16-bit values per micro-panel
	ADDQ R9, R8
	MOVQ A_SCRATCH(DI), R9
	MOVQ $32, R11
	CMPQ A_LDMODE(DI), $3
	JEQ  c_widen_f16

c_widen:
	VPMOVZXWD (R8), Z0
	VPMOVZXWD 32(R8), Z1
	VPSLLD    $16, Z0, Z0
	VPSLLD    $16, Z1, Z1
	VMOVDQU32 Z0, (R9)
	VMOVDQU32 Z1, 64(R9)
	ADDQ      R10, R8
	ADDQ      $128, R9
	DECQ      R11
	JNZ       c_widen
	JMP       c_widened

c_widen_f16:
	VCVTPH2PS (R8), Z0
	VCVTPH2PS 32(R8), Z1
	VMOVDQU32 Z0, (R9)
	VMOVDQU32 Z1, 64(R9)
	ADDQ      R10, R8
	ADDQ      $128, R9
	DECQ      R11
	JNZ       c_widen_f16

c_widened:
	MOVQ A_SCRATCH(DI), R8
	MOVQ $128, R10

c_load_tiles:
	IMUL3Q $16, R10, R9
	ADDQ   R8, R9
	LOAD_C0
	LOAD_C1
	LOAD_C2
	LOAD_C3

k_start:
	MOVQ A_KCHUNKS(DI), R11
	MOVQ A_KREP(DI), R8     // chunks before B starts over, 0: never
	MOVQ R8, R9
	MOVQ DX, R10
	CMPQ A_ASTREAM(DI), $0
	JNE  k_loop_t1

k_loop:
	LOAD_A0
	LOAD_B0
	LOAD_B1
	LOAD_A1
	K_PRODUCTS
	TESTQ R8, R8
	JZ    k_next
	DECQ  R9
	JNZ   k_next
	MOVQ  R10, DX
	MOVQ  R8, R9

k_next:
	DECQ R11
	JNZ  k_loop
	JMP  k_done

	// The same with A loaded as a stream that will not be reused soon
	// (TILELOADDT1), so that it does not push B's micro-panel out of L1.
k_loop_t1:
	LOADT1_A0
	LOAD_B0
	LOAD_B1
	LOADT1_A1
	K_PRODUCTS
	TESTQ R8, R8
	JZ    k_next_t1
	DECQ  R9
	JNZ   k_next_t1
	MOVQ  R10, DX
	MOVQ  R8, R9

k_next_t1:
	DECQ R11
	JNZ  k_loop_t1

k_done:

	// Store the block to st.
	MOVQ   A_STSTRIDE(DI), R10
	IMUL3Q $32, R10, R9
	IMULQ  R13, R9
	ADDQ   A_ST(DI), R9
	CMPQ   A_STMODE(DI), $2
	JEQ    c_store16
	CMPQ   A_STMODE(DI), $3
	JEQ    c_store_scaled
	CMPQ   A_STMODE(DI), $4
	JEQ    c_store16
	MOVQ   R12, R8
	SHLQ   $7, R8
	ADDQ   R9, R8
	IMUL3Q $16, R10, R9
	ADDQ   R8, R9
	STORE_C0
	STORE_C1
	STORE_C2
	STORE_C3
	JMP    next

c_store16:
	MOVQ R12, AX
	SHLQ $6, AX
	ADDQ R9, AX             // bfloat16 row 0 of the block
	MOVQ R10, BX            // its row stride
	MOVQ A_SCRATCH(DI), R8
	MOVQ $128, R10
	LEAQ 2048(R8), R9       // row 16
	STORE_C0
	STORE_C1
	STORE_C2
	STORE_C3
	MOVQ $32, R11
	CMPQ A_STMODE(DI), $4
	JEQ  c_round_f16

c_round:
	VMOVDQU32 (R8), Z0
	VPSRLD    $16, Z0, Z1
	VPANDD    Z10, Z1, Z2
	VPADDD    Z2, Z0, Z2
	VPADDD    Z11, Z2, Z2
	VPSRLD    $16, Z2, Z2
	VPANDD    Z12, Z0, Z3
	VPCMPUD   $6, Z13, Z3, K1 // |u| > +Inf bits: NaN
	VPORD     Z14, Z1, K1, Z2
	VPMOVDW   Z2, (AX)
	VMOVDQU32 64(R8), Z4
	VPSRLD    $16, Z4, Z5
	VPANDD    Z10, Z5, Z6
	VPADDD    Z6, Z4, Z6
	VPADDD    Z11, Z6, Z6
	VPSRLD    $16, Z6, Z6
	VPANDD    Z12, Z4, Z7
	VPCMPUD   $6, Z13, Z7, K2
	VPORD     Z14, Z5, K2, Z6
	VPMOVDW   Z6, 32(AX)
	ADDQ      $128, R8
	ADDQ      BX, AX
	DECQ      R11
	JNZ       c_round
	JMP       next

	// binary16, nearest even (as vmath.ToF16 rounds: VCVTPS2PH).
c_round_f16:
	VMOVDQU32 (R8), Z0
	VCVTPS2PH $0, Z0, (AX)
	VMOVDQU32 64(R8), Z4
	VCVTPS2PH $0, Z4, 32(AX)
	ADDQ      $128, R8
	ADDQ      BX, AX
	DECQ      R11
	JNZ       c_round_f16
	JMP       next

c_store_scaled:
	MOVQ         R12, AX
	SHLQ         $7, AX
	ADDQ         R9, AX       // float32 row 0 of the block
	MOVQ         R10, BX      // its row stride
	MOVQ         A_SCRATCH(DI), R8
	MOVQ         $128, R10
	LEAQ         2048(R8), R9
	STORE_C0
	STORE_C1
	STORE_C2
	STORE_C3
	VBROADCASTSS A_ALPHA(DI), Z15
	MOVQ         $32, R11

c_scale:
	VMULPS  (R8), Z15, Z0
	VMULPS  64(R8), Z15, Z1
	VMOVUPS Z0, (AX)
	VMOVUPS Z1, 64(AX)
	ADDQ    $128, R8
	ADDQ    BX, AX
	DECQ    R11
	JNZ     c_scale

next:
	INCQ R13
	CMPQ R13, A_MT(DI)
	JLT  im_loop
	INCQ R12
	CMPQ R12, A_NT(DI)
	JLT  jn_loop
	TILERELEASE
	VZEROUPPER
	RET

// func amxPeak(p *amxArgs, n int)
//
// n steps of the kernel's four TDPBF16PS on tiles loaded once from p.a
// (A, rows p.aRow bytes apart) and p.b (B): the unit's rate on the
// kernel's tile shapes, for the roofline. The sums go nowhere.
TEXT ·amxPeak(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), DI
	MOVQ n+8(FP), R11
	LDTILECFG_DI
	MOVQ A_A(DI), AX
	MOVQ A_AROW(DI), CX
	MOVQ AX, BX
	MOVQ A_B(DI), DX
	MOVQ $128, SI
	TILEZERO_0
	TILEZERO_1
	TILEZERO_2
	TILEZERO_3
	TILEZERO_4
	LOAD_A1
	LOAD_B0
	LOAD_B1

peak_loop:
	DP_00
	DP_01
	DP_10
	DP_11
	DECQ R11
	JNZ  peak_loop
	TILERELEASE
	RET

// func splitPairs3AVX512(d1, d2, d3 *uint32, ldd int, src *float32, lds, rows, nq int)
//
// For r < rows and 16 pairs at a time up to nq (a positive multiple of
// 16): x = src[r*lds+i]; h = bf16(x), m = bf16(x − h), l = bf16(x − h − m)
// by VCVTNEPS2BF16 (to nearest even, a NaN quieted, a subnormal read as
// zero), each difference exact in float32; d1, d2, d3 get h, m, l as pair
// words, the even element in the high half (row r at r*ldd).
TEXT ·splitPairs3AVX512(SB), NOSPLIT, $0-64
	MOVQ d1+0(FP), AX
	MOVQ d2+8(FP), BX
	MOVQ d3+16(FP), CX
	MOVQ ldd+24(FP), R8
	SHLQ $2, R8
	MOVQ src+32(FP), SI
	MOVQ lds+40(FP), R9
	SHLQ $2, R9
	MOVQ rows+48(FP), R10

split_row:
	XORQ R12, R12 // byte offset into the source row
	XORQ R13, R13 // byte offset into the destination rows
	MOVQ nq+56(FP), R11

split_pairs:
	VMOVUPS   (SI)(R12*1), Z0
	SPLIT3_Z0
	VPROLD    $16, Y2, Y2
	VPROLD    $16, Y5, Y5
	VPROLD    $16, Y7, Y7
	VMOVDQU   Y2, (AX)(R13*1)
	VMOVDQU   Y5, (BX)(R13*1)
	VMOVDQU   Y7, (CX)(R13*1)
	ADDQ      $64, R12
	ADDQ      $32, R13
	SUBQ      $8, R11
	JNZ       split_pairs
	ADDQ      R9, SI
	ADDQ      R8, AX
	ADDQ      R8, BX
	ADDQ      R8, CX
	DECQ      R10
	JNZ       split_row
	VZEROUPPER
	RET

// PAIRS16 stores at dst the 16 pair words of the bfloat16 of hi (high
// halves) and lo (low halves). Clobbers Z14, Z15.
#define PAIRS16(hi, lo, dst) \
	VPMOVZXWD hi, Z14; \
	VPSLLD    $16, Z14, Z14; \
	VPMOVZXWD lo, Z15; \
	VPORD     Z15, Z14, Z14; \
	VMOVDQU32 Z14, dst

// func splitPanels3AVX512(d *uint32, term, ldp int, src *float32, lds, nq, np int)
//
// For pair rows p < nq and columns j < 32·np: x = src[2p*lds+j] and
// y = src[(2p+1)*lds+j] split as splitPairs3AVX512 splits (h, m, l by
// VCVTNEPS2BF16, each difference exact in float32); the pair of x's and
// y's term, x's in the high half, goes to the word p*32 + j%32 of panel
// j/32 (ldp bytes apart) of term h, m or l (term bytes apart).
TEXT ·splitPanels3AVX512(SB), NOSPLIT, $0-56
	MOVQ d+0(FP), AX
	MOVQ term+8(FP), BX
	MOVQ ldp+16(FP), CX
	MOVQ src+24(FP), SI
	MOVQ lds+32(FP), R9
	SHLQ $2, R9
	LEAQ (SI)(R9*1), DI // row 2p+1
	SHLQ $1, R9         // two rows a pair row
	MOVQ nq+40(FP), R10

panel_row:
	MOVQ AX, R8   // panel 0 of this pair row, term h
	XORQ R12, R12 // byte offset of 16 columns in the source rows
	MOVQ np+48(FP), R11
	SHLQ $1, R11  // halves of panels

panel_half:
	VMOVUPS   (DI)(R12*1), Z0 // row 2p+1 first: its terms go to the low halves
	SPLIT3_Z0
	VMOVDQU   Y2, Y8
	VMOVDQU   Y5, Y9
	VMOVDQU   Y7, Y10
	VMOVUPS   (SI)(R12*1), Z0
	SPLIT3_Z0
	PAIRS16(Y2, Y8, (R8))
	PAIRS16(Y5, Y9, (R8)(BX*1))
	PAIRS16(Y7, Y10, (R8)(BX*2))
	ADDQ      $64, R12
	// The next 16 columns: the second half of this panel's row, or the
	// first half of the next panel's.
	TESTQ     $64, R12
	JNZ       panel_second
	SUBQ      $64, R8
	ADDQ      CX, R8
	JMP       panel_next

panel_second:
	ADDQ $64, R8

panel_next:
	DECQ R11
	JNZ  panel_half
	ADDQ R9, SI
	ADDQ R9, DI
	ADDQ $128, AX
	DECQ R10
	JNZ  panel_row
	VZEROUPPER
	RET

// F16SPLIT_Y1 splits the 16 binary16 of Y1 exactly into two bfloat16
// terms, Y2 = h = bf16(x) and Y5 = l = x − h (exact: x has 11 significant
// bits, h the first 8 rounded, x − h at most 3; a non-finite x has l = 0,
// so that h carries it), leaving x widened in Z0. Clobbers Z3, Z4, K1, K2.
#define F16SPLIT_Y1 \
	VCVTPH2PS Y1, Z0; \
	CVT_Y2_Z0; \
	VPMOVZXWD Y2, Z3; \
	VPSLLD    $16, Z3, Z3; \
	VSUBPS    Z3, Z0, Z4; \
	CVT_Y5_Z4; \
	VPANDD    Z13, Z0, Z3; \
	VPCMPUD   $4, Z13, Z3, K1; \
	VMOVDQU16.Z Y5, K1, Y5

// func f16SplitAVX512(dst *uint32, src *uint16, n, mode int)
//
// For i < n (a positive multiple of 16), x = src[i] split as F16SPLIT_Y1
// splits it; by mode:
//	0: dst[2i] = dst[2i+1] = h<<16 | l
//	1: dst[i] = h<<16 | l
//	2: dst[i] = h<<16 | h, dst[n+i] = l<<16 | l
//	3: dst[2i] = h<<16 | h, dst[2i+1] = l<<16 | l
TEXT ·f16SplitAVX512(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         mode+24(FP), DX
	MOVL         $0x7f800000, R11
	VPBROADCASTD R11, Z13
	LEAQ         (DI)(CX*4), R8 // mode 2: the l terms

f16_loop:
	VMOVDQU   (SI), Y1
	F16SPLIT_Y1
	VPMOVZXWD Y2, Z6
	VPSLLD    $16, Z6, Z7    // h<<16
	VPMOVZXWD Y5, Z8         // l
	CMPQ      DX, $1
	JLE       f16_pairs
	VPORD     Z6, Z7, Z9     // h<<16 | h
	VPSLLD    $16, Z8, Z10
	VPORD     Z8, Z10, Z10   // l<<16 | l
	CMPQ      DX, $2
	JEQ       f16_terms
	// mode 3: h h-word and l l-word alternating
	VPMOVZXDQ Y9, Z11
	VPMOVZXDQ Y10, Z12
	VPSLLQ    $32, Z12, Z12
	VPORQ     Z12, Z11, Z11
	VMOVDQU64 Z11, (DI)
	VEXTRACTI64X4 $1, Z9, Y9
	VEXTRACTI64X4 $1, Z10, Y10
	VPMOVZXDQ Y9, Z11
	VPMOVZXDQ Y10, Z12
	VPSLLQ    $32, Z12, Z12
	VPORQ     Z12, Z11, Z11
	VMOVDQU64 Z11, 64(DI)
	ADDQ      $128, DI
	JMP       f16_next

f16_terms:
	VMOVDQU32 Z9, (DI)
	VMOVDQU32 Z10, (R8)
	ADDQ      $64, DI
	ADDQ      $64, R8
	JMP       f16_next

f16_pairs:
	VPORD     Z8, Z7, Z9     // h<<16 | l
	TESTQ     DX, DX
	JNZ       f16_single
	VPMOVZXDQ Y9, Z11
	VPSLLQ    $32, Z11, Z12
	VPORQ     Z12, Z11, Z11
	VMOVDQU64 Z11, (DI)
	VEXTRACTI64X4 $1, Z9, Y9
	VPMOVZXDQ Y9, Z11
	VPSLLQ    $32, Z11, Z12
	VPORQ     Z12, Z11, Z11
	VMOVDQU64 Z11, 64(DI)
	ADDQ      $128, DI
	JMP       f16_next

f16_single:
	VMOVDQU32 Z9, (DI)
	ADDQ      $64, DI

f16_next:
	ADDQ $32, SI
	SUBQ $16, CX
	JNZ  f16_loop
	VZEROUPPER
	RET

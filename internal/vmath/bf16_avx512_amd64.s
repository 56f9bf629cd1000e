//go:build amd64 && !purego

#include "textflag.h"
#include "bf16_amd64.h"

// AVX-512 versions of fromBF16AVX2 and toBF16AVX2, 16 lanes a block, the
// same integer operations (so the same bits as bf16Bits): widening is a
// zero-extension shifted up 16 bits; rounding adds 0x7fff plus the bit
// above the cut and shifts down, and a NaN keeps its top half with the
// quiet bit set.

// func fromBF16AVX512(dst *float32, src *uint16, n int)
//
// n is a positive multiple of 16.
TEXT ·fromBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

frombf16_512:
	VPMOVZXWD (SI), Z0
	VPSLLD    $16, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JNZ       frombf16_512
	VZEROUPPER
	RET

// func toBF16AVX512(dst *uint16, src *float32, n int)
//
// n is a positive multiple of 16.
TEXT ·toBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	BF16_CONSTS(Z10, Z11, Z12, Z13, Z14)

tobf16_512:
	VMOVDQU32 (SI), Z0
	RINT_BF16(Z0, (DI), Z3, Z1, Z2, Z10, Z11, Z12, Z13, Z14)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JNZ       tobf16_512
	VZEROUPPER
	RET

// func toBF16CvtAVX512(dst *uint16, src *float32, n int)
//
// toBF16AVX512 with VCVTNEPS2BF16 (AVX512_BF16), which rounds to nearest
// even and quiets a NaN exactly as bf16Bits does, except that it flushes
// a subnormal input to zero. A block of 16 holding a subnormal is rounded
// by the integer operations instead. n is a positive multiple of 16.
TEXT ·toBF16CvtAVX512(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	BF16_CONSTS(Z10, Z11, Z12, Z13, Z14)

cvtbf16_512:
	VMOVDQU32 (SI), Z3
	STORE_BF16_Z3((DI), cvtbf16_int)

cvtbf16_next:
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $16, CX
	JNZ  cvtbf16_512
	VZEROUPPER
	RET

cvtbf16_int:
	RINT_BF16(Z3, (DI), Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14)
	JMP     cvtbf16_next

// func scaledAddBackBF16(acc *float64, dy, gr, yr *uint16, s *float32, stride, rows, n int)
//
// The backward pass of a per-channel scaled add over rows rows of bfloat16
// (stride elements apart), columns [0, n), n a positive multiple of 16,
// in one pass over g and y:
//
//	dy[r,c] = bf16(float32(s[c]·g[r,c]))
//	acc[c] += float64(g[r,c])·float64(y[r,c])   for r = 0, 1, … in turn
//
// the products exact in float64, rounded once by each add, as Mul,
// ToBF16 and Dot64Cols do. (A fused multiply-add of an exact product
// rounds as the separate add does, so these kernels use it.)
TEXT ·scaledAddBackBF16(SB), NOSPLIT, $0-64
	MOVQ         acc+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         gr+16(FP), DX
	MOVQ         yr+24(FP), R8
	MOVQ         s+32(FP), R9
	MOVQ         stride+40(FP), R10
	MOVQ         rows+48(FP), R11
	MOVQ         n+56(FP), CX
	SHLQ         $1, R10
	BF16_CONSTS(Z10, Z11, Z12, Z13, Z14)

sab_cols:
	VMOVUPD (DI), Z0
	VMOVUPD 64(DI), Z1
	VMOVUPS (R9), Z2
	XORQ    AX, AX
	MOVQ    R11, BX

sab_rows:
	VPMOVZXWD     (DX)(AX*1), Z3
	VPSLLD        $16, Z3, Z3
	VPMOVZXWD     (R8)(AX*1), Z4
	VPSLLD        $16, Z4, Z4
	VCVTPS2PD     Y3, Z5
	VCVTPS2PD     Y4, Z6
	VFMADD231PD   Z6, Z5, Z0
	VEXTRACTF32X8 $1, Z3, Y5
	VEXTRACTF32X8 $1, Z4, Y6
	VCVTPS2PD     Y5, Z5
	VCVTPS2PD     Y6, Z6
	VFMADD231PD   Z6, Z5, Z1
	VMULPS        Z3, Z2, Z3
	STORE_BF16_Z3((SI)(AX*1), sab_int)

sab_next:
	ADDQ R10, AX
	DECQ BX
	JNZ  sab_rows

	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	ADDQ    $128, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, R8
	ADDQ    $64, R9
	SUBQ    $16, CX
	JNZ     sab_cols
	VZEROUPPER
	RET

sab_int:
	RINT_BF16(Z3, (SI)(AX*1), Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14)
	JMP     sab_next

// ACC4_LOAD and ACC4_STORE move four rows' float64 lanes between acc (AX)
// and Z0-Z3.
#define ACC4_LOAD \
	VMOVUPD (AX), Z0;    \
	VMOVUPD 64(AX), Z1;  \
	VMOVUPD 128(AX), Z2; \
	VMOVUPD 192(AX), Z3

#define ACC4_STORE \
	VMOVUPD Z0, (AX);    \
	VMOVUPD Z1, 64(AX);  \
	VMOVUPD Z2, 128(AX); \
	VMOVUPD Z3, 192(AX)

// func sumSq64x4BF16(x *uint16, stride, n int, acc *[4][8]float64)
//
// sumSq64x4AVX2 over bfloat16 rows: acc[k] gets the 8 lanes of SumSq64 of
// row k (x + k·stride elements, n a positive multiple of 16), element
// 16b+j going to lane j and then element 16b+8+j, as in the float32 loop.
TEXT ·sumSq64x4BF16(SB), NOSPLIT, $0-32
	MOVQ    x+0(FP), SI
	MOVQ    stride+8(FP), R8
	MOVQ    n+16(FP), CX
	MOVQ    acc+24(FP), AX
	SHLQ    $1, R8
	LEAQ    (R8)(R8*2), R10
	ACC4_LOAD

#define SQ_ROW(MEM, ACC) \
	VPMOVZXWD     MEM, Z4;       \
	VPSLLD        $16, Z4, Z4;   \
	VCVTPS2PD     Y4, Z5;        \
	VEXTRACTF32X8 $1, Z4, Y6;    \
	VCVTPS2PD     Y6, Z6;        \
	VFMADD231PD   Z5, Z5, ACC;   \
	VFMADD231PD   Z6, Z6, ACC

ssbf_loop:
	SQ_ROW((SI), Z0)
	SQ_ROW((SI)(R8*1), Z1)
	SQ_ROW((SI)(R8*2), Z2)
	SQ_ROW((SI)(R10*1), Z3)
	ADDQ $32, SI
	SUBQ $16, CX
	JNZ  ssbf_loop

	ACC4_STORE
	VZEROUPPER
	RET

// func scaleRowsBF16(out, x *uint16, s *float32, stride, rows, n int)
//
// out[r,c] = bf16(float32(x[r,c]·s[r])) for rows rows stride elements
// apart, c < n (a positive multiple of 16): Scale then ToBF16.
TEXT ·scaleRowsBF16(SB), NOSPLIT, $0-48
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         s+16(FP), R9
	MOVQ         stride+24(FP), R8
	MOVQ         rows+32(FP), R11
	MOVQ         n+40(FP), R12
	SHLQ         $1, R8
	BF16_CONSTS(Z10, Z11, Z12, Z13, Z14)

srb_row:
	VBROADCASTSS (R9), Z2
	XORQ         AX, AX
	MOVQ         R12, CX

srb_col:
	VPMOVZXWD   (SI)(AX*1), Z3
	VPSLLD      $16, Z3, Z3
	VMULPS      Z2, Z3, Z3
	STORE_BF16_Z3((DI)(AX*1), srb_int)

srb_next:
	ADDQ $32, AX
	SUBQ $16, CX
	JNZ  srb_col
	ADDQ R8, SI
	ADDQ R8, DI
	ADDQ $4, R9
	DECQ R11
	JNZ  srb_row
	VZEROUPPER
	RET

srb_int:
	RINT_BF16(Z3, (DI)(AX*1), Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14)
	JMP     srb_next

// func dot64XhBF16(g, x *uint16, rs *float32, stride, n int, acc *[4][8]float64)
//
// For the four bfloat16 rows k of g and x (stride elements apart, n a
// positive multiple of 16), with xh = float32(x·rs[k]), adds to acc[k] the
// lanes of Dot64(g, xh): RMSNorm's backward mean, without widening g, x
// or xh to memory.
TEXT ·dot64XhBF16(SB), NOSPLIT, $0-48
	MOVQ    gr+0(FP), SI
	MOVQ    x+8(FP), DX
	MOVQ    rs+16(FP), R9
	MOVQ    stride+24(FP), R8
	MOVQ    n+32(FP), CX
	MOVQ    acc+40(FP), AX
	SHLQ    $1, R8
	LEAQ    (R8)(R8*2), R10
	ACC4_LOAD
	VBROADCASTSS (R9), Z12
	VBROADCASTSS 4(R9), Z13
	VBROADCASTSS 8(R9), Z14
	VBROADCASTSS 12(R9), Z15

#define XH_ROW(GMEM, XMEM, RS, ACC) \
	VPMOVZXWD     GMEM, Z4;          \
	VPSLLD        $16, Z4, Z4;       \
	VPMOVZXWD     XMEM, Z5;          \
	VPSLLD        $16, Z5, Z5;       \
	VMULPS        RS, Z5, Z5;        \
	DOT16_F64(Z4, Y4, Z5, Y5, ACC, Z6, Y6, Z7, Y7)

xh_loop:
	XH_ROW((SI), (DX), Z12, Z0)
	XH_ROW((SI)(R8*1), (DX)(R8*1), Z13, Z1)
	XH_ROW((SI)(R8*2), (DX)(R8*2), Z14, Z2)
	XH_ROW((SI)(R10*1), (DX)(R10*1), Z15, Z3)
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $16, CX
	JNZ  xh_loop

	ACC4_STORE
	VZEROUPPER
	RET

// func rmsGradRowsBF16(dx, gr, x, res *uint16, rs, m *float32, stride, rows, n int)
//
// RMSGrad over rows rows of bfloat16 (stride elements apart, columns
// [0, n), n a positive multiple of 16), xh = float32(x·rs[r]) formed
// again: dx = bf16(rs·(g − xh·m) [+ res]), res nil for none, each float32
// operation rounded on its own as in RMSGrad.
TEXT ·rmsGradRowsBF16(SB), NOSPLIT, $0-72
	MOVQ         dx+0(FP), DI
	MOVQ         gr+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         res+24(FP), BX
	MOVQ         rs+32(FP), R9
	MOVQ         m+40(FP), R13
	MOVQ         stride+48(FP), R8
	MOVQ         rows+56(FP), R11
	MOVQ         n+64(FP), R12
	SHLQ         $1, R8
	BF16_CONSTS(Z10, Z11, Z12, Z13, Z14)

rg_row:
	VBROADCASTSS (R9), Z1  // rs
	VBROADCASTSS (R13), Z2 // m
	XORQ         AX, AX
	MOVQ         R12, CX

rg_col:
	VPMOVZXWD (SI)(AX*1), Z3
	VPSLLD    $16, Z3, Z3    // g
	VPMOVZXWD (DX)(AX*1), Z4
	VPSLLD    $16, Z4, Z4
	VMULPS    Z1, Z4, Z4     // xh
	VMULPS    Z2, Z4, Z4     // xh·m
	VSUBPS    Z4, Z3, Z3     // g − xh·m
	VMULPS    Z3, Z1, Z3     // rs·(…)
	TESTQ     BX, BX
	JZ        rg_round
	VPMOVZXWD (BX)(AX*1), Z4
	VPSLLD    $16, Z4, Z4
	VADDPS    Z4, Z3, Z3     // + res

rg_round:
	STORE_BF16_Z3((DI)(AX*1), rg_int)

rg_next:
	ADDQ $32, AX
	SUBQ $16, CX
	JNZ  rg_col
	ADDQ R8, SI
	ADDQ R8, DX
	ADDQ R8, DI
	TESTQ BX, BX
	JZ   rg_nores
	ADDQ R8, BX

rg_nores:
	ADDQ $4, R9
	ADDQ $4, R13
	DECQ R11
	JNZ  rg_row
	VZEROUPPER
	RET

rg_int:
	RINT_BF16(Z3, (DI)(AX*1), Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14)
	JMP     rg_next

# Generates internal/vmath/rows16_amd64.s, the AVX-512 row kernels of
# internal/vmath/rows16.go over 16-bit rows (RMSNorm forward and backward,
# the scaled add's backward pass), once for each 16-bit format:
#
#   python3 scripts/gen_vmath_rows16.py internal/vmath/rows16_amd64.s
#
# The kernels are written once below, in the formats' common terms:
#
#   LOAD16 MEM, Zn          Zn = 16 elements at MEM widened to float32
#   CONSTS16                the constants the rounding needs (Z10-Z14)
#   STORE16 MEM, INT        Z3 rounded to 16 bits and stored at MEM; INT is
#                           where a vector the fast rounding cannot take goes
#   FIXUP16 INT, MEM, BACK  the code at INT: Z3 rounded another way, stored
#                           at MEM, then back to BACK
#
# bfloat16 (BF16, needing AVX512_BF16): widening is a zero-extension
# shifted up 16 bits (FromBF16); rounding is VCVTNEPS2BF16, except that a
# vector holding a subnormal takes ToBF16's integer rounding (FIXUP16), as
# VCVTNEPS2BF16 flushes subnormals (macros of bf16_amd64.h).
#
# binary16 (F16, AVX-512F): widening is VCVTPH2PS (FromF16), rounding
# VCVTPS2PH with immediate 0, nearest even whatever MXCSR says (ToF16):
# exact for every input, so there is no fixup.
import functools
import sys

from asm16 import expand

FORMATS = {
    'BF16': dict(
        words='bfloat16',
        load=lambda mem, z: [f'VPMOVZXWD {mem}, {z}', f'VPSLLD $16, {z}, {z}'],
        consts=['BF16_CONSTS(Z10, Z11, Z12, Z13, Z14)'],
        store=lambda mem, lbl: [f'STORE_BF16_Z3({mem}, {lbl})'],
        fixup=lambda lbl, mem, back: [
            '', f'{lbl}:', f'RINT_BF16(Z3, {mem}, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14)', f'JMP {back}'],
    ),
    'F16': dict(
        words='binary16',
        load=lambda mem, z: [f'VCVTPH2PS {mem}, {z}'],
        consts=[],
        store=lambda mem, lbl: [f'VCVTPS2PH $0, Z3, {mem}'],
        fixup=lambda lbl, mem, back: [],
    ),
}

TEMPLATE = r'''
// func scaledAddBack{F}(acc *float64, dy, gr, yr *uint16, s *float32, stride, rows, n int)
//
// The backward pass of a per-channel scaled add over rows rows of {W}
// (stride elements apart), columns [0, n), n a positive multiple of 16,
// in one pass over g and y:
//
//	dy[r,c] = round16(float32(s[c]·g[r,c]))
//	acc[c] += float64(g[r,c])·float64(y[r,c])   for r = 0, 1, … in turn
//
// the products exact in float64, rounded once by each add, as Mul, the
// rounding to 16 bits and Dot64Cols do. (A fused multiply-add of an exact
// product rounds as the separate add does, so these kernels use it.)
TEXT ·scaledAddBack{F}(SB), NOSPLIT, $0-64
	MOVQ acc+0(FP), DI
	MOVQ dy+8(FP), SI
	MOVQ gr+16(FP), DX
	MOVQ yr+24(FP), R8
	MOVQ s+32(FP), R9
	MOVQ stride+40(FP), R10
	MOVQ rows+48(FP), R11
	MOVQ n+56(FP), CX
	SHLQ $1, R10
	CONSTS16

sab_cols:
	VMOVUPD (DI), Z0
	VMOVUPD 64(DI), Z1
	VMOVUPS (R9), Z2
	XORQ    AX, AX
	MOVQ    R11, BX

sab_rows:
	LOAD16 (DX)(AX*1), Z3
	LOAD16 (R8)(AX*1), Z4
	VCVTPS2PD     Y3, Z5
	VCVTPS2PD     Y4, Z6
	VFMADD231PD   Z6, Z5, Z0
	VEXTRACTF32X8 $1, Z3, Y5
	VEXTRACTF32X8 $1, Z4, Y6
	VCVTPS2PD     Y5, Z5
	VCVTPS2PD     Y6, Z6
	VFMADD231PD   Z6, Z5, Z1
	VMULPS        Z3, Z2, Z3
	STORE16 (SI)(AX*1), sab_int

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
	FIXUP16 sab_int, (SI)(AX*1), sab_next

// func sumSq64x4{F}(x *uint16, stride, n int, acc *[4][8]float64)
//
// sumSq64x4AVX2 over {W} rows: acc[k] gets the 8 lanes of SumSq64 of
// row k (x + k·stride elements, n a positive multiple of 16), element
// 16b+j going to lane j and then element 16b+8+j, as in the float32 loop.
TEXT ·sumSq64x4{F}(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), R8
	MOVQ n+16(FP), CX
	MOVQ acc+24(FP), AX
	SHLQ $1, R8
	LEAQ (R8)(R8*2), R10
	ACC4_LOAD

ss_loop:
	SQ_ROW (SI), Z0
	SQ_ROW (SI)(R8*1), Z1
	SQ_ROW (SI)(R8*2), Z2
	SQ_ROW (SI)(R10*1), Z3
	ADDQ $32, SI
	SUBQ $16, CX
	JNZ  ss_loop

	ACC4_STORE
	VZEROUPPER
	RET

// func scaleRows{F}(out, x *uint16, s *float32, stride, rows, n int)
//
// out[r,c] = round16(float32(x[r,c]·s[r])) for rows rows stride elements
// apart, c < n (a positive multiple of 16): Scale, then the rounding to
// {W}.
TEXT ·scaleRows{F}(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ s+16(FP), R9
	MOVQ stride+24(FP), R8
	MOVQ rows+32(FP), R11
	MOVQ n+40(FP), R12
	SHLQ $1, R8
	CONSTS16

sr_row:
	VBROADCASTSS (R9), Z2
	XORQ         AX, AX
	MOVQ         R12, CX

sr_col:
	LOAD16 (SI)(AX*1), Z3
	VMULPS Z2, Z3, Z3
	STORE16 (DI)(AX*1), sr_int

sr_next:
	ADDQ $32, AX
	SUBQ $16, CX
	JNZ  sr_col
	ADDQ R8, SI
	ADDQ R8, DI
	ADDQ $4, R9
	DECQ R11
	JNZ  sr_row
	VZEROUPPER
	RET
	FIXUP16 sr_int, (DI)(AX*1), sr_next

// func dot64Xh{F}(gr, x *uint16, rs *float32, stride, n int, acc *[4][8]float64)
//
// For the four {W} rows k of g and x (stride elements apart, n a
// positive multiple of 16), with xh = float32(x·rs[k]), adds to acc[k] the
// lanes of Dot64(g, xh): RMSNorm's backward mean, without widening g, x
// or xh to memory.
TEXT ·dot64Xh{F}(SB), NOSPLIT, $0-48
	MOVQ gr+0(FP), SI
	MOVQ x+8(FP), DX
	MOVQ rs+16(FP), R9
	MOVQ stride+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ acc+40(FP), AX
	SHLQ $1, R8
	LEAQ (R8)(R8*2), R10
	ACC4_LOAD
	VBROADCASTSS (R9), Z12
	VBROADCASTSS 4(R9), Z13
	VBROADCASTSS 8(R9), Z14
	VBROADCASTSS 12(R9), Z15

xh_loop:
	XH_ROW (SI), (DX), Z12, Z0
	XH_ROW (SI)(R8*1), (DX)(R8*1), Z13, Z1
	XH_ROW (SI)(R8*2), (DX)(R8*2), Z14, Z2
	XH_ROW (SI)(R10*1), (DX)(R10*1), Z15, Z3
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $16, CX
	JNZ  xh_loop

	ACC4_STORE
	VZEROUPPER
	RET

// func rmsGradRows{F}(dx, gr, x, res *uint16, rs, m *float32, stride, rows, n int)
//
// RMSGrad over rows rows of {W} (stride elements apart, columns
// [0, n), n a positive multiple of 16), xh = float32(x·rs[r]) formed
// again: dx = round16(rs·(g − xh·m) [+ res]), res nil for none, each
// float32 operation rounded on its own as in RMSGrad.
TEXT ·rmsGradRows{F}(SB), NOSPLIT, $0-72
	MOVQ dx+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ res+24(FP), BX
	MOVQ rs+32(FP), R9
	MOVQ m+40(FP), R13
	MOVQ stride+48(FP), R8
	MOVQ rows+56(FP), R11
	MOVQ n+64(FP), R12
	SHLQ $1, R8
	CONSTS16

rg_row:
	VBROADCASTSS (R9), Z1  // rs
	VBROADCASTSS (R13), Z2 // m
	XORQ         AX, AX
	MOVQ         R12, CX

rg_col:
	LOAD16 (SI)(AX*1), Z3  // g
	LOAD16 (DX)(AX*1), Z4
	VMULPS    Z1, Z4, Z4     // xh
	VMULPS    Z2, Z4, Z4     // xh·m
	VSUBPS    Z4, Z3, Z3     // g − xh·m
	VMULPS    Z3, Z1, Z3     // rs·(…)
	TESTQ     BX, BX
	JZ        rg_round
	LOAD16 (BX)(AX*1), Z4
	VADDPS    Z4, Z3, Z3     // + res

rg_round:
	STORE16 (DI)(AX*1), rg_int

rg_next:
	ADDQ  $32, AX
	SUBQ  $16, CX
	JNZ   rg_col
	ADDQ  R8, SI
	ADDQ  R8, DX
	ADDQ  R8, DI
	TESTQ BX, BX
	JZ    rg_nores
	ADDQ  R8, BX

rg_nores:
	ADDQ $4, R9
	ADDQ $4, R13
	DECQ R11
	JNZ  rg_row
	VZEROUPPER
	RET
	FIXUP16 rg_int, (DI)(AX*1), rg_next
'''

# Rows of four: SQ_ROW MEM, ACC adds the squares of the 16 elements at MEM
# to ACC's lanes; XH_ROW GMEM, XMEM, RS, ACC adds g·float32(x·RS).
MACROS = {
    'SQ_ROW': lambda f, mem, acc: f['load'](mem, 'Z4') + [
        'VCVTPS2PD Y4, Z5', 'VEXTRACTF32X8 $1, Z4, Y6', 'VCVTPS2PD Y6, Z6',
        f'VFMADD231PD Z5, Z5, {acc}', f'VFMADD231PD Z6, Z6, {acc}'],
    'XH_ROW': lambda f, gm, xm, rs, acc: f['load'](gm, 'Z4') + f['load'](xm, 'Z5') + [
        f'VMULPS {rs}, Z5, Z5', f'DOT16_F64(Z4, Y4, Z5, Y5, {acc}, Z6, Y6, Z7, Y7)'],
}


def kernels(name, f):
    text = TEMPLATE.replace('{F}', name).replace('{W}', f['words'])
    directives = {'LOAD16': f['load'], 'CONSTS16': lambda: f['consts'],
                  'STORE16': f['store'], 'FIXUP16': f['fixup']}
    directives.update({op: functools.partial(m, f) for op, m in MACROS.items()})
    return expand(text, directives)


out = ['//go:build amd64 && !purego', '',
       '// Code generated by scripts/gen_vmath_rows16.py. DO NOT EDIT.', '',
       '#include "textflag.h"', '#include "bf16_amd64.h"', '',
       '// ACC4_LOAD and ACC4_STORE move four rows\' float64 lanes between acc (AX)',
       '// and Z0-Z3.',
       '#define ACC4_LOAD VMOVUPD (AX), Z0; VMOVUPD 64(AX), Z1; VMOVUPD 128(AX), Z2; VMOVUPD 192(AX), Z3',
       '#define ACC4_STORE VMOVUPD Z0, (AX); VMOVUPD Z1, 64(AX); VMOVUPD Z2, 128(AX); VMOVUPD Z3, 192(AX)']
for name, f in FORMATS.items():
    out.extend(kernels(name, f))
open(sys.argv[1], 'w').write('\n'.join(out).rstrip('\n') + '\n')

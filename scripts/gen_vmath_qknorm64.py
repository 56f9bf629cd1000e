# Generates internal/vmath/qknorm64_amd64.s, the backward pass of the
# fused query/key RMSNorm and rotary embedding (QKNormRopeGradBF16,
# QKNormRopeGradF16 of internal/vmath/qknorm.go) for head dim 64, a head
# in one pass, once for each 16-bit format:
#
#   python3 scripts/gen_vmath_qknorm64.py internal/vmath/qknorm64_amd64.s
#
# The kernel is written once below, in the formats' common terms:
#
#   LOAD16x4 MEM, Za, Zb, Zc, Zd      the 64 elements at MEM (vectors of 16
#                                     at MEM, 32(MEM), 64(MEM), 96(MEM))
#                                     widened to float32 in Za-Zd
#   CONSTS16                          the constants the rounding needs
#   STORE16x4 MEM, INT, Za, Zb, Zc, Zd
#                                     Za-Zd rounded to 16 bits and stored
#                                     at MEM; INT is where vectors the fast
#                                     rounding cannot take go
#   FIXUP16x4 INT, MEM, BACK, Za, Zb, Zc, Zd
#                                     the code at INT: Za-Zd rounded
#                                     another way, stored at MEM, then back
#                                     to BACK
#
# bfloat16 (BF16, needing AVX512_BF16): widening is a zero-extension
# shifted up 16 bits (FromBF16); rounding is VCVTNEPS2BF16 (which the Go
# assembler does not know: emitted as bytes), except that vectors holding
# a subnormal take ToBF16's integer rounding (FIXUP16x4), as VCVTNEPS2BF16
# flushes subnormals (macros of bf16_amd64.h).
#
# binary16 (F16, AVX-512F): widening is VCVTPH2PS (FromF16), rounding
# VCVTPS2PH with immediate 0, nearest even whatever MXCSR says (ToF16):
# exact for every input, so there is no fixup.
import sys

from asm16 import cvtneps2bf16, expand

OFFSETS = ['', '32', '64', '96']


def mems(mem):
    # The four vectors of 16 16-bit elements from MEM, "(SI)": "(SI)",
    # "32(SI)", "64(SI)", "96(SI)".
    return [off + mem for off in OFFSETS]


def aligned(lines):
    # Pads each instruction's mnemonic to the widest of the block plus one.
    width = max(len(s.split(' ', 1)[0]) for s in lines) + 1
    return [s.split(' ', 1)[0].ljust(width) + s.split(' ', 1)[1] for s in lines]


def znum(reg):
    return int(reg[1:])


def bf16_store(mem, lbl, *zs):
    ks = ['K1', 'K2', 'K3', 'K4']
    out = aligned([f'VFPCLASSPSZ $0x20, {z}, {k}' for z, k in zip(zs, ks)] + [
        'KORW K1, K2, K1', 'KORW K3, K4, K3', 'KORTESTW K1, K3', f'JNZ {lbl}'])
    out[0] += ' // subnormal'
    out += ['', '// VCVTNEPS2BF16 ' + '; '.join(f'{z}, Y{znum(z)}' for z in zs)]
    body = [cvtneps2bf16(znum(z), znum(z)) for z in zs]
    body += [f'VMOVDQU32 Y{znum(z)}, {m}' for z, m in zip(zs, mems(mem))]
    return out + aligned(body)


def bf16_fixup(lbl, mem, back, *zs):
    return ['', f'{lbl}:'] + [
        f'RINT_BF16({z}, {m}, Z20, Z21, Z26, Z27, Z28, Z29, Z30, Z31)'
        for z, m in zip(zs, mems(mem))] + [f'JMP {back}']


FORMATS = {
    'BF16': dict(
        isa='AVX512_BF16',
        consts_doc=',\n// Z27-Z31 ToBF16\'s constants',
        load=lambda mem, *zs: aligned(
            [f'VPMOVZXWD {m}, {z}' for z, m in zip(zs, mems(mem))] +
            [f'VPSLLD $16, {z}, {z}' for z in zs]),
        consts=['BF16_CONSTS(Z27, Z28, Z29, Z30, Z31)'],
        store=bf16_store,
        fixup=bf16_fixup,
    ),
    'F16': dict(
        isa='AVX-512',
        consts_doc='',
        load=lambda mem, *zs: [f'VCVTPH2PS {m}, {z}' for z, m in zip(zs, mems(mem))],
        consts=[],
        store=lambda mem, lbl, *zs: [f'VCVTPS2PH $0, {z}, {m}' for z, m in zip(zs, mems(mem))],
        fixup=lambda lbl, mem, back, *zs: [],
    ),
}

TEMPLATE = r'''
// func qkNormRopeGrad64{F}(dx *uint16, dgain *float64, dout, x *uint16, rstd, cs, sn, gain *float32, rows, hx int)
//
// QKNormRopeGrad{F} for head dim 64 (half 32) on {ISA}, a head in
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
// rstd, Z15 gain, Z18 Σ dout·y, Z19 Σ du·u, Z20 Z21 temporaries, Z26 m{CONSTS_DOC}.
TEXT ·qkNormRopeGrad64{F}(SB), NOSPLIT, $0-80
	MOVQ         dx+0(FP), DI
	MOVQ         dout+16(FP), R11
	MOVQ         x+24(FP), SI
	MOVQ         rstd+32(FP), R10
	MOVQ         cs+40(FP), DX
	MOVQ         sn+48(FP), R8
	CONSTS16
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
	LOAD16x4 (SI), Z0, Z1, Z2, Z3
	VMULPS    Z0, Z14, Z0
	VMULPS    Z1, Z14, Z1
	VMULPS    Z2, Z14, Z2
	VMULPS    Z3, Z14, Z3
	LOAD16x4 (R11), Z4, Z5, Z6, Z7

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

	STORE16x4 (DI), g64int, Z12, Z13, Z16, Z17

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
	FIXUP16x4 g64int, (DI), g64next, Z12, Z13, Z16, Z17
'''

HEADER = r'''//go:build amd64 && !purego

// Code generated by scripts/gen_vmath_qknorm64.py. DO NOT EDIT.

#include "textflag.h"
#include "bf16_amd64.h"

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
	VADDSD        XT, X, X'''


def kernel(name, f):
    text = (TEMPLATE.replace('{F}', name).replace('{ISA}', f['isa'])
            .replace('{CONSTS_DOC}', f['consts_doc']))
    out = expand(text, {'LOAD16x4': f['load'], 'CONSTS16': lambda: f['consts'],
                        'STORE16x4': f['store'], 'FIXUP16x4': f['fixup']})
    while out[-1] == '':
        out.pop()
    return out


out = HEADER.split('\n')
for name, f in FORMATS.items():
    out.extend(kernel(name, f))
open(sys.argv[1], 'w').write('\n'.join(out).rstrip('\n') + '\n')

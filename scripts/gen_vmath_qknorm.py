# Generates internal/vmath/qknorm_amd64.s, the AVX2 and AVX-512 kernels of
# internal/vmath/qknorm.go (fused query/key RMSNorm, rotary embedding and
# gain, forward and backward), from the Go definitions there:
#
#   python3 scripts/gen_vmath_qknorm.py internal/vmath/qknorm_amd64.s
#
# Every float32 multiply, add and subtract is rounded on its own (no FMA),
# in the order of the Go code. Float64 sums keep 8 lanes, element 8b+j of
# a head in lane j, added block by block in element order (the low half's
# blocks, then the high half's) and combined by sum8's tree
# ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)); products of widened float32 are
# exact, so the sums are those of SumSq64 and Dot64. AVX2 keeps the lanes
# in two Y registers (0-3, 4-7), AVX-512 in one Z register, which takes
# the two blocks of 8 of a vector of 16 one after the other. A lane's
# step acc + a·b runs as one fused multiply-add: the product of two
# widened float32 is exact in float64 (48 significant bits, exponents far
# inside the range), so rounding acc + a·b once is rounding the sum of
# the rounded product, as the Go code does (where arm64 fuses it too).
#
# Widening float32 to float64 from a register costs an extract for the
# upper half, so the float32 kernels widen from memory: the backward pass
# stores the float32 values it dots (y, du, u) to an aligned scratch on
# the stack. The kernels of 16-bit rows, whose rows are float32 only in
# registers, dot from the registers.
#
# The bfloat16 kernels (AVX-512) read x and dout as bfloat16 and write
# out and dx as bfloat16: widening is a zero-extension shifted up 16 bits
# (FromBF16), rounding that of ToBF16 (add 0x7fff plus the bit above the
# cut, shift down; a NaN keeps its top half with the quiet bit set), so
# they return the bits of FromBF16, the float32 kernel and ToBF16 in turn.
# The binary16 kernels (AVX-512) read and write IEEE half precision:
# widening by VCVTPH2PS (exact, FromF16's instruction), rounding by
# VCVTPS2PH with immediate 0 (to nearest even whatever MXCSR says, as
# ToF16 rounds), so they return the bits of FromF16, the float32 kernel
# and ToF16 in turn.
#
# Loops over a head run two vectors per iteration (after one alone when
# their count is odd); with the baseline's head dim of 64 the AVX-512
# loops run once.
import sys

from asm16 import cvtneps2bf16

out = []


def A(s=''):
    out.append(s)


def ins(*lines):
    for s in lines:
        A(s if s.endswith(':') else '\t' + s)


class Kern:
    """An instruction set (AVX2, AVX512) and a row type (f32, bf16, f16)."""

    def __init__(self, isa, io, cvt=False):
        self.isa, self.io = isa, io
        self.wide = isa == 'AVX512'
        self.bf = io == 'bf16'
        self.f16 = io == 'f16'
        self.h16 = self.bf or self.f16    # 16-bit rows, widened in registers
        self.cvt = cvt     # rounding by VCVTNEPS2BF16 (AVX512_BF16)
        self.name = isa if not self.h16 else ('BF16Cvt' if cvt else 'BF16' if self.bf else 'F16') + isa
        self.stores = 0    # numbers the labels of the stores
        self.R = 'Z' if self.wide else 'Y'
        self.lanes = 16 if self.wide else 8    # float32 per vector
        self.step = self.lanes * (2 if self.h16 else 4)  # bytes of a vector of rows
        self.tscale = 2 if self.h16 else 1     # index scale of the float32 tables
        self.half = 32 if self.wide else 16    # bytes of float32 per widened vector

    def v(self, i):
        return f'{self.R}{i}'

    def acc(self, i):
        # The accumulator registers of a float64 sum starting at i.
        return [i] if self.wide else [i, i + 1]

    def zero(self, i):
        # VEX zeroing clears the whole Z register too.
        return [f'VXORPD Y{r}, Y{r}, Y{r}' for r in self.acc(i)]

    def tab(self, d, base):
        # Operand of a float32 table (cs, sn) at the row index AX + d.
        return f'{d * self.tscale}({base})(AX*{self.tscale})'

    def load(self, dst, mem):
        # dst = a vector of rows as float32.
        if self.bf:
            ins(f'VPMOVZXWD {mem}, {self.v(dst)}', f'VPSLLD $16, {self.v(dst)}, {self.v(dst)}')
        elif self.f16:
            ins(f'VCVTPH2PS {mem}, {self.v(dst)}')
        else:
            ins(f'VMOVUPS {mem}, {self.v(dst)}')

    def load_mul(self, dst, mem, s):
        # dst = rows·s.
        if self.h16:
            self.load(dst, mem)
            ins(f'VMULPS {self.v(dst)}, {self.v(s)}, {self.v(dst)}')
        else:
            ins(f'VMULPS {mem}, {self.v(s)}, {self.v(dst)}')

    def bf16_consts(self):
        # Z16-Z20: ToBF16's constants (1, 0x7fff, 0x7fffffff, 0x7f800000, 0x40).
        if self.bf:
            for r, c in zip(range(16, 21), ('$1', '$0x7fff', '$0x7fffffff', '$0x7f800000', '$0x40')):
                ins(f'MOVL {c}, AX', f'VPBROADCASTD AX, Z{r}')

    def store(self, src, mem, t):
        # Rows at mem = src (rounded to bfloat16 as ToBF16 does, to binary16
        # as ToF16 does); t: two temporaries.
        if self.f16:
            ins(f'VCVTPS2PH $0, {self.v(src)}, {mem}')
            return
        if not self.bf:
            ins(f'VMOVUPS {self.v(src)}, {mem}')
            return
        s, a, b = f'Z{src}', f'Z{t[0]}', f'Z{t[1]}'
        if self.cvt:
            # VCVTNEPS2BF16 rounds as below but flushes a subnormal to
            # zero: a vector holding one takes the integer rounding.
            self.stores += 1
            lbl = f'{self.name}st{self.stores}'
            ins(f'VFPCLASSPSZ $0x20, {s}, K1',
                'KORTESTW K1, K1',
                f'JZ {lbl}cvt')
            self.round_int(s, a, b, mem)
            ins(f'JMP {lbl}done')
            A(f'{lbl}cvt:')
            ins(f'{cvtneps2bf16(t[1], src)} // VCVTNEPS2BF16 {s}, Y{t[1]}',
                f'VMOVDQU32 Y{t[1]}, {mem}')
            A(f'{lbl}done:')
            return
        self.round_int(s, a, b, mem)

    def round_int(self, s, a, b, mem):
        # ToBF16's integer rounding of s into b, stored at mem.
        ins(f'VPSRLD $16, {s}, {a}',        # top half
            f'VPANDD Z16, {a}, {b}',        # the bit above the cut
            f'VPADDD {b}, {s}, {b}',
            f'VPADDD Z17, {b}, {b}',
            f'VPSRLD $16, {b}, {b}',        # rounded to nearest even
            f'VPANDD Z18, {s}, {s}',
            f'VPCMPUD $6, Z19, {s}, K1',    # |u| > +Inf bits: NaN
            f'VPORD Z20, {a}, K1, {b}',     # NaN: top half, quiet
            f'VPMOVDW {b}, {mem}')

    def dotm(self, a, b, acc, t):
        # acc += float64(a[j])·float64(b[j]) over one vector of float32;
        # a and b are (displacement, operand) pairs, (0, "(R12)"); a == b
        # squares. t: two temporaries.
        lines = []
        for part in range(2):
            off = part * self.half
            r = acc[0] if self.wide else acc[part]
            lines.append(f'VCVTPS2PD {a[0] + off}{a[1]}, {self.R}{t[0]}')
            if a == b:
                lines.append(f'VFMADD231PD {self.R}{t[0]}, {self.R}{t[0]}, {self.R}{r}')
            else:
                lines.append(f'VCVTPS2PD {b[0] + off}{b[1]}, {self.R}{t[1]}')
                lines.append(f'VFMADD231PD {self.R}{t[1]}, {self.R}{t[0]}, {self.R}{r}')
        ins(*lines)

    def dotr(self, a, b, acc, t):
        # dotm on vectors of float32 in registers a and b (AVX-512): the low
        # 8 lanes widened in place, the high 8 extracted first. t: two
        # temporaries.
        lines = []
        for part in range(2):
            src = (a, b)
            if part:
                lines.append(f'VEXTRACTF32X8 $1, Z{a}, Y{t[0]}')
                if a != b:
                    lines.append(f'VEXTRACTF32X8 $1, Z{b}, Y{t[1]}')
                src = (t[0], t[1])
            lines.append(f'VCVTPS2PD Y{src[0]}, Z{t[0]}')
            if a == b:
                lines.append(f'VFMADD231PD Z{t[0]}, Z{t[0]}, Z{acc[0]}')
            else:
                lines.append(f'VCVTPS2PD Y{src[1]}, Z{t[1]}')
                lines.append(f'VFMADD231PD Z{t[1]}, Z{t[0]}, Z{acc[0]}')
        ins(*lines)

    def sum8(self, acc, tmp):
        # X{acc[0]} = sum8 of the lanes.
        lo = acc[0]
        if self.wide:
            ins(f'VEXTRACTF64X4 $1, Z{lo}, Y{tmp}',
                f'VADDPD Y{tmp}, Y{lo}, Y{lo}')        # (a0+a4, a1+a5, a2+a6, a3+a7)
        else:
            ins(f'VADDPD Y{acc[1]}, Y{lo}, Y{lo}')
        ins(f'VEXTRACTF128 $1, Y{lo}, X{tmp}',         # (a2+a6, a3+a7)
            f'VADDPD X{tmp}, X{lo}, X{lo}',            # ((a0+a4)+(a2+a6), (a1+a5)+(a3+a7))
            f'VPERMILPD $1, X{lo}, X{tmp}',
            f'VADDSD X{tmp}, X{lo}, X{lo}')

    def dim(self, reg):
        # reg = D, from R9 (half a head in bytes of rows).
        if self.h16:
            ins(f'MOVQ R9, {reg}')
        else:
            ins(f'MOVQ R9, {reg}', f'SHRQ $1, {reg}')

    def next_tables(self):
        # Advance DX and R8 (cs, sn) by a row of the tables, half float32.
        if self.h16:
            ins('LEAQ (DX)(R9*2), DX', 'LEAQ (R8)(R9*2), R8')
        else:
            ins('ADDQ R9, DX', 'ADDQ R9, R8')

    def loop(self, label, idx, end, body):
        # body(d, k) for the byte offsets idx[0] + d in [0, end), two
        # vectors per iteration (k = 0, 1 the copy), after one alone when
        # end/step is odd; the registers idx start at their first offsets
        # and advance together.
        s = self.step
        ins(f'TESTQ ${s}, {end}', f'JZ {label}pairs')
        body(0, 0)
        ins(*[f'ADDQ ${s}, {r}' for r in idx])
        A(f'{label}pairs:')
        ins(f'CMPQ {idx[0]}, {end}', f'JAE {label}done')
        A(f'{label}:')
        body(0, 0)
        body(s, 1)
        ins(*[f'ADDQ ${2 * s}, {r}' for r in idx], f'CMPQ {idx[0]}, {end}', f'JB {label}')
        A(f'{label}done:')


def forward(k):
    # Two passes over each row: the heads' sums of squares and rstd (into
    # rstd), then their rotations, so that the latency of one head's sum,
    # square root and division overlaps the next head's loads instead of
    # stalling its rotation.
    # Registers: SI x head, DI out head, CX x head + half, R13 out head +
    # half, R10 rstd, R11 gain (per row from the start), DX cs row, R8 sn
    # row, R9 half a head in bytes of rows, BX a head, AX byte index, R12
    # heads left (the 16-bit kernels' sums are dotted from registers);
    # 0(SP) and 8(SP) the row's x and rstd; X12 D, X13 1.0 (float64); 14
    # rstd, 15 gain (broadcast); the rotation's two copies use 0-5 and
    # 6-11, the bfloat16 constants 16-20.
    v, n = k.v, k.name
    rows = 'uint16' if k.h16 else 'float32'
    A(f'// func qkNormRope{n}(out *{rows}, rstd *float32, x *{rows}, cs, sn, gain *float32, rows, hx, half int, eps float64)')
    A(f'TEXT ·qkNormRope{n}(SB), NOSPLIT, $16-80')
    ins('MOVQ out+0(FP), DI',
        'MOVQ rstd+8(FP), R10',
        'MOVQ x+16(FP), SI',
        'MOVQ cs+24(FP), DX',
        'MOVQ sn+32(FP), R8',
        'MOVQ half+64(FP), R9',
        f'SHLQ ${1 if k.h16 else 2}, R9',
        'LEAQ (R9)(R9*1), BX',
        'MOVQ $0x3ff0000000000000, AX',
        'VMOVQ AX, X13')
    k.dim('AX')
    ins('VCVTSI2SDQ AX, X12, X12')
    k.bf16_consts()
    A(f'fwdrow{n}:')
    ins('MOVQ SI, 0(SP)',
        'MOVQ R10, 8(SP)',
        'MOVQ hx+56(FP), R12')
    A(f'sumhead{n}:')
    A('\t// s = Σ x² over the head, then rstd = float32(1/sqrt(s/D + eps))')
    ins(*k.zero(0), 'XORQ AX, AX')

    def sumsq(d, c):
        if k.h16:
            k.load(2 + c, f'{d}(SI)(AX*1)')
            k.dotr(2 + c, 2 + c, k.acc(0), [4 + c, None])
        else:
            k.dotm((d, '(SI)(AX*1)'), (d, '(SI)(AX*1)'), k.acc(0), [2 + c, None])

    k.loop(f'sumsq{n}', ['AX'], 'BX', sumsq)
    k.sum8(k.acc(0), 1)
    ins('VDIVSD X12, X0, X0',
        'VADDSD eps+72(FP), X0, X0',
        'VSQRTSD X0, X0, X0',
        'VDIVSD X0, X13, X0',
        'VCVTSD2SS X0, X0, X0',
        'VMOVSS X0, (R10)',
        'ADDQ BX, SI',
        'ADDQ $4, R10',
        'DECQ R12',
        f'JNZ sumhead{n}',
        'MOVQ 0(SP), SI',
        'MOVQ 8(SP), R10',
        'MOVQ gain+40(FP), R11',
        'MOVQ hx+56(FP), R12')
    A(f'ropehead{n}:')
    A('\t// u = x·rstd; out = g·(rotated u)')
    ins(f'VBROADCASTSS (R10), {v(14)}',
        f'VBROADCASTSS (R11), {v(15)}',
        'LEAQ (SI)(R9*1), CX',
        'LEAQ (DI)(R9*1), R13',
        'XORQ AX, AX')

    def rope(d, c):
        u, cs, sn, t, w = 6 * c, 6 * c + 2, 6 * c + 3, 6 * c + 4, 6 * c + 5  # the copy's registers
        k.load_mul(u, f'{d}(SI)(AX*1)', 14)        # u[i]
        k.load_mul(u + 1, f'{d}(CX)(AX*1)', 14)    # u[i+half]
        ins(f'VMOVUPS {k.tab(d, "DX")}, {v(cs)}',
            f'VMOVUPS {k.tab(d, "R8")}, {v(sn)}',
            f'VMULPS {v(cs)}, {v(u)}, {v(t)}',
            f'VMULPS {v(sn)}, {v(u + 1)}, {v(w)}',
            f'VSUBPS {v(w)}, {v(t)}, {v(t)}',
            f'VMULPS {v(t)}, {v(15)}, {v(t)}')
        k.store(t, f'{d}(DI)(AX*1)', [21 + 2 * c, 22 + 2 * c])
        ins(f'VMULPS {v(sn)}, {v(u)}, {v(t)}',
            f'VMULPS {v(cs)}, {v(u + 1)}, {v(w)}',
            f'VADDPS {v(w)}, {v(t)}, {v(t)}',
            f'VMULPS {v(t)}, {v(15)}, {v(t)}')
        k.store(t, f'{d}(R13)(AX*1)', [21 + 2 * c, 22 + 2 * c])

    k.loop(f'rope{n}', ['AX'], 'R9', rope)
    ins('ADDQ BX, SI',
        'ADDQ BX, DI',
        'ADDQ $4, R10',
        'ADDQ $4, R11',
        'DECQ R12',
        f'JNZ ropehead{n}')
    k.next_tables()
    ins('DECQ rows+48(FP)',
        f'JNZ fwdrow{n}',
        'VZEROUPPER',
        'RET')
    A()


# Backward. Registers: SI x head, R11 dout head, DI dx head, DX cs row,
# R8 sn row, R9 half a head in bytes of rows, R10 rstd, R13 gain, BX dgain
# (0: none), AX byte index i, CX i + half, R12 the scratch (64-byte
# aligned: y, du, u and dout of the loop's first copy at 0, 64, 128 and
# 192, of its second at 256 to 448, the group's m at 512; the 16-bit
# kernels use only m's slot). Vector
# registers: 14 rstd, 15 gain; 8 (and 9) the lanes of Σ dout·y, 12 (and
# 13) those of Σ du·u, then m broadcast in 13; the bfloat16 constants
# 16-20. Stack: 0(SP) the row's heads left, 8(SP) the group's heads,
# 16(SP) those left in a pass, 24-48(SP) the group's first x, dout, rstd
# and gain.
#
# A row's heads go in groups of up to 16, each in two passes: per head,
# the sums and m (kept in the scratch), then per head dx. The first pass
# sweeps the head's lower half i twice: (1) the low half's terms of both
# sums, (2) the high half's, so that each lane adds its elements in
# order; the second computes dx from u and du recomputed. Separate
# passes let one head's reductions (sum8, division) overlap the next
# head's sweeps. Nothing is stored to dx before the second pass, which
# loads an element pair before storing it, so dx may be x or dout.
SCRATCH = 704  # 56 bytes of stack slots, up to 63 of alignment, 9 slots of 64
GROUP = 16     # heads per group: the m slot holds 16 float32
MSLOT = 512


def backward(k):
    v, n = k.v, k.name
    rows = 'uint16' if k.h16 else 'float32'

    def load6(d):
        k.load_mul(0, f'{d}(SI)(AX*1)', 14)   # ua = u[i]
        k.load_mul(1, f'{d}(SI)(CX*1)', 14)   # uc = u[i+half]
        ins(f'VMOVUPS {k.tab(d, "DX")}, {v(2)}',   # cs
            f'VMOVUPS {k.tab(d, "R8")}, {v(3)}')   # sn
        k.load(4, f'{d}(R11)(AX*1)')          # ga = dout[i]
        k.load(5, f'{d}(R11)(CX*1)')          # gc = dout[i+half]

    def du_lo(d, t):
        # d = g·(ga·cs + gc·sn)
        ins(f'VMULPS {v(2)}, {v(4)}, {v(d)}', f'VMULPS {v(3)}, {v(5)}, {v(t)}',
            f'VADDPS {v(t)}, {v(d)}, {v(d)}', f'VMULPS {v(d)}, {v(15)}, {v(d)}')

    def du_hi(d, t):
        # d = g·(gc·cs − ga·sn)
        ins(f'VMULPS {v(2)}, {v(5)}, {v(d)}', f'VMULPS {v(3)}, {v(4)}, {v(t)}',
            f'VSUBPS {v(t)}, {v(d)}, {v(d)}', f'VMULPS {v(d)}, {v(15)}, {v(d)}')

    def sweep(label, hi, gy):
        def body(d, c):
            y, du, u, g = 256 * c, 256 * c + 64, 256 * c + 128, 256 * c + 192
            load6(d)
            if gy:
                if hi:  # y_hi = ua·sn + uc·cs
                    ins(f'VMULPS {v(3)}, {v(0)}, {v(6)}', f'VMULPS {v(2)}, {v(1)}, {v(7)}', f'VADDPS {v(7)}, {v(6)}, {v(6)}')
                else:   # y_lo = ua·cs − uc·sn
                    ins(f'VMULPS {v(2)}, {v(0)}, {v(6)}', f'VMULPS {v(3)}, {v(1)}, {v(7)}', f'VSUBPS {v(7)}, {v(6)}, {v(6)}')
                if not k.h16:
                    ins(f'VMOVUPS {v(6)}, {y}(R12)')
            (du_hi if hi else du_lo)(10, 7)
            if k.h16:
                # Both dots from registers: g, y, du and u stay put.
                if gy:
                    k.dotr(5 if hi else 4, 6, k.acc(8), [25, 26])
                k.dotr(10, 1 if hi else 0, k.acc(12), [27, 28])
                return
            ins(f'VMOVUPS {v(10)}, {du}(R12)',
                f'VMOVUPS {v(1 if hi else 0)}, {u}(R12)')
            if gy:
                k.dotm((d, '(R11)(CX*1)' if hi else '(R11)(AX*1)'), (y, '(R12)'), k.acc(8), [6, 7])
            k.dotm((du, '(R12)'), (u, '(R12)'), k.acc(12), [2, 3])

        ins('XORQ AX, AX', 'MOVQ R9, CX')
        k.loop(label, ['AX', 'CX'], 'R9', body)

    A(f'// func qkNormRopeGrad{n}(dx *{rows}, dgain *float64, dout, x *{rows}, rstd, cs, sn, gain *float32, rows, hx, half int)')
    A(f'TEXT ·qkNormRopeGrad{n}(SB), NOSPLIT, ${SCRATCH}-88')
    ins('MOVQ dx+0(FP), DI',
        'MOVQ dout+16(FP), R11',
        'MOVQ x+24(FP), SI',
        'MOVQ rstd+32(FP), R10',
        'MOVQ cs+40(FP), DX',
        'MOVQ sn+48(FP), R8',
        'MOVQ half+80(FP), R9',
        f'SHLQ ${1 if k.h16 else 2}, R9',
        'LEAQ 119(SP), R12',
        'ANDQ $-64, R12')
    k.bf16_consts()
    A(f'bwdrow{n}:')
    ins('MOVQ gain+56(FP), R13',
        'MOVQ dgain+8(FP), BX',
        'MOVQ hx+72(FP), AX',
        'MOVQ AX, 0(SP)')
    A(f'group{n}:')
    ins('MOVQ 0(SP), AX',
        f'CMPQ AX, ${GROUP}',
        f'JBE whole{n}',
        f'MOVQ ${GROUP}, AX')
    A(f'whole{n}:')
    ins('MOVQ AX, 8(SP)',
        'MOVQ AX, 16(SP)',
        'SUBQ AX, 0(SP)',
        'MOVQ SI, 24(SP)',
        'MOVQ R11, 32(SP)',
        'MOVQ R10, 40(SP)',
        'MOVQ R13, 48(SP)')
    A(f'sumshead{n}:')
    ins(f'VBROADCASTSS (R10), {v(14)}',
        f'VBROADCASTSS (R13), {v(15)}',
        *k.zero(12),
        'TESTQ BX, BX',
        f'JZ nogy{n}',
        *k.zero(8))
    sweep(f'gylo{n}', False, True)
    sweep(f'gyhi{n}', True, True)
    A('\t// dgain[h] += Σ dout·y')
    k.sum8(k.acc(8), 10)
    ins('VADDSD (BX), X8, X8',
        'VMOVSD X8, (BX)',
        'ADDQ $8, BX',
        f'JMP m{n}')
    A(f'nogy{n}:')
    sweep(f'dulo{n}', False, False)
    sweep(f'duhi{n}', True, False)
    A(f'm{n}:')
    A('\t// m = float32(Σ du·u / D), into the group\'s slot')
    k.sum8(k.acc(12), 10)
    k.dim('AX')
    ins('VCVTSI2SDQ AX, X11, X11',
        'VDIVSD X11, X12, X12',
        'VCVTSD2SS X12, X12, X12',
        'MOVQ 8(SP), AX',
        'SUBQ 16(SP), AX',
        f'VMOVSS X12, {MSLOT}(R12)(AX*4)',
        'LEAQ (SI)(R9*2), SI',
        'LEAQ (R11)(R9*2), R11',
        'ADDQ $4, R10',
        'ADDQ $4, R13',
        'DECQ 16(SP)',
        f'JNZ sumshead{n}',
        'MOVQ 24(SP), SI',
        'MOVQ 32(SP), R11',
        'MOVQ 40(SP), R10',
        'MOVQ 48(SP), R13',
        'MOVQ 8(SP), AX',
        'MOVQ AX, 16(SP)')
    A(f'dxhead{n}:')
    A('\t// dx = rstd·(du − u·m)')
    ins(f'VBROADCASTSS (R10), {v(14)}',
        f'VBROADCASTSS (R13), {v(15)}',
        'MOVQ 8(SP), AX',
        'SUBQ 16(SP), AX',
        f'VBROADCASTSS {MSLOT}(R12)(AX*4), {v(13)}',
        'XORQ AX, AX',
        'MOVQ R9, CX')

    def dx(d, c):
        load6(d)
        du_lo(6, 7)
        ins(f'VMULPS {v(13)}, {v(0)}, {v(0)}', f'VSUBPS {v(0)}, {v(6)}, {v(6)}', f'VMULPS {v(6)}, {v(14)}, {v(6)}')
        du_hi(8, 7)
        ins(f'VMULPS {v(13)}, {v(1)}, {v(1)}', f'VSUBPS {v(1)}, {v(8)}, {v(8)}', f'VMULPS {v(8)}, {v(14)}, {v(8)}')
        k.store(6, f'{d}(DI)(AX*1)', [21, 22])
        k.store(8, f'{d}(DI)(CX*1)', [23, 24])

    k.loop(f'dx{n}', ['AX', 'CX'], 'R9', dx)
    ins('LEAQ (SI)(R9*2), SI',
        'LEAQ (R11)(R9*2), R11',
        'LEAQ (DI)(R9*2), DI',
        'ADDQ $4, R10',
        'ADDQ $4, R13',
        'DECQ 16(SP)',
        f'JNZ dxhead{n}',
        'CMPQ 0(SP), $0',
        f'JNE group{n}')
    k.next_tables()
    ins('DECQ rows+64(FP)',
        f'JNZ bwdrow{n}',
        'VZEROUPPER',
        'RET')
    A()


A('//go:build amd64 && !purego')
A()
A('// Code generated by scripts/gen_vmath_qknorm.py. DO NOT EDIT.')
A()
A('#include "textflag.h"')
A()
A('// Kernels of qknorm.go over rows·hx heads of 2·half elements (rows and')
A('// hx positive; half a multiple of 8 for AVX2, of 16 for AVX-512). Each')
A('// rounds every float32 operation on its own in the order of the Go')
A('// definitions; float64 sums keep 8 lanes (element 8b+j in lane j), added')
A('// in element order and combined by sum8\'s tree.')
A()
for kern in (Kern('AVX2', 'f32'), Kern('AVX512', 'f32'), Kern('AVX512', 'bf16'), Kern('AVX512', 'bf16', cvt=True),
             Kern('AVX512', 'f16')):
    forward(kern)
    backward(kern)

open(sys.argv[1], 'w').write('\n'.join(out))

# Helpers shared by the scripts/gen_vmath_*.py generators of the 16-bit
# (bfloat16 and binary16) AVX-512 kernels: the bytes of VCVTNEPS2BF16,
# which the Go assembler does not know, and the expansion of a kernel
# template written once in directives that each format spells its own way.


def cvtneps2bf16(d, s):
    # VCVTNEPS2BF16 Zs, Yd (EVEX.512.F3.0F38.W0 72 /r, register to
    # register), as BYTE directives.
    p0 = 0x02 | ((~d >> 3 & 1) << 7) | ((~s >> 4 & 1) << 6) | ((~s >> 3 & 1) << 5) | ((~d >> 4 & 1) << 4)
    b = [0x62, p0, 0x7e, 0x48, 0x72, 0xc0 | (d & 7) << 3 | (s & 7)]
    return '; '.join(f'BYTE ${x:#04x}' for x in b)


def operands(s):
    # Splits "(SI)(AX*1), Z3" at the commas outside brackets.
    parts, depth, cur = [], 0, ''
    for ch in s:
        depth += ch == '('
        depth -= ch == ')'
        if ch == ',' and depth == 0:
            parts.append(cur.strip())
            cur = ''
        else:
            cur += ch
    return parts + [cur.strip()]


def expand(text, directives):
    # The lines of text with each directive line ("OP operands // comment",
    # OP a key of directives) replaced by directives[OP](*operands): lines
    # of code, indented by a tab unless empty or a label. Other lines are
    # kept as they are.
    out = []
    for line in text.split('\n'):
        op, _, rest = line.split('//')[0].strip().partition(' ')
        if op not in directives:
            out.append(line)
            continue
        lines = directives[op](*(operands(rest) if rest else []))
        out.extend(s if s == '' or s.endswith(':') else '\t' + s for s in lines)
    return out

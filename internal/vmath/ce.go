package vmath

import (
	"math"
	"unsafe"

	"github.com/golf-ml/golf/backend"
)

// The softcapped cross-entropy of one row of logits x with cap c runs in
// two kernels. SoftcapExp computes, element by element,
//
//	z, g = SoftcapZ(x[i], c)        (c·tanh(x/c) and 1 − tanh²(x/c))
//	e[i] = ExpCE(z − s)
//
// and S = Σ e[i], from which lse = s + log S; CEGrad then turns e and g
// into the gradient. The shift s only keeps the exponentials in range: it
// should be about max z or above. Because |z| ≤ c, the cap itself will do
// while z − c ≥ −2c stays above ExpCE's flush to zero (−87.3): then no
// pass over the row is spent on its maximum (SoftcapShift).
//
// SoftcapZ and ExpCE are this file's own float32 maths, cheaper than
// Tanh32 and Exp32 and more accurate (ExpCE within 1.1 ulp, z within 2):
// every multiply-add is fused (FMA32, one rounding), the softcap
// multiplies by the reciprocal 1/c instead of dividing, and where
// |x/c| < 0.625 it forms z = x·(1 + t) from x itself, t = tanh(y)/y − 1
// by the odd polynomial of Tanh32, so that neither the rounding of y =
// x·(1/c) nor that of c·tanh reaches z. The Go code is the definition;
// the assembly (ce_amd64.s: AVX-512, and AVX2 with FMA) returns the same
// bits.

// Constants of SoftcapZ and ExpCE.
const (
	ceTanhW = 0x1.9p-2 // 0.625²: below, SoftcapZ's odd polynomial

	ceLn2Hi = 0x1.62e43p-1   // ln 2 rounded to float32
	ceLn2Lo = -0x1.05c61p-29 // ln 2 − ceLn2Hi rounded to float32

	// e^r ≈ 1 + r·(1 + r·(E2 + r·(E3 + r·(E4 + r·(E5 + r·E6))))) on
	// |r| ≤ ln 2/2, a Chebyshev fit within 2·10⁻⁹ (E1 = 1 and E2 = ½ are
	// the fit's coefficients rounded to float32).
	ceE2 = 0.5
	ceE3 = 0x1.555404p-3
	ceE4 = 0x1.5554acp-5
	ceE5 = 0x1.126fa6p-7
	ceE6 = 0x1.6d7532p-10
)

// ExpCE is e^x in float32, within 1.1 ulp wherever e^x is a normal
// float32, with every multiply-add fused:
//
//	k = roundeven(x·log₂e)  (the exact product)
//	r = fma(−k, ln2Lo, fma(−k, ln2Hi, x))  (the inner one is exact)
//	p = 1 + r·(1 + r·(E2 + … + r·E6))  (Horner, one fma a step)
//	e^x = p·2^k  (one rounding: +Inf past the largest float32)
//
// It is 0 below −87.3 (Exp32's flush), +Inf above 89 (where k would pass
// 128; from about 88.72 on e^x is +Inf anyway), and x for NaN.
func ExpCE(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < expLo:
		return 0
	case x > ceExpInf:
		return float32(math.Inf(1))
	}
	return ceExpCore(x)
}

// ceExpInf is the bound above which ExpCE is +Inf without its polynomial.
const ceExpInf = 89

// ceExpCore is ExpCE for x in [−87.3, 89]: there k is in [−126, 128],
// p·2^k is a normal float32 or past the largest, and the multiply by 2^k,
// exact in float64, rounds once (as VSCALEFPS does).
func ceExpCore(x float32) float32 {
	k := float32(math.RoundToEven(float64(x) * float64(log2E)))
	r := fma32(-k, ceLn2Hi, x)
	r = fma32(-k, ceLn2Lo, r)
	p := fma32(ceE6, r, ceE5)
	p = fma32(p, r, ceE4)
	p = fma32(p, r, ceE3)
	p = fma32(p, r, ceE2)
	p = fma32(p, r, 1)
	p = fma32(p, r, 1)
	return float32(float64(p) * math.Float64frombits(uint64(int64(k)+1023)<<52))
}

// SoftcapZ is the softcap of x at cap c, z = c·tanh(x/c), and its
// derivative g = 1 − tanh²(x/c), as SoftcapExp computes them. With rc =
// float32(1/c), y = x·rc and w = y·y (each rounded):
//
//	w < 0.625²:  t = w·Q(w)  (Tanh32's odd polynomial by fma, Horner)
//	             z = fma(x, t, x);  a = 1 + t;  g = fma(−(w·a), a, 1)
//	otherwise:   y = x/c (divided);  d = ExpCE(−2|y|)
//	             q = 2d/(1 + d) (the quotient corrected once by fma)
//	             z = fma(−c', q, c'), c' = ±c with y's sign;  g = q·(2 − q)
//
// (1 − q = tanh|y| and q·(2 − q) = 4d/(1 + d)², the exact sech², which
// does not cancel as 1 − tanh² would.) z is within 2 ulp of c·tanh(x/c)
// and g within 2⁻²² of 1 − tanh² relatively; NaN x gives z = g = x, ±Inf
// gives ±c and g = 0.
func SoftcapZ(x, c float32) (z, g float32) {
	rc := 1 / c
	if useAsm && useFMA {
		// The fused multiply-adds in one instruction each, rather than
		// fma32's emulation.
		if z, g, ok := softcapZFMA(x, c, rc); ok {
			return z, g
		}
	}
	return softcapZ(x, c, rc)
}

// softcapZ is SoftcapZ with rc = float32(1/c) given.
func softcapZ(x, c, rc float32) (z, g float32) {
	y := float32(x * rc)
	w := float32(y * y)
	if w < ceTanhW {
		q := fma32(tanhQ0, w, tanhQ1)
		q = fma32(q, w, tanhQ2)
		q = fma32(q, w, tanhQ3)
		q = fma32(q, w, tanhQ4)
		t := float32(q * w)
		a := float32(1 + t)
		return fma32(x, t, x), fma32(-float32(w*a), a, 1)
	}
	if x != x {
		return x, x // one NaN for both, whatever order later multiplies them in
	}
	y = x / c
	sign := math.Float32bits(y) & (1 << 31)
	m := math.Float32frombits(math.Float32bits(y) | 1<<31) // −|y|
	d := ExpCE(float32(m + m))
	// q = 2d/(1 + d), with the roundings of 1 + d and of the quotient
	// (both exact here: en and r) taken back in.
	n := float32(d + 1)
	en := float32(d - float32(n-1))
	q := float32(d+d) / n
	r := fma32(-q, n, float32(d+d))
	q = float32(q + float32(fma32(-q, en, r)/n))
	cs := math.Float32frombits(math.Float32bits(c) ^ sign) // c with y's sign
	return fma32(-cs, q, cs), float32(q * float32(2-q))
}

// SoftcapShiftMax is the largest cap that SoftcapShift uses as the shift:
// e^{z−c} ≥ e^{−80} is then a normal float32 for every z.
const SoftcapShiftMax = 40

// SoftcapShift returns the shift the cross-entropy of a row softcapped at
// c can use without looking at the row, and whether there is one: c itself
// for 0 < c ≤ SoftcapShiftMax. Otherwise the caller shifts by the row's
// largest z (Softcap returns it).
func SoftcapShift(c float32) (float32, bool) {
	return c, c > 0 && c <= SoftcapShiftMax
}

// SoftcapExp sets, for a row of logits x softcapped at c and shifted by s,
//
//	z, g[i] = SoftcapZ(x[i], c)     (g skipped when g is nil)
//	e[i] = ExpCE(z − s)             (the difference rounded to float32)
//
// and returns Σ e[i]: the whole blocks of 8 in float64 lanes (the
// elements a lane takes from a unit of 64, or of 16 after the last whole
// one, added in float32 first: ceAddUnits), the lanes combined as in the
// package comment, then the tail in order. e may be x. s should be about
// max z or above (past z − s = 88.72 an e is +Inf).
func SoftcapExp(e, g, x []float32, c, s float32) float64 {
	ceLens("SoftcapExp", e, g, len(x))
	return softcapExp(e, g, x, c, s)
}

// SoftcapExpBF16 is SoftcapExp of a row of bfloat16 logits (x[i] widened
// exactly, as FromBF16 does).
func SoftcapExpBF16(e, g []float32, x []uint16, c, s float32) float64 {
	ceLens("SoftcapExpBF16", e, g, len(x))
	return softcapExp(e, g, x, c, s)
}

// CEGrad sets the gradient of a row's softcapped cross-entropy for every
// class but the target, from e and g as SoftcapExp left them and q =
// float32(1/S), each product rounded to float32:
//
//	dst[i] = ((e[i]·g[i])·q)·scale
//
// that is scale·p·g with p = e·q. e·g ≤ 1 and p·g ≤ 1 cannot overflow,
// and with a table of e·g (CEGradTable) a 16-bit row takes one lookup an
// element. The caller writes the target's element. dst may be e or g.
func CEGrad(dst, e, g []float32, q, scale float32) {
	sameLen("CEGrad", "dst", len(dst), "e", len(e))
	sameLen("CEGrad", "g", len(g), "e", len(e))
	ceGrad(dst, e, g, q, scale)
}

// CEGradBF16 is CEGrad rounded to bfloat16 (as ToBF16 rounds).
func CEGradBF16(dst []uint16, e, g []float32, q, scale float32) {
	sameLen("CEGradBF16", "dst", len(dst), "e", len(e))
	sameLen("CEGradBF16", "g", len(g), "e", len(e))
	ceGrad(dst, e, g, q, scale)
}

// ceLens panics unless e, and g when not nil, have length n.
func ceLens(op string, e, g []float32, n int) {
	sameLen(op, "e", len(e), "x", n)
	if g != nil {
		sameLen(op, "g", len(g), "x", n)
	}
}

// ceIn is a row's storage: float32, or bfloat16 bits.
type ceIn interface{ float32 | uint16 }

// ceWiden is x as float32 (bfloat16 bits shifted into the top half).
func ceWiden[T ceIn](x T) float32 {
	switch v := any(x).(type) {
	case uint16:
		return math.Float32frombits(uint32(v) << 16)
	default:
		return any(x).(float32)
	}
}

// ceNarrow is v stored as T (rounded by bf16Bits for bfloat16).
func ceNarrow[T ceIn](v float32) T {
	var t T
	switch p := any(&t).(type) {
	case *uint16:
		*p = bf16Bits(v)
	case *float32:
		*p = v
	}
	return t
}

// softcapExp1 is one element of SoftcapExp (rc = float32(1/c)).
func softcapExp1(x, c, rc, s float32) (e, g float32) {
	z, g := softcapZ(x, c, rc)
	return ExpCE(z - s), g
}

// ceGrad1 is one element of CEGrad.
func ceGrad1(e, g, q, scale float32) float32 {
	return float32(float32(e*g)*q) * scale
}

// softcapExp is SoftcapExp: whole blocks of 8 through the lanes (by the
// units of ceAddUnits), then the tail in order.
func softcapExp[T ceIn](e, g []float32, x []T, c, s float32) float64 {
	var acc [lanes]float64
	full := len(x) & laneMask
	gb := g
	if g != nil {
		gb = g[:full]
	}
	rc := 1 / c
	softcapExpBlocks(e[:full], gb, x[:full], c, rc, s, &acc)
	sum := sum8(&acc)
	for i := full; i < len(x); i++ {
		ei, gi := softcapExp1(ceWiden(x[i]), c, rc, s)
		e[i] = ei
		if g != nil {
			g[i] = gi
		}
		sum += float64(ei)
	}
	return sum
}

// softcapExpBlocks runs whole blocks of 8: in assembly where there is
// some, else softcapExpGo.
func softcapExpBlocks[T ceIn](e, g []float32, x []T, c, rc, s float32, acc *[lanes]float64) {
	if len(x) == 0 {
		return
	}
	if useAsm && useFMA {
		softcapExpAsm(e, g, x, c, rc, s, acc)
		return
	}
	softcapExpGo(e, g, x, c, rc, s, acc)
}

// softcapExpGo is the definition the assembly matches: every element,
// then the sum by ceAddUnits.
func softcapExpGo[T ceIn](e, g []float32, x []T, c, rc, s float32, acc *[lanes]float64) {
	for i := range x {
		ei, gi := softcapExp1(ceWiden(x[i]), c, rc, s)
		e[i] = ei
		if g != nil {
			g[i] = gi
		}
	}
	ceAddUnits(e, acc)
}

// ceUnit is the span of elements whose exponentials meet in float32
// before the float64 lanes.
const ceUnit = 8 * lanes

// ceAddUnits adds the exponentials v of a row's whole blocks of 8 (v[0]
// the row's first) to the lanes. Each whole unit of 64 adds to lane j the
// float32 sums
//
//	lo = ((v[64c+j] + v[64c+16+j]) + v[64c+32+j]) + v[64c+48+j]
//	hi = ((v[64c+8+j] + v[64c+24+j]) + v[64c+40+j]) + v[64c+56+j]
//	acc[j] += float64(lo + hi)
//
// (lanes j and 8+j of the sum of four 16-lane vectors, folded); the blocks
// after the last whole unit add pairs, acc[j] += float64(v[16c+j] +
// v[16c+8+j]), and a last unpaired block v[16c+j] alone. Eight positive
// float32s sum within 4·2⁻²⁴ (relative), far inside ExpCE's 1.1 ulp and
// the rounding of each z − s, for an eighth of the widenings and float64
// adds.
func ceAddUnits(v []float32, acc *[lanes]float64) {
	i := 0
	for ; i+ceUnit <= len(v); i += ceUnit {
		u := v[i : i+ceUnit]
		for j := range lanes {
			lo := float32(float32(u[j]+u[16+j])+u[32+j]) + u[48+j]
			hi := float32(float32(u[8+j]+u[24+j])+u[40+j]) + u[56+j]
			acc[j] += float64(lo + hi)
		}
	}
	for ; i < len(v); i += 2 * lanes {
		for j := range lanes {
			if i+2*lanes <= len(v) {
				acc[j] += float64(v[i+j] + v[i+lanes+j])
			} else {
				acc[j] += float64(v[i+j])
			}
		}
	}
}

// ceGrad is CEGrad into float32 or bfloat16.
func ceGrad[T ceIn](dst []T, e, g []float32, q, scale float32) {
	full := 0
	if useAsm {
		full = len(e) & laneMask
		ceGradAsm(dst[:full], e[:full], g[:full], q, scale)
	}
	for i := full; i < len(e); i++ {
		dst[i] = ceNarrow[T](ceGrad1(e[i], g[i], q, scale))
	}
}

// ceInRange reports whether, for every x, z − s (SoftcapZ's z, the
// difference rounded) lies in [−87, 88], where ExpCE is its polynomial and
// needs none of its range checks: z is in [−c, c] for c > 0.
func ceInRange(c, s float32) bool {
	return c > 0 && -float64(c)-float64(s) >= -87 && float64(c)-float64(s) <= 88
}

// ceIsBF16 is 1 when T is bfloat16 bits, the assembly's flag.
func ceIsBF16[T ceIn]() int {
	var t T
	if unsafe.Sizeof(t) == 2 {
		return 1
	}
	return 0
}

// Rows of 16-bit logits take 65536 values at most, so SoftcapExp's e and
// e·g can be tabled once per cap and dtype and looked up: the same bits as
// computing them, at a gather an element.

// CETableLen is the length of the tables of SoftcapExpTable and
// CEGradTable: one entry per 16-bit pattern.
const CETableLen = 1 << 16

// SoftcapExpTable returns SoftcapExp's sum for a row of 16-bit logits x
// through te, the table of its e by bit pattern (SoftcapExpBF16 over
// every pattern, for bfloat16), and sets e[i] = te[x[i]] unless e is nil:
// the sum is SoftcapExp's bit for bit, in the same order.
func SoftcapExpTable(e []float32, x []uint16, te []float32) float64 {
	if e != nil {
		sameLen("SoftcapExpTable", "e", len(e), "x", len(x))
	}
	sameLen("SoftcapExpTable", "te", len(te), "CETableLen", CETableLen)
	var acc [lanes]float64
	full := len(x) & laneMask
	if useAsm && full > 0 {
		ceTableSumAsm(e, x[:full], te, &acc)
	} else {
		ceTableSumGo(e, x[:full], te, &acc)
	}
	sum := sum8(&acc)
	for i := full; i < len(x); i++ {
		v := te[x[i]]
		if e != nil {
			e[i] = v
		}
		sum += float64(v)
	}
	return sum
}

// CEGradTable is CEGrad for a row of 16-bit logits x through teg, the
// table of float32(e·g) by bit pattern:
//
//	dst[i] = (teg[x[i]]·q)·scale   (each product rounded to float32)
func CEGradTable(dst []float32, x []uint16, teg []float32, q, scale float32) {
	ceGradTable(dst, x, teg, q, scale)
}

// CEGradTableBF16 is CEGradTable rounded to bfloat16 (as ToBF16 rounds).
func CEGradTableBF16(dst []uint16, x []uint16, teg []float32, q, scale float32) {
	ceGradTable(dst, x, teg, q, scale)
}

// CEGradTableF16 is CEGradTable rounded to binary16 (as ToF16 rounds),
// in registers.
func CEGradTableF16(dst []uint16, x []uint16, teg []float32, q, scale float32) {
	sameLen("CEGradTableF16", "dst", len(dst), "x", len(x))
	sameLen("CEGradTableF16", "teg", len(teg), "CETableLen", CETableLen)
	full := 0
	if useAsm && hasF16C {
		full = len(x) & laneMask
		ceGradTableAsm(dst[:full], x[:full], teg, q, scale, true)
	}
	for i := full; i < len(x); i++ {
		dst[i] = backend.F16Bits(float32(teg[x[i]]*q) * scale)
	}
}

// ceTableSumGo is the definition the assembly matches: ceAddUnits over
// te's entries for e, a unit at a time.
func ceTableSumGo(e []float32, x []uint16, te []float32, acc *[lanes]float64) {
	var u [ceUnit]float32
	for i := 0; i < len(x); i += ceUnit {
		n := min(ceUnit, len(x)-i)
		for j := range n {
			u[j] = te[x[i+j]]
		}
		if e != nil {
			copy(e[i:i+n], u[:n])
		}
		ceAddUnits(u[:n], acc)
	}
}

// ceGradTable is CEGradTable into float32 or bfloat16.
func ceGradTable[T ceIn](dst []T, x []uint16, teg []float32, q, scale float32) {
	sameLen("CEGradTable", "dst", len(dst), "x", len(x))
	sameLen("CEGradTable", "teg", len(teg), "CETableLen", CETableLen)
	full := 0
	if useAsm {
		full = len(x) & laneMask
		ceGradTableAsm(dst[:full], x[:full], teg, q, scale, false)
	}
	for i := full; i < len(x); i++ {
		dst[i] = ceNarrow[T](float32(teg[x[i]]*q) * scale)
	}
}

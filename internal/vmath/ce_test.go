package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/cputime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ceRow is n logits: normal with standard deviation sd, and with
// probability pSpecial a value from specials instead.
func ceRow(r *rand.Rand, n int, sd, pSpecial float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(sd * r.NormFloat64())
		if r.Float64() < pSpecial {
			x[i] = specials[r.IntN(len(specials))]
		}
	}
	return x
}

// ceOrderRow is n logits whose exponentials at cap c and shift c make
// the float64 sums depend on their order: one in eight is +Inf (e = 1),
// the rest have z − c near −28 (e near 2⁻⁴⁰, its low bits below the
// float64 ulp of a sum near 1). It needs c ≥ 14.
func ceOrderRow(r *rand.Rand, n int, c float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(math.Inf(1))
		if r.IntN(8) != 0 {
			z := c - 28 + r.NormFloat64()
			x[i] = float32(c * math.Atanh(z/c))
		}
	}
	return x
}

// ceBF16Row is x truncated to bfloat16 bit patterns, with about one in
// oddOne replaced by a signalling-looking NaN, a denormal or an infinity
// (none if oddOne is 0).
func ceBF16Row(r *rand.Rand, x []float32, oddOne int) []uint16 {
	out := make([]uint16, len(x))
	odd := []uint16{0x7f81, 0xff81, 0x0001, 0x8001, 0x7f80, 0xff80}
	for i, v := range x {
		out[i] = uint16(math.Float32bits(v) >> 16)
		if oddOne > 0 && r.IntN(oddOne) == 0 {
			out[i] = odd[r.IntN(len(odd))]
		}
	}
	return out
}

// ceSameBits asserts that got and want hold the same float32s (any NaN
// matching any NaN), naming the first difference.
func ceSameBits(t *testing.T, got, want []float32, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		if !same(got[i], want[i]) {
			require.Failf(t, what, "[%d] = %v (%#x), want %v (%#x)", i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// ceUnitSum is SoftcapExp's summation order written out: from each whole
// unit of 64, lane j takes the float32 sum of its elements 64c+16b+j (b =
// 0..3, in order) plus that of its elements 64c+16b+8+j; after the last
// whole unit, float32(v[16c+j] + v[16c+8+j]) from each whole unit of 16
// and v[16c+j] from a last block of 8; the lanes meet in the tree of
// laneSum, then the tail is added in order.
func ceUnitSum(v []float32) float64 {
	var l [8]float64
	full := len(v) / 8 * 8
	i := 0
	for ; i+64 <= full; i += 64 {
		for j := range 8 {
			var lo, hi float32
			for b := range 4 {
				lo += v[i+16*b+j]
				hi += v[i+16*b+8+j]
			}
			l[j] += float64(lo + hi)
		}
	}
	for ; i < full; i += 16 {
		for j := range 8 {
			if i+16 <= full {
				l[j] += float64(v[i+j] + v[i+8+j])
			} else {
				l[j] += float64(v[i+j])
			}
		}
	}
	s := ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
	for _, e := range v[full:] {
		s += float64(e)
	}
	return s
}

// softcapExpWant is SoftcapExp's contract written out element by element
// with SoftcapZ and ExpCE, and the sum in ceUnitSum's order.
func softcapExpWant(x []float32, c, s float32) (e, g []float32, sum float64) {
	e, g = make([]float32, len(x)), make([]float32, len(x))
	for i, v := range x {
		z, gi := SoftcapZ(v, c)
		e[i] = ExpCE(float32(z - s))
		g[i] = gi
	}
	return e, g, ceUnitSum(e)
}

// TestSoftcapExpBits checks every implementation of SoftcapExp and
// SoftcapExpBF16 bit for bit against the element-wise contract, over every
// tail length, rows in and out of the odd polynomial's range, rows whose
// float64 sums depend on their order (ceOrderRow), specials (NaN, ±Inf,
// the range edges) and shifts that put blocks past the polynomial (run in
// Go).
func TestSoftcapExpBits(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		for _, n := range sizes {
			for _, c := range []float32{30, 1, 0.5, 60} {
				for _, kind := range []struct {
					name     string
					sd, pSpc float64
				}{{"narrow", 0.2 * float64(c), 0}, {"spread", 0.5 * float64(c), 0}, {"wide", 2 * float64(c), 0}, {"specials", float64(c), 0.1}, {"order", 0, 0}} {
					x := ceRow(r, n, kind.sd, kind.pSpc)
					if kind.name == "order" {
						if c < 14 {
							continue
						}
						x = ceOrderRow(r, n, float64(c))
					}
					zmax := float32(math.Inf(-1))
					for _, v := range x {
						z, _ := SoftcapZ(v, c)
						zmax = max(zmax, z)
					}
					for _, s := range []float32{c, zmax, -80} {
						what := fmt.Sprintf("n=%d c=%v %s s=%v", n, c, kind.name, s)
						wantE, wantG, wantSum := softcapExpWant(x, c, s)

						orig := append([]float32(nil), x...)
						e, checkE := guarded(n)
						g, checkG := guarded(n)
						sum := SoftcapExp(e, g, x, c, s)
						checkE(t, what+" e")
						checkG(t, what+" g")
						ceSameBits(t, x, orig, what+": x changed")
						ceSameBits(t, e, wantE, what+" e")
						ceSameBits(t, g, wantG, what+" g")
						assert.True(t, ceSameSum(sum, wantSum), "%s: sum %v, want %v", what, sum, wantSum)

						e2 := make([]float32, n)
						assert.True(t, ceSameSum(SoftcapExp(e2, nil, x, c, s), wantSum), "%s: sum without g", what)
						ceSameBits(t, e2, wantE, what+" e without g")

						xb := ceBF16Row(r, x, 50)
						wide := make([]float32, n)
						for i, b := range xb {
							wide[i] = math.Float32frombits(uint32(b) << 16)
						}
						wantE, wantG, wantSum = softcapExpWant(wide, c, s)
						eb, gb := make([]float32, n), make([]float32, n)
						sum = SoftcapExpBF16(eb, gb, xb, c, s)
						ceSameBits(t, eb, wantE, what+" bf16 e")
						ceSameBits(t, gb, wantG, what+" bf16 g")
						assert.True(t, ceSameSum(sum, wantSum), "%s: bf16 sum %v, want %v", what, sum, wantSum)

						sum = SoftcapExp(wide, nil, wide, c, s) // in place
						ceSameBits(t, wide, wantE, what+" in place")
						assert.True(t, ceSameSum(sum, wantSum), "%s: in-place sum", what)
					}
				}
			}
		}
	})
}

// TestSoftcapExpTies puts both exponentials of SoftcapExp on arguments
// whose float32 product x·log₂e is an integer plus a half: ExpCE rounds
// the exact product, which lies to one side of the tie, where rounding
// the float32 product (ties to even) would take the other k. They are
// tanh's e^{−2|x/c|} with c = 1, and e^{z−s} with s picked for each row.
func TestSoftcapExpTies(t *testing.T) {
	log2e := float32(math.Log2E)
	// tie returns a float32 y near (k + ½)/ln 2 with float32(y·log₂e) = k + ½.
	tie := func(k int) (float32, bool) {
		y := float32((float64(k) + 0.5) / math.Log2E)
		for range 64 {
			switch p := float64(float32(y * log2e)); {
			case p == float64(k)+0.5:
				return y, true
			case p < float64(k)+0.5:
				y = math.Nextafter32(y, float32(math.Inf(1)))
			default:
				y = math.Nextafter32(y, float32(math.Inf(-1)))
			}
		}
		return 0, false
	}
	var x []float32
	for k := 2; k <= 126; k++ {
		if y, ok := tie(k); ok && y/2*2 == y {
			x = append(x, y/2, -y/2) // SoftcapZ(±y/2, 1) takes e^{−y}
		}
	}
	require.Greater(t, len(x), 40, "too few ties of e^{2a}")
	forImpls(t, func(t *testing.T) {
		wantE, wantG, wantSum := softcapExpWant(x, 1, 1)
		e, g := make([]float32, len(x)), make([]float32, len(x))
		sum := SoftcapExp(e, g, x, 1, 1)
		ceSameBits(t, e, wantE, "ties of tanh's exponential: e")
		ceSameBits(t, g, wantG, "ties of tanh's exponential: g")
		assert.True(t, ceSameSum(sum, wantSum), "ties of tanh's exponential: sum")

		row := make([]float32, 16)
		ties := 0
		for k := -125; k <= 0; k++ {
			v, ok := tie(k)
			if !ok {
				continue
			}
			const xv = 0.25
			z, _ := SoftcapZ(xv, 1)
			s := float32(z - v)
			if float32(z-s) != v {
				continue
			}
			ties++
			for i := range row {
				row[i] = xv
			}
			wantE, _, wantSum := softcapExpWant(row, 1, s)
			sum := SoftcapExp(e[:16], nil, row, 1, s)
			ceSameBits(t, e[:16], wantE, fmt.Sprintf("tie k=%d: e", k))
			assert.True(t, ceSameSum(sum, wantSum), "tie k=%d: sum", k)
		}
		require.Greater(t, ties, 40, "too few ties of e^{z−s}")
	})
}

// ceSameSum reports whether two float64 sums are the same bits, NaN
// matching NaN.
func ceSameSum(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
}

// TestSoftcapExpOracle checks SoftcapExp against float64 maths for finite
// rows: e within 6·c·2⁻²⁴ + 4 ulp (relatively) of exp(c·tanh(x/c) − s)
// (z's 2 ulp of |z| ≤ c and the rounding of z − s move e by about
// 4·c·2⁻²⁴), g within 1e-6 of 1 − tanh², and the sum within 1e-6
// relative.
func TestSoftcapExpOracle(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(23, 24))
		for _, n := range []int{1, 17, 1024, 4099} {
			for _, c := range []float64{30, 15, 1} {
				x := ceRow(r, n, c, 0)
				e, g := make([]float32, n), make([]float32, n)
				s, ok := SoftcapShift(float32(c))
				require.True(t, ok)
				sum := SoftcapExp(e, g, x, float32(c), s)
				exact := 0.0
				for i, v := range x {
					th := math.Tanh(float64(v) / c)
					z := c * th
					want := math.Exp(z - c)
					exact += want
					// z carries SoftcapZ's 2 ulp and the rounding of z − c:
					// up to ~4 ulp of c absolute, which moves e relatively by
					// as much.
					relTol := 6 * c * 0x1p-24
					assert.InEpsilon(t, want, float64(e[i]), relTol+4*0x1p-24, "n=%d c=%v e[%d] (x %v)", n, c, i, v)
					assert.InDelta(t, 1-th*th, float64(g[i]), 1e-6, "n=%d c=%v g[%d] (x %v)", n, c, i, v)
				}
				assert.InEpsilon(t, exact, sum, 6*c*0x1p-24+1e-6, "n=%d c=%v sum", n, c)
			}
		}
	})
}

// ceSweep is every stride-th float32 from lo to hi (both finite, lo ≤
// hi), in bit order through zero, then extra.
func ceSweep(lo, hi float32, stride uint32, extra ...float32) []float32 {
	var x []float32
	// Negative values count down in bits from −0, positive ones up from +0.
	if lo < 0 {
		end := math.Float32bits(0) | 1<<31
		if hi < 0 {
			end = math.Float32bits(hi)
		}
		for b := math.Float32bits(lo); b >= end && b >= 1<<31; b -= stride {
			x = append(x, math.Float32frombits(b))
		}
	}
	if hi >= 0 {
		b := uint32(0)
		if lo > 0 {
			b = math.Float32bits(lo)
		}
		for ; b <= math.Float32bits(hi); b += stride {
			x = append(x, math.Float32frombits(b))
		}
	}
	return append(x, extra...)
}

// TestExpCEAccuracy checks ExpCE against math.Exp over every 2003rd
// float32 of [−87.3, 89] (a million arguments, every binade from the
// subnormals up) and the edges: within 1.1 ulp (the polynomial's 2·10⁻⁹
// and the roundings of r and of Horner's last steps; over every seventh
// float32 the worst is 1.07 ulp) up to the largest float32 and +Inf past
// it (by the same margin), 0 below −87.3, NaN for NaN. SoftcapExp at a cap so large that z = x exactly runs
// ExpCE through every implementation: the same bits.
func TestExpCEAccuracy(t *testing.T) {
	inf := float32(math.Inf(1))
	x := ceSweep(-87.3, 89, 2003, 0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-38, 0x1p-24, -0x1p-25,
		-87.3, math.Nextafter32(-87.3, 0), math.Nextafter32(-87.3, -inf), 88, math.Nextafter32(88, inf), 88.72, 88.7228, 88.73,
		88.722835, 88.72284, 88.72283, 89, math.Nextafter32(89, inf), 90, -88, -103, -104, -1e30, 1e30, inf, -inf, float32(math.NaN()), float32(math.Log(2)/2), -float32(math.Log(2)/2))
	worst, at := 0.0, float32(0)
	for _, v := range x {
		got := ExpCE(v)
		switch {
		case v != v:
			if got == got {
				require.Fail(t, "ExpCE(NaN) is not NaN", "%v", got)
			}
		case v < expLo:
			if got != 0 {
				require.Zero(t, got, "ExpCE(%v), flushed", v)
			}
		case v > 88.7:
			// Near and past the largest float32, 2¹⁰⁴ apart there: +Inf
			// where e^x is within 1.1 of those ulps of overflowing.
			want := math.Exp(float64(v))
			top := float64(math.MaxFloat32) + 0x1p103 // rounds to +Inf from here
			switch {
			case math.IsInf(float64(got), 1):
				if want < top-1.1*0x1p104 {
					require.Fail(t, "ExpCE overflows early", "ExpCE(%v) = +Inf, e^x = %v", v, want)
				}
			case want >= top+1.1*0x1p104:
				require.Fail(t, "ExpCE does not overflow", "ExpCE(%v) = %v, e^x = %v", v, got, want)
			default:
				if e := math.Abs(float64(got)-want) / 0x1p104; e > worst {
					worst, at = e, v
				}
			}
		default:
			if e := ulps(got, math.Exp(float64(v))); e > worst {
				worst, at = e, v
			}
		}
	}
	t.Logf("ExpCE: worst %.3f ulp at %v over %d arguments", worst, at, len(x))
	assert.LessOrEqual(t, worst, 1.1, "ExpCE: worst error in ulp, at %v", at)

	want := make([]float32, len(x))
	for i, v := range x {
		want[i] = ExpCE(v)
	}
	forImpls(t, func(t *testing.T) {
		e := make([]float32, len(x))
		SoftcapExp(e, nil, x, 1e30, 0)
		ceSameBits(t, e, want, "SoftcapExp at cap 1e30: ExpCE")
	})
}

// TestSoftcapZAccuracy checks SoftcapZ against float64 maths over every
// 4001st float32 x in [−60c, 60c] (both of its branches, and saturation)
// and the edges, for caps from 0.7 to 30: z within 2 ulp of c·tanh(x/c)
// (1 ulp where |x/c| < 0.6, the odd polynomial), g within (4 + 2|x/c|)
// float32 epsilons of sech²(x/c) relatively (the rounding of y = x/c is
// multiplied by 2|y| in sech²'s relative error: e^{−2|y|} is all of it far
// out), and 0 where ExpCE flushes e^{−2|x/c|} (2|x/c| > 87.3). Every
// implementation of SoftcapExp returns the same g, and of SoftcapZ (scalar
// FMA instructions, or Go) the same z and g.
func TestSoftcapZAccuracy(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range []float32{30, 5.5, 1, 0.7} {
		edge := 0.625 * c
		x := ceSweep(-60*c, 60*c, 4001, 0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-38, -3e-39,
			edge, -edge, math.Nextafter32(edge, 0), math.Nextafter32(edge, inf), c, -c, inf, -inf, nan,
			math.MaxFloat32, -math.MaxFloat32, 1e30, -1e30)
		worst, at, worstPoly, atPoly, worstG, atG := 0.0, float32(0), 0.0, float32(0), 0.0, float32(0)
		wantZ, wantG := make([]float32, len(x)), make([]float32, len(x))
		for i, v := range x {
			z, g := SoftcapZ(v, c)
			wantZ[i], wantG[i] = z, g
			if v != v {
				if z == z || g == g {
					require.Fail(t, "SoftcapZ(NaN) is not NaN", "c=%v: z %v g %v", c, z, g)
				}
				continue
			}
			y := float64(v) / float64(c)
			e := ulps(z, float64(c)*math.Tanh(y))
			if e > worst {
				worst, at = e, v
			}
			if math.Abs(y) < 0.6 && e > worstPoly {
				worstPoly, atPoly = e, v
			}
			ch := math.Cosh(y)
			sech2 := 1 / (ch * ch)
			r := math.Abs(float64(g)-sech2) / sech2 / (4 + 2*math.Abs(y)) * 0x1p24
			switch {
			case 2*math.Abs(y) > 87.29 && g == 0: // ExpCE's flush of e^{−2|y|}
			case 2*math.Abs(y) > 87.31:
				require.Zero(t, g, "c=%v x=%v: g is not flushed (sech² %v)", c, v, sech2)
			case r > worstG:
				worstG, atG = r, v
			}
		}
		t.Logf("c=%v: z worst %.3f ulp at x=%v, %.3f where |x/c| < 0.6 (at %v); g worst %.3f of its bound at x=%v (%d arguments)",
			c, worst, at, worstPoly, atPoly, worstG, atG, len(x))
		assert.LessOrEqual(t, worst, 2.0, "c=%v: z's worst error in ulp, at %v", c, at)
		assert.LessOrEqual(t, worstPoly, 1.0, "c=%v: z's worst error in ulp below 0.6c, at %v", c, atPoly)
		assert.LessOrEqual(t, worstG, 1.0, "c=%v: g's worst error against its bound, at %v", c, atG)
		for _, v := range []float32{inf, -inf} {
			z, g := SoftcapZ(v, c)
			assert.Equal(t, float32(math.Copysign(float64(c), float64(v))), z, "SoftcapZ(%v, %v)", v, c)
			assert.Zero(t, g, "SoftcapZ(%v, %v): g", v, c)
		}
		forImpls(t, func(t *testing.T) {
			e, g := make([]float32, len(x)), make([]float32, len(x))
			SoftcapExp(e, g, x, c, c)
			ceSameBits(t, g, wantG, fmt.Sprintf("SoftcapExp c=%v: g", c))
			z1, g1 := make([]float32, len(x)), make([]float32, len(x))
			for i, v := range x {
				z1[i], g1[i] = SoftcapZ(v, c)
			}
			ceSameBits(t, z1, wantZ, fmt.Sprintf("SoftcapZ c=%v: z", c))
			ceSameBits(t, g1, wantG, fmt.Sprintf("SoftcapZ c=%v: g", c))
		})
	}
}

// TestSoftcapShift pins which caps shift by themselves.
func TestSoftcapShift(t *testing.T) {
	for _, c := range []float32{30, 40, 1e-3, 0.5} {
		s, ok := SoftcapShift(c)
		assert.True(t, ok, "cap %v", c)
		assert.Equal(t, c, s)
		// The most negative exponent the cap allows stays a normal float32.
		assert.GreaterOrEqual(t, math.Exp(-2*float64(c)), 0x1p-126, "cap %v", c)
	}
	for _, c := range []float32{40.01, 100, 0, -1, float32(math.NaN()), float32(math.Inf(1))} {
		_, ok := SoftcapShift(c)
		assert.False(t, ok, "cap %v", c)
	}
}

// ceBF16Round is round-to-nearest-even of v to a bfloat16 bit pattern,
// written independently of bf16Bits: the nearer of the two truncations
// around v, compared in float64 (the one past the largest finite value
// counting as 2¹²⁸), ties to the even one; NaN quiet with its sign.
func ceBF16Round(v float32) uint16 {
	bits := math.Float32bits(v)
	if v != v {
		return uint16(bits>>16) | 0x40
	}
	lo := uint16(bits >> 16)
	if math.IsInf(float64(v), 0) {
		return lo
	}
	hi := lo + 1
	val := func(h uint16) float64 {
		if h&0x7fff == 0x7f80 {
			return math.Copysign(0x1p128, float64(v))
		}
		return float64(math.Float32frombits(uint32(h) << 16))
	}
	dl, dh := math.Abs(float64(v)-val(lo)), math.Abs(float64(v)-val(hi))
	switch {
	case dl < dh:
		return lo
	case dh < dl:
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

// TestCEGrad checks CEGrad and CEGradBF16 bit for bit against their
// element-wise contract and, for finite inputs, against float64.
func TestCEGrad(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(25, 26))
		for _, n := range sizes {
			for _, q := range []float32{1.0 / 300, 3e20, 1} {
				e := randRow(r, n, 0, 1)
				g := randRow(r, n, 0, 1)
				const scale = 1.0 / 8192
				dst, check := guarded(n)
				CEGrad(dst, e, g, q, scale)
				what := fmt.Sprintf("CEGrad n=%d q=%v", n, q)
				check(t, what)
				want := make([]float32, n)
				for i := range e {
					want[i] = float32(float32(e[i]*g[i])*q) * scale
				}
				ceSameBits(t, dst, want, what)
				for i := range e {
					// Where no intermediate leaves float32's normal range.
					eg := float64(e[i]) * float64(g[i])
					if w := eg * float64(q) * scale; ceNormal32(eg) && ceNormal32(eg*float64(q)) && ceNormal32(w) {
						assert.InEpsilon(t, w, float64(dst[i]), 4*0x1p-24, "%s [%d]", what, i)
					}
				}

				db := make([]uint16, n+8)
				for i := range db {
					db[i] = 0xbeef
				}
				CEGradBF16(db[:n], e, g, q, scale)
				for i := range n {
					require.Equal(t, ceBF16Round(want[i]), db[i], "%s bf16 [%d] of %v", what, i, want[i])
				}
				for i := n; i < n+8; i++ {
					require.Equal(t, uint16(0xbeef), db[i], "%s bf16 wrote past the end", what)
				}

				inPlace := append([]float32(nil), e...)
				CEGrad(inPlace, inPlace, g, q, scale)
				ceSameBits(t, inPlace, want, what+" in place")
			}
		}
	})
}

// ceNormal32 reports whether v is within float32's normal range.
func ceNormal32(v float64) bool {
	return math.Abs(v) >= 0x1p-126 && math.Abs(v) <= math.MaxFloat32
}

// ceTables is SoftcapExpBF16's e and float32(e·g) for every bfloat16
// pattern.
func ceTables(c, s float32) (te, teg []float32) {
	all := make([]uint16, CETableLen)
	for i := range all {
		all[i] = uint16(i)
	}
	te, g := make([]float32, CETableLen), make([]float32, CETableLen)
	SoftcapExpBF16(te, g, all, c, s)
	teg = make([]float32, CETableLen)
	for i := range te {
		teg[i] = te[i] * g[i]
	}
	return te, teg
}

// TestCETableBits checks SoftcapExpTable and CEGradTable, through tables
// built with SoftcapExpBF16, bit for bit against SoftcapExpBF16 and CEGrad
// on the same rows: every tail length, specials among the patterns.
func TestCETableBits(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(27, 28))
		for _, c := range []float32{30, 2} {
			te, teg := ceTables(c, c)
			for _, n := range sizes {
				x := ceBF16Row(r, ceRow(r, n, 0.5*float64(c), 0.05), 30)
				if c >= 14 {
					x = ceBF16Row(r, ceOrderRow(r, n, float64(c)), 30)
				}
				what := fmt.Sprintf("c=%v n=%d", c, n)
				wantE, wantG := make([]float32, n), make([]float32, n)
				wantSum := SoftcapExpBF16(wantE, wantG, x, c, c)

				e, check := guarded(n)
				sum := SoftcapExpTable(e, x, te)
				check(t, what+" e")
				ceSameBits(t, e, wantE, what+" e")
				assert.True(t, ceSameSum(sum, wantSum), "%s: sum %v, want %v", what, sum, wantSum)
				assert.True(t, ceSameSum(SoftcapExpTable(nil, x, te), wantSum), "%s: sum without e", what)

				const q, scale = 1.0 / 700, 1.0 / 4096
				want := make([]float32, n)
				CEGrad(want, wantE, wantG, q, scale)
				dst, check := guarded(n)
				CEGradTable(dst, x, teg, q, scale)
				check(t, what+" grad")
				ceSameBits(t, dst, want, what+" grad")
				wantB, dstB := make([]uint16, n), make([]uint16, n)
				CEGradBF16(wantB, wantE, wantG, q, scale)
				CEGradTableBF16(dstB, x, teg, q, scale)
				assert.Equal(t, wantB, dstB, "%s: bf16 grad", what)
				wantH, dstH := make([]uint16, n), make([]uint16, n)
				for i, v := range want {
					wantH[i] = backend.F16Bits(v)
				}
				CEGradTableF16(dstH, x, teg, q, scale)
				assert.Equal(t, wantH, dstH, "%s: binary16 grad", what)
			}
		}
	})
}

// TestCETableOrder runs the table kernels over a table of random values
// across 60 binades, where nearly every float64 add rounds and any other
// order of the sum shows in its bits: sums against ceUnitSum, gradients
// against their formula.
func TestCETableOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	te := make([]float32, CETableLen)
	for i := range te {
		te[i] = float32(math.Ldexp(1+r.Float64(), -r.IntN(60)))
	}
	forImpls(t, func(t *testing.T) {
		for _, n := range sizes {
			x := make([]uint16, n)
			for i := range x {
				x[i] = uint16(r.Uint32())
			}
			want := make([]float32, n)
			for i, b := range x {
				want[i] = te[b]
			}
			e := make([]float32, n)
			sum := SoftcapExpTable(e, x, te)
			ceSameBits(t, e, want, fmt.Sprintf("n=%d e", n))
			assert.True(t, ceSameSum(sum, ceUnitSum(want)), "n=%d: sum %v, want %v", n, sum, ceUnitSum(want))

			const q, scale = 3.5, 1.0 / 3
			dst := make([]float32, n)
			CEGradTable(dst, x, te, q, scale)
			for i := range want {
				want[i] = float32(want[i]*q) * scale
			}
			ceSameBits(t, dst, want, fmt.Sprintf("n=%d grad", n))

			// binary16: te's 60 binades give subnormal halves and zeros;
			// q = 1e5 takes the largest past 65504, to infinity.
			for _, q := range []float32{q, 1e5} {
				d16 := make([]uint16, n+8)
				for i := range d16 {
					d16[i] = 0xdead
				}
				CEGradTableF16(d16[:n], x, te, q, scale)
				for i, b := range x {
					v := float64(te[b]) * float64(q)
					v = float64(float32(v)) * float64(float32(scale))
					require.Equal(t, backend.F16Bits(float32(v)), d16[i], "n=%d q=%v binary16 grad [%d]", n, q, i)
				}
				for i := n; i < n+8; i++ {
					require.Equal(t, uint16(0xdead), d16[i], "n=%d: binary16 grad wrote past the end", n)
				}
			}
		}
	})
}

func TestCELengthPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"SoftcapExp e":        func() { SoftcapExp(make([]float32, 7), nil, make([]float32, 8), 1, 1) },
		"SoftcapExp g":        func() { SoftcapExp(make([]float32, 8), make([]float32, 9), make([]float32, 8), 1, 1) },
		"SoftcapExpBF16 e":    func() { SoftcapExpBF16(make([]float32, 9), nil, make([]uint16, 8), 1, 1) },
		"CEGrad":              func() { CEGrad(make([]float32, 8), make([]float32, 8), make([]float32, 7), 1, 1) },
		"CEGradBF16":          func() { CEGradBF16(make([]uint16, 7), make([]float32, 8), make([]float32, 8), 1, 1) },
		"SoftcapExpTable e":   func() { SoftcapExpTable(make([]float32, 7), make([]uint16, 8), make([]float32, CETableLen)) },
		"SoftcapExpTable te":  func() { SoftcapExpTable(nil, make([]uint16, 8), make([]float32, 100)) },
		"CEGradTable dst":     func() { CEGradTable(make([]float32, 7), make([]uint16, 8), make([]float32, CETableLen), 1, 1) },
		"CEGradTableBF16 teg": func() { CEGradTableBF16(make([]uint16, 8), make([]uint16, 8), make([]float32, 8), 1, 1) },
		"CEGradTableF16 dst":  func() { CEGradTableF16(make([]uint16, 7), make([]uint16, 8), make([]float32, CETableLen), 1, 1) },
		"CEGradTableF16 teg":  func() { CEGradTableF16(make([]uint16, 8), make([]uint16, 8), make([]float32, 8), 1, 1) },
	} {
		assert.Panics(t, f, name)
	}
}

// Benchmarks over one row (1024 logits, in L1): the kernels' compute
// bound, since no byte comes from memory. narrow rows stay in SoftcapZ's
// odd polynomial (|x/c| < 0.625, as N(0, 1) logits at cap 30 do); wide
// rows take its exponential branch in most blocks. cpu-ns/op is the
// process's CPU time per row, the repeatable figure on a shared machine.

// ceImpls runs f per implementation (Go, AVX2, AVX-512 where present)
// and reports elements per CPU second.
func ceImpls(b *testing.B, f func(b *testing.B)) {
	saved, saved512 := useAsm, use512
	defer func() { useAsm, use512 = saved, saved512 }()
	for _, im := range []struct {
		name        string
		asm, avx512 bool
	}{{"go", false, false}, {"avx2", true, false}, {"avx512", true, true}} {
		if (im.asm && !saved) || (im.avx512 && !saved512) {
			continue
		}
		useAsm, use512 = im.asm, im.avx512
		b.Run(im.name, func(b *testing.B) {
			c0, _ := cputime.Now()
			f(b)
			if c1, ok := cputime.Now(); ok && c1 > c0 {
				per := float64(c1-c0) / float64(b.N)
				b.ReportMetric(per, "cpu-ns/op")
				b.ReportMetric(benchN/per*float64(time.Second)/1e6, "Melem/cpu-s")
			}
		})
	}
}

func BenchmarkSoftcapExp(b *testing.B) {
	for _, k := range []struct {
		name string
		sd   float64
	}{{"narrow", 1}, {"wide", 30}} {
		x := ceRow(rand.New(rand.NewPCG(1, 1)), benchN, k.sd, 0)
		xb := ceBF16Row(nil, x, 0)
		e, g := make([]float32, benchN), make([]float32, benchN)
		b.Run(k.name, func(b *testing.B) {
			ceImpls(b, func(b *testing.B) {
				for range b.N {
					SoftcapExp(e, nil, x, 30, 30)
				}
			})
		})
		b.Run(k.name+"/g", func(b *testing.B) {
			ceImpls(b, func(b *testing.B) {
				for range b.N {
					SoftcapExp(e, g, x, 30, 30)
				}
			})
		})
		b.Run(k.name+"/bf16", func(b *testing.B) {
			ceImpls(b, func(b *testing.B) {
				for range b.N {
					SoftcapExpBF16(e, g, xb, 30, 30)
				}
			})
		})
	}
}

func BenchmarkCEGrad(b *testing.B) {
	e, g := benchRow(0, 1), benchRow(0, 1)
	dst, db := make([]float32, benchN), make([]uint16, benchN)
	b.Run("f32", func(b *testing.B) {
		ceImpls(b, func(b *testing.B) {
			for range b.N {
				CEGrad(dst, e, g, 1.0/300, 1.0/8192)
			}
		})
	})
	b.Run("bf16", func(b *testing.B) {
		ceImpls(b, func(b *testing.B) {
			for range b.N {
				CEGradBF16(db, e, g, 1.0/300, 1.0/8192)
			}
		})
	})
}

func BenchmarkSoftcapExpTable(b *testing.B) {
	te, _ := ceTables(30, 30)
	x := ceBF16Row(nil, ceRow(rand.New(rand.NewPCG(1, 1)), benchN, 1, 0), 0)
	e := make([]float32, benchN)
	b.Run("sum", func(b *testing.B) {
		ceImpls(b, func(b *testing.B) {
			for range b.N {
				SoftcapExpTable(nil, x, te)
			}
		})
	})
	b.Run("e", func(b *testing.B) {
		ceImpls(b, func(b *testing.B) {
			for range b.N {
				SoftcapExpTable(e, x, te)
			}
		})
	})
}

func BenchmarkCEGradTable(b *testing.B) {
	_, teg := ceTables(30, 30)
	x := ceBF16Row(nil, ceRow(rand.New(rand.NewPCG(1, 1)), benchN, 1, 0), 0)
	dst, db := make([]float32, benchN), make([]uint16, benchN)
	b.Run("f32", func(b *testing.B) {
		ceImpls(b, func(b *testing.B) {
			for range b.N {
				CEGradTable(dst, x, teg, 1.0/300, 1.0/8192)
			}
		})
	})
	b.Run("bf16", func(b *testing.B) {
		ceImpls(b, func(b *testing.B) {
			for range b.N {
				CEGradTableBF16(db, x, teg, 1.0/300, 1.0/8192)
			}
		})
	})
	b.Run("f16", func(b *testing.B) {
		ceImpls(b, func(b *testing.B) {
			for range b.N {
				CEGradTableF16(db, x, teg, 1.0/300, 1.0/8192)
			}
		})
	})
}

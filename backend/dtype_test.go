package backend

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// format describes a binary floating-point format for the reference
// rounding below: fraction bits and the exponent range of normal numbers.
type format struct {
	name       string
	dt         DType
	frac       int // fraction bits (significand bits − 1)
	emin, emax int
	bits       func(float32) uint16
	widen      func(uint16) float32
}

var (
	bf16Format = format{"bf16", BF16, 7, -126, 127, BF16Bits, BF16Float}
	f16Format  = format{"fp16", F16, 10, -14, 15, F16Bits, F16Float}
)

// roundRef rounds x to f with round-to-nearest-even, in float64, the slow
// way: find the two representable neighbours lo ≤ |x| < hi (spaced by the
// quantum of |x|'s binade, or the subnormal quantum below the normal
// range), take the nearer, and on a tie the one with an even significand.
// Results above the largest finite value become Inf.
func roundRef(x float64, f format) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	a := math.Abs(x)
	_, e := math.Frexp(a) // a in [2^(e-1), 2^e)
	q := math.Ldexp(1, max(e-1, f.emin)-f.frac)
	k := math.Floor(a / q)
	lo, hi := k*q, (k+1)*q
	var r float64
	switch {
	case a-lo < hi-a:
		r = lo
	case a-lo > hi-a:
		r = hi
	case math.Mod(k, 2) == 0:
		r = lo
	default:
		r = hi
	}
	if maxFinite := (2 - math.Ldexp(1, -f.frac)) * math.Ldexp(1, f.emax); r > maxFinite {
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

// sameValue: equal values with equal signs of zero, or both NaN.
func sameValue(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b && math.Signbit(a) == math.Signbit(b)
}

func isNaNBits(b uint16, f format) bool {
	expMask := uint16(0x7fff) &^ (1<<f.frac - 1)
	return b&expMask == expMask && b&(1<<f.frac-1) != 0
}

// TestRoundTripExhaustive: every 16-bit pattern widens and rounds back to
// itself; NaN patterns stay NaN.
func TestRoundTripExhaustive(t *testing.T) {
	for _, f := range []format{bf16Format, f16Format} {
		nans := 0
		for i := 0; i < 1<<16; i++ {
			b := uint16(i)
			w := f.widen(b)
			back := f.bits(w)
			// Plain checks, require only on a mismatch: its unconditional
			// t.Helper costs half a second over the 2^17 patterns.
			if isNaNBits(b, f) {
				nans++
				if !math.IsNaN(float64(w)) || !isNaNBits(back, f) {
					require.Failf(t, "a NaN pattern lost its NaN", "%s: NaN pattern %#04x widened to %g and back to %#04x", f.name, b, w, back)
				}
				continue
			}
			if back != b {
				require.Failf(t, "round trip changed the pattern", "%s: %#04x widened to %g rounds back to %#04x", f.name, b, w, back)
			}
			// Widening is exact: the value is representable in f.
			if !sameValue(roundRef(float64(w), f), float64(w)) {
				require.Failf(t, "widening is not exact", "%s: %#04x widens to %g, which is not representable", f.name, b, w)
			}
		}
		assert.Equal(t, 2*(1<<f.frac-1), nans, "%s: number of NaN patterns", f.name)
	}
}

// checkRound compares f's rounding of x with roundRef and returns false
// (after reporting) on a mismatch.
func checkRound(t *testing.T, f format, x float32) bool {
	t.Helper()
	got := float64(f.widen(f.bits(x)))
	want := roundRef(float64(x), f)
	if !sameValue(got, want) {
		assert.Failf(t, "rounding differs from the reference", "%s: round(%g = %#08x) = %g, want %g", f.name, x, math.Float32bits(x), got, want)
		return false
	}
	// Round agrees with the bit functions.
	if r := float64(Round(f.dt, x)); !sameValue(r, got) {
		assert.Failf(t, "Round differs from the bit functions", "%s: Round(%g) = %g, bits give %g", f.name, x, r, got)
		return false
	}
	return true
}

// TestRoundingEdges: hand-picked inputs with their known results.
func TestRoundingEdges(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	negZero := math.Copysign(0, -1)
	cases := []struct {
		f     format
		in    float64
		want  float64
		about string
	}{
		{f16Format, 65520, inf, "fp16 overflow threshold rounds to Inf"},
		{f16Format, -65520, -inf, "negative overflow"},
		{f16Format, float64(float32(65519.99)), 65504, "65519.99 rounds down to max"},
		{f16Format, float64(math.Nextafter32(65520, 0)), 65504, "the float32 just below the threshold"},
		{f16Format, 65504, 65504, "fp16 max"},
		{f16Format, 1e6, inf, "far above max"},
		{f16Format, 0x1p-24, 0x1p-24, "smallest fp16 subnormal"},
		{f16Format, 0x1p-25, 0, "half the smallest subnormal: tie to even 0"},
		{f16Format, -0x1p-25, negZero, "negative tie to -0"},
		{f16Format, 0x1.8p-25, 0x1p-24, "above the tie"},
		{f16Format, 0x3p-25, 0x2p-24, "subnormal tie 1.5 quanta: to even 2"},
		{f16Format, 0x5p-25, 0x2p-24, "subnormal tie 2.5 quanta: to even 2"},
		{f16Format, 0x1p-14, 0x1p-14, "smallest fp16 normal"},
		{f16Format, 0x1.ff8p-15, 0x1.ff8p-15, "largest fp16 subnormal"},
		{f16Format, 0x1.ffcp-15, 0x1p-14, "tie between largest subnormal (odd) and smallest normal"},
		{f16Format, 0x1.ffbp-15, 0x1.ff8p-15, "below that tie"},
		{f16Format, 1 + 0x1p-11, 1, "tie rounds down to even"},
		{f16Format, 1 + 0x3p-11, 1 + 0x1p-9, "tie rounds up to even"},
		{f16Format, -(1 + 0x3p-11), -(1 + 0x1p-9), "negative tie up"},
		{f16Format, 1 + 0x1p-11 + 0x1p-20, 1 + 0x1p-10, "just above a tie"},
		{bf16Format, 1 + 0x1p-8, 1, "tie rounds down to even"},
		{bf16Format, 1 + 0x3p-8, 1 + 0x1p-6, "tie rounds up to even"},
		{bf16Format, -(1 + 0x1p-8), -1, "negative tie down"},
		{bf16Format, 1 + 0x1p-8 + 0x1p-20, 1 + 0x1p-7, "just above a tie"},
		{bf16Format, 0x1p-133, 0x1p-133, "smallest bf16 subnormal"},
		{bf16Format, 0x1p-134, 0, "half of it: tie to 0"},
		{bf16Format, 0x3p-134, 0x1p-132, "subnormal tie up to even"},
		{bf16Format, 0x1p-149, 0, "float32 subnormal underflows"},
		{bf16Format, 0x1.fep127, 0x1.fep127, "bf16 max"},
		{bf16Format, 0x1.ffp127, inf, "tie above bf16 max rounds to Inf"},
		{bf16Format, 0x1.fefffep127, 0x1.fep127, "just below that tie"},
		{bf16Format, math.MaxFloat32, inf, "float32 max"},
	}
	for _, f := range []format{bf16Format, f16Format} {
		for _, x := range []float64{0, negZero, inf, -inf, nan, -nan} {
			cases = append(cases, struct {
				f     format
				in    float64
				want  float64
				about string
			}{f, x, x, "special value kept"})
		}
	}
	for _, c := range cases {
		x := float32(c.in)
		require.True(t, float64(x) == c.in || math.IsNaN(c.in), "test input %g is not a float32", c.in)
		got := float64(c.f.widen(c.f.bits(x)))
		assert.True(t, sameValue(got, c.want), "%s %s: round(%g) = %g, want %g", c.f.name, c.about, c.in, got, c.want)
		assert.True(t, sameValue(roundRef(c.in, c.f), c.want), "reference rounding disagrees on %s %s", c.f.name, c.about)
	}
	b := BF16Bits(float32(math.NaN()))
	assert.True(t, isNaNBits(b, bf16Format), "BF16Bits(NaN) = %#04x, not a NaN", b)
	b = BF16Bits(-float32(math.NaN()))
	assert.NotZero(t, b&0x8000, "BF16Bits(-NaN) = %#04x lost the sign", b)
}

// TestRoundingSweep: every subnormal and the neighbourhood of every binade
// boundary of both formats, their midpoints, then a million random float32
// bit patterns, against roundRef.
func TestRoundingSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(20240520, 1))
	for _, f := range []format{bf16Format, f16Format} {
		fails := 0
		check := func(x float32) {
			if !checkRound(t, f, x) {
				fails++
				if fails > 10 {
					t.FailNow()
				}
			}
		}
		// Every representable value, the midpoints to its neighbours and
		// the float32s adjacent to those midpoints.
		for i := 0; i < 1<<15; i++ {
			a := float64(f.widen(uint16(i)))
			b := float64(f.widen(uint16(i + 1)))
			if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) {
				continue
			}
			mid := float32((a + b) / 2)
			for _, x := range []float32{float32(a), mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1)))} {
				check(x)
				check(-x)
			}
		}
		for range 1_000_000 {
			check(math.Float32frombits(r.Uint32()))
		}
	}
}

func TestRoundSlice(t *testing.T) {
	xs := []float32{1 + 0x1p-8, 1 + 0x3p-8, 3.14159, -2.5e-3}
	want := make([]float32, len(xs))
	for i, x := range xs {
		want[i] = float32(roundRef(float64(x), bf16Format))
	}
	RoundSlice(BF16, xs)
	assert.Equal(t, want, xs, "RoundSlice(BF16)")
	ys := []float32{1 + 0x1p-20}
	RoundSlice(F32, ys)
	assert.Equal(t, []float32{1 + 0x1p-20}, ys, "RoundSlice(F32) leaves values alone")
}

// TestEps: Eps is the gap between 1 and the next representable number:
// 1+eps is representable, 1+eps/2 (a tie) rounds back to 1.
func TestEps(t *testing.T) {
	for _, c := range []struct {
		d DType
		f *format
	}{{BF16, &bf16Format}, {F16, &f16Format}, {F32, nil}} {
		eps := c.d.Eps()
		round := func(x float64) float64 { return float64(float32(x)) }
		if c.f != nil {
			round = func(x float64) float64 { return roundRef(x, *c.f) }
		}
		assert.Equal(t, 1+eps, round(1+eps), "%v: 1+Eps is representable", c.d)
		assert.Equal(t, 1.0, round(1+eps/2), "%v: 1+Eps/2 (a tie) rounds to 1", c.d)
		assert.Equal(t, 1+eps, round(1+eps*0.75), "%v: 1+0.75·Eps rounds up to 1+Eps", c.d)
		if c.f != nil {
			assert.Equal(t, math.Ldexp(1, -c.f.frac), eps, "%v: Eps, want 2^-%d", c.d, c.f.frac)
		}
	}
	assert.Panics(t, func() { I32.Eps() }, "I32.Eps()")
}

func TestParseDType(t *testing.T) {
	for _, c := range []struct {
		in   string
		want DType
	}{
		{"fp32", F32}, {"float32", F32}, {"f32", F32}, {" FP32 ", F32},
		{"fp16", F16}, {"float16", F16}, {"f16", F16}, {"half", F16}, {"Float16", F16},
		{"bf16", BF16}, {"bfloat16", BF16}, {"BF16", BF16},
	} {
		got, err := ParseDType(c.in)
		assert.NoError(t, err, "ParseDType(%q)", c.in)
		assert.Equal(t, c.want, got, "ParseDType(%q)", c.in)
	}
	for _, bad := range []string{"", "fp8", "int32", "i32", "bfloat", "float64"} {
		_, err := ParseDType(bad)
		assert.ErrorContains(t, err, "bf16, fp16 or fp32", "ParseDType(%q) names the valid choices", bad)
	}
	// Every float dtype's flag spelling and numpy name parse back to it.
	for _, d := range FloatDTypes {
		for _, s := range []string{d.String(), d.NumpyName()} {
			got, err := ParseDType(s)
			assert.NoError(t, err, "ParseDType(%q)", s)
			assert.Equal(t, d, got, "ParseDType(%q)", s)
		}
	}
}

func TestDTypeProperties(t *testing.T) {
	for _, c := range []struct {
		d          DType
		size       int
		str, numpy string
		float      bool
	}{
		{F32, 4, "fp32", "float32", true},
		{F16, 2, "fp16", "float16", true},
		{BF16, 2, "bf16", "bfloat16", true},
		{I32, 4, "i32", "int32", false},
	} {
		assert.Equal(t, c.size, c.d.Size(), "%s: Size", c.str)
		assert.Equal(t, c.str, c.d.String(), "%s: String", c.str)
		assert.Equal(t, c.numpy, c.d.NumpyName(), "%s: NumpyName", c.str)
		assert.Equal(t, c.float, c.d.IsFloat(), "%s: IsFloat", c.str)
	}
	assert.Len(t, FloatDTypes, 3, "FloatDTypes")
}

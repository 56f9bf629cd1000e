package vmath

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onlineCase is one call of OnlineSoftmax: a block of rows with their
// state before the call.
type onlineCase struct {
	rows, width, lds, n0, d, ldo int
	s, o, m                      []float32
	l                            []float64
}

// gap is the value test blocks hold between rows (past width, past d):
// OnlineSoftmax must leave it alone.
const gap = -777.25

// newOnlineCase draws a block: scores uniform in [lo, hi) (with about one
// in special replaced by a special value when special > 0), and states
// that are a first block (m = −Inf, ℓ = 0, o = 0), a running one, or now
// and then a NaN or infinite m.
func newOnlineCase(r *rand.Rand, rows, width, n0, d int, lo, hi float32, special int) *onlineCase {
	c := &onlineCase{rows: rows, width: width, lds: width + 3, n0: n0, d: d, ldo: d + 2}
	c.s = make([]float32, rows*c.lds)
	c.o = make([]float32, rows*c.ldo)
	c.m = make([]float32, rows)
	c.l = make([]float64, rows)
	for i := range c.s {
		c.s[i] = gap
		if i%c.lds < width {
			c.s[i] = lo + (hi-lo)*r.Float32()
			if special > 0 && r.IntN(special) == 0 {
				c.s[i] = specials[r.IntN(len(specials))]
			}
		}
	}
	for i := range c.o {
		c.o[i] = gap
	}
	for i := range rows {
		switch k := r.IntN(10); {
		case k < 3:
			c.m[i] = float32(math.Inf(-1))
			for j := range d {
				c.o[i*c.ldo+j] = 0
			}
			continue
		case k == 3 && special > 0:
			c.m[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), 0, float32(math.Copysign(0, -1))}[r.IntN(4)]
		case k == 4:
			c.m[i] = hi + 1 // above every score: the maximum does not move
		default:
			c.m[i] = lo + (hi-lo)*r.Float32()
		}
		c.l[i] = 1 + 100*r.Float64()
		for j := range d {
			c.o[i*c.ldo+j] = -3 + 6*r.Float32()
		}
	}
	return c
}

func (c *onlineCase) clone() *onlineCase {
	d := *c
	d.s, d.o = append([]float32(nil), c.s...), append([]float32(nil), c.o...)
	d.m, d.l = append([]float32(nil), c.m...), append([]float64(nil), c.l...)
	return &d
}

func (c *onlineCase) run() {
	OnlineSoftmax(c.s, c.lds, c.rows, c.width, c.n0, c.o, c.ldo, c.d, c.m, c.l)
}

// visible is row r's n.
func (c *onlineCase) visible(r int) int { return min(c.width, max(0, c.n0+r)) }

// checkSameOnline asserts that got holds want's bits everywhere (NaN
// matching NaN), gaps included.
func checkSameOnline(t *testing.T, what string, got, want *onlineCase) {
	t.Helper()
	for i := range want.s {
		if !same(got.s[i], want.s[i]) {
			require.Equal(t, math.Float32bits(want.s[i]), math.Float32bits(got.s[i]), "%s: s row %d col %d", what, i/want.lds, i%want.lds)
		}
	}
	for i := range want.o {
		if !same(got.o[i], want.o[i]) {
			require.Equal(t, math.Float32bits(want.o[i]), math.Float32bits(got.o[i]), "%s: o row %d col %d", what, i/want.ldo, i%want.ldo)
		}
	}
	for i := range want.m {
		if !same(got.m[i], want.m[i]) {
			require.Equal(t, math.Float32bits(want.m[i]), math.Float32bits(got.m[i]), "%s: m row %d", what, i)
		}
		if math.Float64bits(got.l[i]) != math.Float64bits(want.l[i]) && !(math.IsNaN(got.l[i]) && math.IsNaN(want.l[i])) {
			require.Equal(t, want.l[i], got.l[i], "%s: l row %d", what, i)
		}
	}
}

// TestOnlineSoftmaxBitwise runs every implementation against the Go
// definition (onlineRow, with the assembly off) over widths around the
// 8- and 16-lane blocks, causal offsets that give every n from 0 to the
// width, output widths with tails, and rows with NaN and infinite scores
// and states.
func TestOnlineSoftmaxBitwise(t *testing.T) {
	widths := []int{1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 79, 80, 100, 127, 128, 129, 255, 256, 257}
	forImpls(t, func(t *testing.T) {
		impl, impl512 := useAsm, use512
		defer func() { useAsm, use512 = impl, impl512 }()
		r := rand.New(rand.NewPCG(4, 1))
		for _, width := range widths {
			for _, d := range []int{0, 1, 16, 17, 64} {
				for _, n0 := range []int{-20, -3, 0, 1, width / 2, width - 13, width + 2} {
					for _, special := range []int{0, 8, 1} {
						lo, hi := float32(-30), float32(30)
						if special == 1 { // mostly specials: −Inf, +Inf and NaN rows
							lo, hi = -1, 1
						}
						want := newOnlineCase(r, 14, width, n0, d, lo, hi, special)
						got := want.clone()
						useAsm, use512 = false, false
						want.run()
						useAsm, use512 = impl, impl512
						got.run()
						checkSameOnline(t, fmt.Sprintf("width %d d %d n0 %d special %d", width, d, n0, special), got, want)
					}
				}
			}
		}
	})
}

// TestOnlineSoftmaxOracle checks one block step of every implementation
// against float64 arithmetic: the new maximum, the exponentials, ℓ and o
// rescaled, the invisible tail cleared, the rows with nothing visible
// left alone.
func TestOnlineSoftmaxOracle(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(4, 2))
		for _, width := range []int{5, 16, 37, 256} {
			for _, n0 := range []int{-4, 1, width - 6} {
				c := newOnlineCase(r, 14, width, n0, 19, -30, 30, 0)
				before := c.clone()
				c.run()
				for row := range c.rows {
					checkOnlineRow(t, fmt.Sprintf("width %d n0 %d row %d", width, n0, row), c, before, row)
				}
			}
		}
	})
}

// checkOnlineRow compares row r of c against the float64 step from before.
func checkOnlineRow(t *testing.T, what string, c, before *onlineCase, r int) {
	t.Helper()
	n := c.visible(r)
	s0, s := before.s[r*c.lds:r*c.lds+c.width], c.s[r*c.lds:r*c.lds+c.width]
	o0, o := before.o[r*c.ldo:r*c.ldo+c.d], c.o[r*c.ldo:r*c.ldo+c.d]
	m0, l0 := float64(before.m[r]), before.l[r]
	for i := n; i < c.width; i++ {
		require.Zero(t, s[i], "%s: s[%d] is not visible", what, i)
	}
	if n == 0 {
		require.Equal(t, before.m[r], c.m[r], "%s: m with nothing visible", what)
		require.Equal(t, l0, c.l[r], "%s: l with nothing visible", what)
		require.Equal(t, o0, o, "%s: o with nothing visible", what)
		return
	}
	mNew := m0
	for _, v := range s0[:n] {
		mNew = math.Max(mNew, float64(v))
	}
	require.Equal(t, mNew, float64(c.m[r]), "%s: m", what)
	alpha := math.Exp(m0 - mNew) // 0 for m0 = −Inf
	// α's relative error: ExpFMA's 2 ulp, and m0 − m' rounded to float32.
	alphaTol := 4*0x1p-24 + math.Abs(m0-mNew)*0x1p-24
	if math.IsInf(m0, -1) {
		alphaTol = 0
	}
	sum := 0.0
	for i, v := range s0[:n] {
		x := float64(v) - mNew
		want := math.Exp(x)
		sum += want
		// 2 ulp for ExpFMA, and the difference rounded to float32 (half an
		// ulp of x, relative to e^x).
		tol := want * (2*0x1p-24 + 2*0x1p-24 + math.Abs(x)*0x1p-24)
		if math.Abs(float64(s[i])-want) > tol {
			assert.InDelta(t, want, float64(s[i]), tol, "%s: p[%d] = e^%v", what, i, x)
		}
	}
	wantL := l0*alpha + sum
	// The block's sum: each of 16 float32 lanes adds ⌈n/16⌉ terms (one
	// rounding each, relative to the sum), on top of the terms' own errors
	// (2 ulp and up to 30·2⁻²⁴ from x's rounding, |x| ≤ 60 here).
	tol := l0*alpha*alphaTol + sum*float64((n+15)/16+4+30)*0x1p-24
	if math.Abs(c.l[r]-wantL) > tol {
		assert.InDelta(t, wantL, c.l[r], tol, "%s: l", what)
	}
	for i := range o {
		want := float64(o0[i]) * alpha
		tol := math.Abs(want) * (alphaTol + 0x1p-24)
		if math.Abs(float64(o[i])-want) > tol {
			assert.InDelta(t, want, float64(o[i]), tol, "%s: o[%d]", what, i)
		}
	}
}

// TestOnlineSoftmaxBlocks runs a long row through key blocks of several
// widths from a running state (m₀ = −5, ℓ₀ = 2, o = 1) and checks the end
// state against one float64 pass: m the maximum, ℓ = ℓ₀·e^{m₀−m} +
// Σ e^{s−m}, and o = e^{m₀−m}, the product of the rescales.
func TestOnlineSoftmaxBlocks(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(4, 3))
		const L, m0, l0 = 1000, -5, 2
		row := make([]float32, L)
		for i := range row {
			row[i] = -10 + 20*r.Float32() + float32(i)/50 // the maximum moves
		}
		mx := float64(m0)
		for _, v := range row {
			mx = math.Max(mx, float64(v))
		}
		sum := l0 * math.Exp(m0-mx)
		for _, v := range row {
			sum += math.Exp(float64(v) - mx)
		}
		for _, w := range []int{1, 16, 100, 256, L} {
			m, l, o := []float32{m0}, []float64{l0}, []float32{1, 1, 1}
			for u0 := 0; u0 < L; u0 += w {
				blk := append([]float32(nil), row[u0:min(L, u0+w)]...)
				OnlineSoftmax(blk, len(blk), 1, len(blk), len(blk), o, 3, 3, m, l)
			}
			assert.Equal(t, mx, float64(m[0]), "blocks of %d: m", w)
			assert.InEpsilon(t, sum, l[0], 2e-6, "blocks of %d: l", w)
			for _, v := range o {
				assert.InEpsilon(t, math.Exp(m0-mx), float64(v), 1e-5, "blocks of %d: o", w)
			}
		}
	})
}

func TestOnlineSoftmaxPanics(t *testing.T) {
	s, o, m, l := make([]float32, 40), make([]float32, 8), make([]float32, 2), make([]float64, 2)
	assert.Panics(t, func() { OnlineSoftmax(s, 20, 2, 21, 0, o, 4, 4, m, l) }, "width above lds")
	assert.Panics(t, func() { OnlineSoftmax(s, 30, 2, 20, 0, o, 4, 4, m, l) }, "s too short")
	assert.Panics(t, func() { OnlineSoftmax(s, 20, 2, 20, 0, o, 5, 4, m, l) }, "o too short")
	assert.Panics(t, func() { OnlineSoftmax(s, 20, 3, 10, 0, o, 2, 2, m, l) }, "m too short")
	assert.NotPanics(t, func() { OnlineSoftmax(s, 20, 2, 20, 0, o, 4, 4, m, l) })
}

// TestOnlineSoftmaxEnd checks every implementation bitwise against the Go
// definition, and against o/ℓ in float64: within 1.5 ulp.
func TestOnlineSoftmaxEnd(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		impl, impl512 := useAsm, use512
		defer func() { useAsm, use512 = impl, impl512 }()
		r := rand.New(rand.NewPCG(4, 4))
		for _, d := range []int{1, 7, 15, 16, 17, 64, 100} {
			for _, rows := range []int{1, 3, 14} {
				ldo := d + 5
				o0 := make([]float32, rows*ldo)
				for i := range o0 {
					o0[i] = gap
					if i%ldo < d {
						o0[i] = -5 + 10*r.Float32()
					}
				}
				l := make([]float64, rows)
				for i := range l {
					l[i] = math.Exp(10 * r.Float64()) // 1 to 22026: any ℓ ≥ 1
				}
				want, got := append([]float32(nil), o0...), append([]float32(nil), o0...)
				useAsm, use512 = false, false
				OnlineSoftmaxEnd(want, ldo, rows, d, l)
				useAsm, use512 = impl, impl512
				OnlineSoftmaxEnd(got, ldo, rows, d, l)
				for i := range want {
					if !same(got[i], want[i]) {
						require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "d %d rows %d: element %d", d, rows, i)
					}
					if i%ldo >= d {
						require.Equal(t, float32(gap), got[i], "d %d: element %d past d written", d, i)
						continue
					}
					if e := ulps(got[i], float64(o0[i])/l[i/ldo]); e > 1.5 {
						assert.InDelta(t, float64(o0[i])/l[i/ldo], float64(got[i]), 1.5*math.Abs(float64(got[i]))*0x1p-23, "d %d rows %d: element %d, %.2f ulp", d, rows, i, e)
					}
				}
			}
		}
	})
	assert.Panics(t, func() { OnlineSoftmaxEnd(make([]float32, 10), 5, 3, 5, make([]float64, 3)) }, "o too short")
	assert.Panics(t, func() { OnlineSoftmaxEnd(make([]float32, 15), 5, 3, 5, make([]float64, 2)) }, "l too short")
}

// TestExpFMA checks ExpFMA against math.Exp over a million arguments across
// the whole range (within 2 ulp where e^x is a normal float32, 0 below
// −87.3, math.Exp rounded above 88) and its special values.
func TestExpFMA(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	const n = 1 << 20
	x := make([]float32, n)
	for i := range x {
		x[i] = -90 + 180*r.Float32()
		if i%2 == 0 { // half of them where softmax lives
			x[i] = -30 * r.Float32()
		}
	}
	for i, v := range []float32{0, float32(math.Copysign(0, -1)), -87.3, -87.29, 88, 88.001, 88.72, 88.7228, -1e-7, 1e-7, -0.5, 0.5, -1.5} {
		x[i] = v
	}
	worst, at := 0.0, float32(0)
	for _, v := range x {
		got := ExpFMA(v)
		switch {
		case v < -87.3:
			if got != 0 {
				require.Zero(t, got, "ExpFMA(%v), flushed", v)
			}
		case v > 88:
			if want := float32(math.Exp(float64(v))); got != want {
				require.Equal(t, want, got, "ExpFMA(%v)", v)
			}
		default:
			if e := ulps(got, math.Exp(float64(v))); e > worst {
				worst, at = e, v
			}
		}
	}
	t.Logf("ExpFMA: worst %.3f ulp at %v over %d arguments", worst, at, n)
	assert.LessOrEqual(t, worst, 2.0, "ExpFMA: worst error in ulp, at %v", at)
	assert.True(t, math.IsNaN(float64(ExpFMA(float32(math.NaN())))), "NaN")
	assert.Equal(t, float32(0), ExpFMA(float32(math.Inf(-1))), "−Inf")
	assert.Equal(t, float32(math.Inf(1)), ExpFMA(float32(math.Inf(1))), "+Inf")
	assert.Equal(t, float32(1), ExpFMA(0), "e⁰")
}

// TestFMA32 checks fma32 and fma32Odd against a·b + c computed exactly in
// math/big and rounded once to float32, on random operands and on sums
// that cancel or land near float32 ties.
func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 6))
	exact := func(a, b, c float32) float32 {
		p := new(big.Float).SetPrec(200).Mul(big.NewFloat(float64(a)), big.NewFloat(float64(b)))
		p.Add(p, big.NewFloat(float64(c)))
		f, _ := p.Float32() // exact: rounded once, ties to even
		return f
	}
	check := func(a, b, c float32) {
		want := exact(a, b, c)
		for name, got := range map[string]float32{"fma32": fma32(a, b, c), "fma32Odd": fma32Odd(a, b, c)} {
			if !same(got, want) {
				require.Equal(t, want, got, "%s(%v, %v, %v)", name, a, b, c)
			}
		}
	}
	for range 200000 {
		a, b := float32(r.NormFloat64()), float32(r.NormFloat64())
		c := float32(r.NormFloat64())
		switch r.IntN(3) {
		case 0: // c cancels most of the product
			c = -float32(float64(a) * float64(b))
		case 1: // the product's low half decides the rounding
			c = float32(r.NormFloat64()) * 0x1p-20
		}
		check(a, b, c)
	}
	check(1+0x1p-23, 1+0x1p-23, -1) // 2⁻²² + 2⁻⁴⁶: only a fused result keeps 2⁻⁴⁶
	check(1+0x1p-12, 1-0x1p-12, -1) // exactly −2⁻²⁴
	check(0x1p-75, 0x1p-75, 0)      // the product underflows
}

// TestOnlineSoftmaxAllocs checks that no implementation allocates: the
// forward pass of a training step must not.
func TestOnlineSoftmaxAllocs(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		c := newOnlineCase(rand.New(rand.NewPCG(4, 7)), 14, 100, 90, 64, -5, 5, 0)
		allocs := testing.AllocsPerRun(10, func() {
			c.run()
			OnlineSoftmaxEnd(c.o, c.ldo, c.rows, c.d, c.l)
		})
		assert.Zero(t, allocs, "allocations per call")
	})
}

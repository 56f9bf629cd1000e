package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forImpls runs f once per implementation of the slice kernels: the Go
// blocks always, the assembly where this build and CPU have it.
func forImpls(t *testing.T, f func(t *testing.T)) {
	saved, saved512, savedCvt := useAsm, use512, useCvtBF16
	defer func() { useAsm, use512, useCvtBF16 = saved, saved512, savedCvt }()
	type impl struct {
		name             string
		asm, avx512, cvt bool
	}
	impls := []impl{{"go", false, false, false}}
	if saved {
		impls = append(impls, impl{"asm", true, false, false})
		if saved512 {
			impls = append(impls, impl{"asm-avx512", true, true, false})
		}
		if savedCvt {
			impls = append(impls, impl{"asm-avx512-bf16", true, true, true})
		}
	} else {
		t.Log("no assembly kernels on this build or CPU: testing the Go blocks only")
	}
	for _, im := range impls {
		useAsm, use512, useCvtBF16 = im.asm, im.avx512, im.cvt
		t.Run(im.name, f)
	}
}

// sizes sweep every tail length around the 8-lane blocks, and two long
// rows.
var sizes = []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 1000, 4099}

// The loops below over up to millions of elements compare with plain Go
// first and call an assertion only on a mismatch (one that then fails), so
// a passing run costs no assertion calls.

// ulps is |got − want| in units of the float32 spacing at want; a NaN got
// where want is a number is infinitely far.
func ulps(got float32, want float64) float64 {
	if math.IsInf(want, 0) || math.IsNaN(want) {
		if float64(got) == want || (math.IsNaN(want) && got != got) {
			return 0
		}
		return math.Inf(1)
	}
	if got != got {
		return math.Inf(1)
	}
	a := float32(math.Abs(want))
	spacing := float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
	if math.IsInf(spacing, 0) { // want rounds to MaxFloat32
		spacing = float64(a - math.Nextafter32(a, 0))
	}
	return math.Abs(float64(got)-want) / spacing
}

// same reports whether a and b are the same float32, NaN matching NaN.
func same(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// guarded returns a slice of n elements whose backing array carries 8
// sentinel elements after it, and a check that they are untouched.
func guarded(n int) ([]float32, func(t *testing.T, what string)) {
	const sentinel = -12345.5
	buf := make([]float32, n+8)
	for i := range buf {
		buf[i] = sentinel
	}
	return buf[:n], func(t *testing.T, what string) {
		t.Helper()
		for i, v := range buf[n:] {
			if !assert.Equal(t, float32(sentinel), v, "%s: wrote past the end at %d", what, n+i) {
				return
			}
		}
	}
}

// specials are the values every kernel test sprinkles among its inputs.
var specials = []float32{
	0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
	-87.3, -87.29, -87.31, 88, 88.001, 88.72, 88.73, 100, -100, 1e-30, -1e-30, 0.625, -0.625, 44, 44.001, -44.001,
	math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
}

// randRow is n values uniform in [lo, hi) with about one in eight replaced
// by a special value.
func randRow(r *rand.Rand, n int, lo, hi float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = lo + (hi-lo)*r.Float32()
		if r.IntN(8) == 0 {
			x[i] = specials[r.IntN(len(specials))]
		}
	}
	return x
}

// TestExp32Accuracy checks Exp32 and the Exp kernel against math.Exp over
// a million random arguments across the whole range: within 2 ulp where
// e^x is a normal float32, 0 below −87.3, math.Exp rounded above 88.
func TestExp32Accuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 20
	x := make([]float32, n)
	for i := range x {
		x[i] = -90 + 180*r.Float32()
	}
	for i, v := range []float32{0, -87.3, -87.29, 88, 88.001, 88.72, 88.7228, -1e-7, 1e-7, 1e-30} {
		x[i] = v
	}
	worst, at := 0.0, float32(0)
	for _, v := range x {
		got := Exp32(v)
		switch {
		case v < expLo:
			if got != 0 {
				require.Zero(t, got, "Exp32(%v), flushed", v)
			}
		case v > expHi:
			if want := float32(math.Exp(float64(v))); got != want {
				require.Equal(t, want, got, "Exp32(%v)", v)
			}
		default:
			if e := ulps(got, math.Exp(float64(v))); e > worst {
				worst, at = e, v
			}
		}
	}
	t.Logf("Exp32: worst %.3f ulp at %v over %d arguments", worst, at, n)
	assert.LessOrEqual(t, worst, 2.0, "Exp32: worst error in ulp, at %v", at)
	forImpls(t, func(t *testing.T) {
		y := make([]float32, n)
		Exp(y, x)
		for i, v := range x {
			if want := Exp32(v); !same(y[i], want) {
				require.Equal(t, math.Float32bits(want), math.Float32bits(y[i]), "Exp(%v) = %v, Exp32 = %v (bits)", v, y[i], want)
			}
		}
	})
}

// TestExp32Specials pins the special cases.
func TestExp32Specials(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {float32(math.Copysign(0, -1)), 1}, {float32(math.Inf(-1)), 0}, {-100, 0}, {-87.31, 0},
		{inf, inf}, {89, inf}, {100, inf}, {1, float32(math.E)},
	} {
		got := Exp32(c.x)
		assert.LessOrEqual(t, ulps(got, float64(c.want)), 1.0, "Exp32(%v) = %v, want %v: error in ulp", c.x, got, c.want)
	}
	assert.True(t, math.IsNaN(float64(Exp32(float32(math.NaN())))), "Exp32(NaN) = %v, want NaN", Exp32(float32(math.NaN())))
	assert.GreaterOrEqual(t, Exp32(-87.3), float32(math.SmallestNonzeroFloat32*(1<<23)), "Exp32(-87.3) below the normal range")
}

// TestTanh32Accuracy checks Tanh32 and the Tanh kernel against math.Tanh
// over a million random arguments: uniform on [−20, 20] and log-uniform in
// magnitude from 1e-30 to 100, both signs.
func TestTanh32Accuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 1 << 20
	x := make([]float32, n)
	for i := range x {
		if i%2 == 0 {
			x[i] = -20 + 40*r.Float32()
		} else {
			x[i] = float32(math.Pow(10, -30+32*r.Float64()))
			if r.IntN(2) == 0 {
				x[i] = -x[i]
			}
		}
	}
	for i, v := range []float32{0.625, -0.625, 0.62499997, 44, 44.001, -44.001, 9, 1e-38, 1e-45} {
		x[i] = v
	}
	worst, at := 0.0, float32(0)
	for _, v := range x {
		if e := ulps(Tanh32(v), math.Tanh(float64(v))); e > worst {
			worst, at = e, v
		}
	}
	t.Logf("Tanh32: worst %.3f ulp at %v over %d arguments", worst, at, n)
	assert.LessOrEqual(t, worst, 3.0, "Tanh32: worst error in ulp, at %v", at)
	for _, c := range []struct{ x, want float32 }{
		{0, 0}, {100, 1}, {-100, -1}, {float32(math.Inf(1)), 1}, {float32(math.Inf(-1)), -1},
	} {
		assert.Equal(t, c.want, Tanh32(c.x), "Tanh32(%v)", c.x)
	}
	assert.True(t, math.IsNaN(float64(Tanh32(float32(math.NaN())))), "Tanh32(NaN) = %v, want NaN", Tanh32(float32(math.NaN())))
	forImpls(t, func(t *testing.T) {
		y := make([]float32, n)
		Tanh(y, x)
		for i, v := range x {
			if want := Tanh32(v); !same(y[i], want) {
				require.Equal(t, math.Float32bits(want), math.Float32bits(y[i]), "Tanh(%v) = %v, Tanh32 = %v (bits)", v, y[i], want)
			}
		}
	})
}

// laneSum is the order ExpSub promises, written out independently: lane
// j sums elements 8b+j of the whole blocks, the lanes meet in a fixed
// tree, then the tail is added in order.
func laneSum(v []float32) float64 {
	var l [8]float64
	full := len(v) / 8 * 8
	for i, e := range v[:full] {
		l[i%8] += float64(e)
	}
	s := ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
	for _, e := range v[full:] {
		s += float64(e)
	}
	return s
}

func TestExpSub(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range sizes {
			for _, shift := range []float32{0, 3.5, -60} {
				src := randRow(r, n, -30, 10)
				orig := append([]float32(nil), src...)
				dst, check := guarded(n)
				got := ExpSub(dst, src, shift)
				what := fmt.Sprintf("ExpSub n=%d shift=%v", n, shift)
				check(t, what)
				for i := range src {
					if src[i] != orig[i] && !(src[i] != src[i] && orig[i] != orig[i]) {
						require.Equal(t, orig[i], src[i], "%s: src[%d] changed", what, i)
					}
					if want := Exp32(orig[i] - shift); !same(dst[i], want) {
						require.Equal(t, math.Float32bits(want), math.Float32bits(dst[i]), "%s: dst[%d] = %v, want %v (x = %v; bits)", what, i, dst[i], want, orig[i])
					}
				}
				if want := laneSum(dst); !(got != got && want != want) {
					require.Equal(t, math.Float64bits(want), math.Float64bits(got), "%s: sum %v, want %v (bits)", what, got, want)
				}
				// In place, and a finite row whose sum checks against plain float64.
				fin := randRow(r, n, -30, 10)
				for i, v := range fin {
					if v != v || v > 20 || v < -80 {
						fin[i] = 1
					}
				}
				exact := 0.0
				for _, v := range fin {
					exact += math.Exp(float64(v - shift))
				}
				got = ExpSub(fin, fin, shift)
				require.InDelta(t, exact, got, 4e-7*exact+1e-300, "%s in place: sum against float64", what)
			}
		}
	})
	assert.Zero(t, ExpSub(nil, nil, 1), "ExpSub of nothing")
}

func TestMax(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, n := range sizes {
			for trial := range 3 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64() * 100)
				}
				if trial == 1 && n > 0 {
					x[r.IntN(n)] = float32(math.Inf(1))
				}
				if trial == 2 && n > 0 {
					x[r.IntN(n)] = float32(math.NaN())
				}
				want, nan := float32(math.Inf(-1)), false
				for _, v := range x {
					want = max(want, v)
					nan = nan || v != v
				}
				got := Max(x)
				if nan {
					require.Equal(t, uint32(nan32), math.Float32bits(got), "Max n=%d with a NaN = %v (bits)", n, got)
				} else {
					require.Equal(t, want, got, "Max n=%d", n)
				}
			}
		}
	})
}

func TestSoftcap(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, n := range sizes {
			for _, c := range []float32{30, 1, 0.5} {
				x := randRow(r, n, -100, 100)
				th, checkTh := guarded(n)
				z, checkZ := guarded(n)
				m := Softcap(th, z, x, c)
				what := fmt.Sprintf("Softcap n=%d cap=%v", n, c)
				checkTh(t, what+" th")
				checkZ(t, what+" z")
				want, nan := float32(math.Inf(-1)), false
				for i, v := range x {
					wt := Tanh32(v / c)
					if !same(th[i], wt) {
						require.Equal(t, math.Float32bits(wt), math.Float32bits(th[i]), "%s: th[%d] = %v, want %v (x = %v; bits)", what, i, th[i], wt, v)
					}
					if !same(z[i], c*wt) {
						require.Equal(t, math.Float32bits(c*wt), math.Float32bits(z[i]), "%s: z[%d] = %v, want %v (x = %v; bits)", what, i, z[i], c*wt, v)
					}
					want = max(want, c*wt)
					nan = nan || v != v
				}
				if nan {
					require.True(t, m != m, "%s: max %v, want NaN", what, m)
				} else {
					require.Equal(t, want, m, "%s: max", what)
				}
				// tanh is within 3 ulp; cap·tanh adds half an ulp.
				for i, v := range x {
					if v == v {
						if e := ulps(z[i], float64(c)*math.Tanh(float64(v)/float64(c))); !(e <= 5) {
							require.LessOrEqual(t, e, 5.0, "%s: z[%d] = %v (x = %v): error in ulp", what, i, z[i], v)
						}
					}
				}
			}
		}
	})
}

func TestSoftmaxGrad(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		for _, n := range sizes {
			for _, lse := range []float32{0, 12.5, -80} {
				s := randRow(r, n, -20, 5)
				dp := randRow(r, n, -2, 2)
				s0, dp0 := append([]float32(nil), s...), append([]float32(nil), dp...)
				const delta = 0.375
				SoftmaxGrad(s, dp, lse, delta)
				for i := range s {
					p := Exp32(s0[i] - lse)
					if !same(s[i], p) {
						require.Equal(t, math.Float32bits(p), math.Float32bits(s[i]), "SoftmaxGrad n=%d lse=%v: s[%d] = %v, want %v (bits)", n, lse, i, s[i], p)
					}
					if want := p * (dp0[i] - delta); !same(dp[i], want) {
						require.Equal(t, math.Float32bits(want), math.Float32bits(dp[i]), "SoftmaxGrad n=%d lse=%v: dp[%d] = %v, want %v (bits)", n, lse, i, dp[i], want)
					}
				}
			}
		}
	})
}

func TestDiv(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(15, 16))
		for _, n := range sizes {
			for _, d := range []float32{3, 0.1, 0, -7} {
				src := randRow(r, n, -10, 10)
				dst, check := guarded(n)
				Div(dst, src, d)
				check(t, fmt.Sprintf("Div n=%d", n))
				for i, v := range src {
					if !same(dst[i], v/d) {
						require.Equal(t, math.Float32bits(v/d), math.Float32bits(dst[i]), "Div n=%d d=%v: [%d] = %v, want %v (bits)", n, d, i, dst[i], v/d)
					}
				}
			}
		}
	})
}

func TestLengthMismatchPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Exp":         func() { Exp(make([]float32, 3), make([]float32, 4)) },
		"ExpSub":      func() { ExpSub(make([]float32, 9), make([]float32, 8), 0) },
		"Tanh":        func() { Tanh(nil, make([]float32, 1)) },
		"Softcap":     func() { Softcap(make([]float32, 8), make([]float32, 7), make([]float32, 8), 1) },
		"SoftmaxGrad": func() { SoftmaxGrad(make([]float32, 8), make([]float32, 16), 0, 0) },
		"Div":         func() { Div(make([]float32, 2), make([]float32, 1), 1) },
		"ToBF16":      func() { ToBF16(make([]uint16, 8), make([]float32, 9)) },
		"FromBF16":    func() { FromBF16(make([]float32, 9), make([]uint16, 8)) },
	} {
		assert.Panics(t, f, "%s with mismatched lengths", name)
	}
}

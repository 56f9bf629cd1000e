package vmath

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// r32 rounds a float64 to float32: each step of an oracle below is one
// float32 operation computed exactly in float64 and rounded once (exact
// for +, −, ×, ÷ and sqrt of float32 operands, whose float64 results
// round to float32 without a double-rounding error).
func r32(x float64) float32 { return float32(x) }

// f is a float32 operand widened.
func f(x float32) float64 { return float64(x) }

// elemInputs returns n random float32 over a wide range of magnitudes and
// signs, with zeros of both signs, infinities and NaNs sprinkled in when
// special.
func elemInputs(rng *rand.Rand, n int, special bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(20)-10))
		if special && rng.IntN(13) == 0 {
			x[i] = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}[rng.IntN(5)]
		}
	}
	return x
}

// checkSame fails unless got and want agree bit for bit (any NaN matching
// any NaN).
func checkSame(t *testing.T, what string, got, want []float32) {
	t.Helper()
	require.Equal(t, len(want), len(got))
	for i := range got {
		if !same(got[i], want[i]) {
			require.Failf(t, "bits differ", "%s[%d] = %g (%#x), want %g (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestElementwiseKernels: every elementwise kernel, Go blocks and
// assembly, returns bit for bit its definition's float32 operations (each
// rounded once) over every tail length, with NaN, ±0 and ±Inf inputs.
func TestElementwiseKernels(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		for _, n := range sizes {
			a, b, x, y := elemInputs(rng, n, true), elemInputs(rng, n, true), elemInputs(rng, n, true), elemInputs(rng, n, true)
			s := float32(-0.75)
			want := make([]float32, n)
			got := make([]float32, n)

			for i := range want {
				want[i] = r32(f(x[i]) * f(s))
			}
			Scale(got, x, s)
			checkSame(t, "Scale", got, want)

			for i := range want {
				want[i] = r32(f(a[i]) * f(b[i]))
			}
			Mul(got, a, b)
			checkSame(t, "Mul", got, want)

			copy(got, y)
			for i := range want {
				want[i] = r32(f(y[i]) + f(r32(f(a[i])*f(b[i]))))
			}
			MulAcc(got, a, b)
			checkSame(t, "MulAcc", got, want)

			for i := range want {
				want[i] = r32(f(r32(f(a[i])*f(x[i]))) + f(r32(f(b[i])*f(y[i]))))
			}
			MulAdd2(got, a, x, b, y)
			checkSame(t, "MulAdd2", got, want)

			for i := range want {
				want[i] = r32(f(x[i]) + f(r32(f(a[i])*f(y[i]))))
			}
			AddMul(got, x, a, y)
			checkSame(t, "AddMul", got, want)

			copy(got, y)
			for i := range want {
				want[i] = r32(f(y[i]) + f(r32(f(s)*f(x[i]))))
			}
			Axpy(got, x, s)
			checkSame(t, "Axpy", got, want)

			relu := func(v float32) float64 {
				switch {
				case v != v:
					return f(v)
				case v > 0:
					return f(v)
				}
				return 0 // +0, also for −0
			}
			for i := range want {
				want[i] = r32(relu(x[i]) * relu(x[i]))
			}
			ReluSq(got, x)
			checkSame(t, "ReluSq", got, want)

			for i := range want {
				want[i] = r32(f(r32(2*relu(x[i]))) * f(a[i]))
			}
			ReluSqGrad(got, a, x)
			checkSame(t, "ReluSqGrad", got, want)

			rs, m := float32(1.25), float32(-0.3)
			for i := range want {
				want[i] = r32(f(rs) * f(r32(f(a[i])-f(r32(f(x[i])*f(m))))))
			}
			RMSGrad(got, a, x, nil, rs, m)
			checkSame(t, "RMSGrad", got, want)
			for i := range want {
				want[i] = r32(f(want[i]) + f(y[i]))
			}
			RMSGrad(got, a, x, y, rs, m)
			checkSame(t, "RMSGrad with res", got, want)
		}
	})
}

// TestRopeKernels: Rope and RopeT against their definitions (each
// operation rounded once), for half lengths with and without whole blocks.
func TestRopeKernels(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(43, 44))
		for _, h := range []int{1, 3, 8, 16, 32, 40} {
			u, cs, sn := elemInputs(rng, 2*h, true), elemInputs(rng, h, false), elemInputs(rng, h, false)
			g := float32(1.5)
			want, got := make([]float32, 2*h), make([]float32, 2*h)
			for i := range h {
				a, c := f(u[i]), f(u[i+h])
				want[i] = r32(f(g) * f(r32(f(r32(a*f(cs[i])))-f(r32(c*f(sn[i]))))))
				want[i+h] = r32(f(g) * f(r32(f(r32(a*f(sn[i])))+f(r32(c*f(cs[i]))))))
			}
			Rope(got, u, cs, sn, g)
			checkSame(t, "Rope", got, want)
			for i := range h {
				a, c := f(u[i]), f(u[i+h])
				want[i] = r32(f(g) * f(r32(f(r32(a*f(cs[i])))+f(r32(c*f(sn[i]))))))
				want[i+h] = r32(f(g) * f(r32(f(r32(c*f(cs[i])))-f(r32(a*f(sn[i]))))))
			}
			RopeT(got, u, cs, sn, g)
			checkSame(t, "RopeT", got, want)
		}
	})
}

// TestOptimizerKernels: Momentum and Adam against their definitions.
func TestOptimizerKernels(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(45, 46))
		for _, n := range sizes {
			g, b0 := elemInputs(rng, n, true), elemInputs(rng, n, true)
			mu := float32(0.95)
			buf, geff := append([]float32(nil), b0...), make([]float32, n)
			wantB, wantE := make([]float32, n), make([]float32, n)
			for i := range g {
				wantB[i] = r32(f(r32(f(mu)*f(b0[i]))) + f(g[i]))
				wantE[i] = r32(f(g[i]) + f(r32(f(mu)*f(wantB[i]))))
			}
			Momentum(buf, geff, g, mu)
			checkSame(t, "Momentum buf", buf, wantB)
			checkSame(t, "Momentum geff", geff, wantE)

			c := AdamConsts{B1: 0.9, B2: 0.95, OneMinusB1: 1 - float32(0.9), OneMinusB2: 1 - float32(0.95), LR: 0.01, BC1: 0.19, BC2: 0.0975, Eps: 1e-8}
			p0, m0 := elemInputs(rng, n, false), elemInputs(rng, n, false)
			v0 := make([]float32, n)
			for i := range v0 {
				v0[i] = float32(math.Abs(float64(elemInputs(rng, 1, false)[0])))
			}
			p, m, v := append([]float32(nil), p0...), append([]float32(nil), m0...), append([]float32(nil), v0...)
			wantP, wantM, wantV := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range p0 {
				wantM[i] = r32(f(r32(f(c.B1)*f(m0[i]))) + f(r32(f(c.OneMinusB1)*f(g[i]))))
				wantV[i] = r32(f(r32(f(c.B2)*f(v0[i]))) + f(r32(f(r32(f(c.OneMinusB2)*f(g[i])))*f(g[i]))))
				num := r32(f(c.LR) * f(r32(f(wantM[i])/f(c.BC1))))
				den := r32(f(r32(math.Sqrt(f(r32(f(wantV[i])/f(c.BC2)))))) + f(c.Eps))
				wantP[i] = r32(f(p0[i]) - f(r32(f(num)/f(den))))
			}
			Adam(p, g, m, v, c)
			checkSame(t, "Adam m", m, wantM)
			checkSame(t, "Adam v", v, wantV)
			checkSame(t, "Adam p", p, wantP)
		}
	})
}

// TestReductionRows: SumSq64Rows and Dot64Rows return, row by row, the
// bits of SumSq64 and Dot64 on that row (their lane order), within
// float64's rounding of the row's exact sum, for row counts on both sides
// of the assembly's group of four and widths with and without a tail;
// Dot64ColsRows adds each row's exact products to the columns in row
// order.
func TestReductionRows(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(49, 50))
		for _, C := range []int{1, 7, 8, 9, 24, 64, 69, 512} {
			for rows := range 10 {
				a, b := elemInputs(rng, rows*C, false), elemInputs(rng, rows*C, false)
				ss, d := make([]float64, rows), make([]float64, rows)
				SumSq64Rows(ss, a)
				Dot64Rows(d, a, b)
				for r := range rows {
					ra, rb := a[r*C:(r+1)*C], b[r*C:(r+1)*C]
					var wss, wd, mag float64
					for i := range ra {
						wss += f(ra[i]) * f(ra[i])
						wd += f(ra[i]) * f(rb[i])
						mag += math.Abs(f(ra[i])) * (math.Abs(f(ra[i])) + math.Abs(f(rb[i])))
					}
					require.InDelta(t, wss, ss[r], 1e-12*mag+1e-300, "C %d rows %d row %d", C, rows, r)
					require.InDelta(t, wd, d[r], 1e-12*mag+1e-300, "C %d rows %d row %d", C, rows, r)
					require.Equal(t, math.Float64bits(SumSq64(ra)), math.Float64bits(ss[r]), "C %d rows %d row %d", C, rows, r)
					require.Equal(t, math.Float64bits(Dot64(ra, rb)), math.Float64bits(d[r]), "C %d rows %d row %d", C, rows, r)
				}
			}
		}
		for _, C := range []int{1, 7, 8, 9, 64, 69, 512} {
			for rows := range 6 {
				a, b := elemInputs(rng, rows*C, false), elemInputs(rng, rows*C, false)
				acc, want := make([]float64, C), make([]float64, C)
				for i := range acc {
					acc[i] = float64(i) - 3.25
					want[i] = acc[i]
				}
				Dot64ColsRows(acc, a, b)
				for r := range rows {
					for i := range want {
						want[i] += f(a[r*C+i]) * f(b[r*C+i])
					}
				}
				require.Equal(t, want, acc, "Dot64ColsRows C %d rows %d", C, rows)
			}
		}
		require.PanicsWithValue(t, "vmath: SumSq64Rows: 10 elements are not 3 whole rows", func() {
			SumSq64Rows(make([]float64, 3), make([]float32, 10))
		})
	})
}

// TestReductions64: Sum64, SumSq64 and Dot64 within float64's rounding of
// an exact sum (math/big would be exact; float64 sums of a few thousand
// terms of these magnitudes are within 1e-12 relative), assembly and Go
// bitwise equal, and Dot64Cols adds each product exactly rounded once.
func TestReductions64(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	results := map[bool][][3]float64{}
	forImpls(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(47, 48))
		var rs [][3]float64
		for _, n := range sizes {
			a, b := elemInputs(rng, n, false), elemInputs(rng, n, false)
			var s, ss, d, mag float64
			for i := range a {
				s += f(a[i])
				ss += f(a[i]) * f(a[i])
				d += f(a[i]) * f(b[i])
				mag += math.Abs(f(a[i])) * (1 + math.Abs(f(b[i])) + math.Abs(f(a[i])))
			}
			got := [3]float64{Sum64(a), SumSq64(a), Dot64(a, b)}
			for k, want := range []float64{s, ss, d} {
				require.InDelta(t, want, got[k], 1e-12*mag+1e-300, "n %d reduction %d", n, k)
			}
			rs = append(rs, got)

			acc := make([]float64, n)
			want := make([]float64, n)
			for i := range acc {
				acc[i] = float64(i) * 0.5
				want[i] = acc[i] + f(a[i])*f(b[i])
			}
			Dot64Cols(acc, a, b)
			require.Equal(t, want, acc)
		}
		results[useAsm] = rs
	})
	if len(results) == 2 {
		require.Equal(t, results[false], results[true], "assembly and Go sum in the same order")
	}
	_ = rng
}

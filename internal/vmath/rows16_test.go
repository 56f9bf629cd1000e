package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// half16 is a 16-bit format under test, with the backend's definitions
// of its widening and rounding (the oracle) and inputs over its range.
type half16 struct {
	f      Half
	widen  func(uint16) float32
	round  func(float32) uint16
	inputs func(r *rand.Rand, n int) []uint16
}

var halves = []half16{
	{BFloat16, backend.BF16Float, backend.BF16Bits, bf16Inputs},
	{Binary16, backend.F16Float, backend.F16Bits, f16Inputs},
}

// forHalves runs f for each format under forImpls.
func forHalves(t *testing.T, f func(t *testing.T, h half16)) {
	for _, h := range halves {
		t.Run(h.f.String(), func(t *testing.T) {
			forImpls(t, func(t *testing.T) { f(t, h) })
		})
	}
}

// bf16Inputs returns n bfloat16 patterns of normal values over a wide
// range of magnitudes, with subnormals, zeros, infinities and NaNs put in.
func bf16Inputs(r *rand.Rand, n int) []uint16 {
	x := make([]uint16, n)
	for i := range x {
		v := float32(math.Ldexp(r.Float64()*2-1, r.IntN(40)-20))
		x[i] = backend.BF16Bits(v)
		if r.IntN(17) == 0 {
			x[i] = []uint16{0, 0x8000, 0x0001, 0x807f, 0x0040, 0x7f80, 0xff80, 0x7fc0, 0x7f7f}[r.IntN(9)]
		}
	}
	return x
}

// f16Inputs returns n binary16 patterns over the format's whole range
// (2^-16 to 2^15, subnormals below 2^-14), with zeros, the smallest and
// largest subnormals, the largest finite value, infinities and NaNs put
// in.
func f16Inputs(r *rand.Rand, n int) []uint16 {
	x := make([]uint16, n)
	for i := range x {
		v := float32(math.Ldexp(r.Float64()*2-1, r.IntN(32)-16))
		x[i] = backend.F16Bits(v)
		if r.IntN(17) == 0 {
			x[i] = []uint16{0, 0x8000, 0x0001, 0x83ff, 0x0200, 0x7c00, 0xfc00, 0x7e00, 0x7bff}[r.IntN(9)]
		}
	}
	return x
}

// same16 requires got and want to hold the same patterns, except that for
// binary16 a NaN matches any NaN (ToF16 promises only NaN-ness and sign,
// and NaNs of the sums may take either operand's sign).
func same16(t *testing.T, h half16, what string, got, want []uint16) {
	t.Helper()
	require.Equal(t, len(want), len(got))
	for i := range got {
		if got[i] == want[i] {
			continue
		}
		if h.f == Binary16 && math.IsNaN(float64(h.widen(got[i]))) && math.IsNaN(float64(h.widen(want[i]))) {
			continue
		}
		require.Failf(t, "bits differ", "%s[%d] = %#04x, want %#04x", what, i, got[i], want[i])
	}
}

// widenAll returns 16-bit patterns as float32, for checkSame (which lets
// a NaN match a NaN of another sign or payload).
func (h half16) widenAll(u []uint16) []float32 {
	f := make([]float32, len(u))
	for i, b := range u {
		f[i] = h.widen(b)
	}
	return f
}

// TestScaledAddBack16 holds the fused kernel to its definition, written
// out here element by element in float64: dy is s·g rounded to float32
// then to 16 bits (results subnormal in float32 or in the format
// included: scales near 1e-38 and small inputs make them), and each
// column's sum adds the exact products row after row.
func TestScaledAddBack16(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	forHalves(t, func(t *testing.T, h half16) {
		for _, C := range []int{16, 48, 512, 7, 24} {
			for _, rows := range []int{1, 3, 4} {
				g, y := h.inputs(r, rows*C), h.inputs(r, rows*C)
				s := make([]float32, C)
				for c := range s {
					s[c] = float32(math.Ldexp(r.Float64()+0.5, r.IntN(8)-4))
					if c%5 == 0 {
						s[c] = float32(math.Ldexp(r.Float64()+0.5, -126-r.IntN(3))) // subnormal products
					}
				}
				acc := make([]float64, C)
				for c := range acc {
					acc[c] = float64(c) + 0.125
				}
				want, wantDy := append([]float64(nil), acc...), make([]uint16, rows*C)
				for i := range g {
					gv, yv := float64(h.widen(g[i])), float64(h.widen(y[i]))
					want[i%C] += gv * yv
					wantDy[i] = h.round(float32(float64(s[i%C]) * gv))
				}
				dy := make([]uint16, rows*C)
				if !ScaledAddBack16(h.f, acc, dy, g, y, s) {
					require.False(t, hasRows16(h.f, C), "C %d: the kernel declined", C)
					require.False(t, h.f == Binary16 && useAsm && use512 && C%16 == 0, "C %d: no binary16 kernel on AVX-512", C)
					continue
				}
				same16(t, h, fmt.Sprintf("C %d rows %d: dy", C, rows), dy, wantDy)
				for c := range want {
					if math.IsNaN(want[c]) {
						require.True(t, math.IsNaN(acc[c]), "C %d rows %d column %d", C, rows, c)
						continue
					}
					require.Equal(t, want[c], acc[c], "C %d rows %d column %d", C, rows, c)
				}
			}
		}
	})
}

// TestRMSRows16: SumSq64Rows16 returns the bits of SumSq64 on each
// widened row, within float64's rounding of the exact sum; ScaleRows16
// rounds each x·s[r] to float32 then to 16 bits, subnormal, overflowing
// and non-finite results included.
func TestRMSRows16(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	forHalves(t, func(t *testing.T, h half16) {
		for _, C := range []int{16, 64, 512, 24} {
			for _, rows := range []int{1, 3, 4, 5, 9} {
				x := h.inputs(r, rows*C)
				wide := h.widenAll(x)
				ss := make([]float64, rows)
				ok := SumSq64Rows16(h.f, ss, x)
				require.Equal(t, hasRows16(h.f, C), ok, "C %d", C)
				s := make([]float32, rows)
				for k := range s {
					s[k] = float32(math.Ldexp(r.Float64()+0.5, r.IntN(20)-10))
				}
				s[0] = float32(math.Ldexp(1.3, -130)) // subnormal products
				out := make([]uint16, len(x))
				require.Equal(t, ok, ScaleRows16(h.f, out, x, s))
				if !ok {
					continue
				}
				for k := range rows {
					alone := make([]float64, 1)
					require.True(t, SumSq64Rows16(h.f, alone, x[k*C:(k+1)*C]))
					require.Equal(t, math.Float64bits(ss[k]), math.Float64bits(alone[0]), "C %d rows %d row %d alone", C, rows, k)
					row := wide[k*C : (k+1)*C]
					var exact, mag float64
					for _, v := range row {
						exact += float64(v) * float64(v)
						mag += float64(v) * float64(v)
					}
					if !math.IsNaN(exact) && !math.IsInf(exact, 0) {
						require.InDelta(t, exact, ss[k], 1e-12*mag, "C %d rows %d row %d", C, rows, k)
					}
					require.Equal(t, math.Float64bits(SumSq64(row)), math.Float64bits(ss[k]), "C %d rows %d row %d", C, rows, k)
					want := make([]uint16, C)
					for c, v := range row {
						want[c] = h.round(float32(float64(v) * float64(s[k])))
					}
					same16(t, h, fmt.Sprintf("C %d rows %d row %d: out", C, rows, k), out[k*C:(k+1)*C], want)
				}
			}
		}
	})
}

// TestRMSGradRows16: the fused backward pass against its definition
// written out per element (float32 operations rounded one at a time, the
// mean as Dot64 of the widened rows, itself within float64's rounding of
// the exact mean), with and without res, and with dx aliasing g; a NaN
// may come out with another sign (the fused multiply-add picks another
// operand's NaN than the separate add does).
func TestRMSGradRows16(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	forHalves(t, func(t *testing.T, h half16) {
		nan, negNaN, one := h.round(float32(math.NaN())), h.round(-float32(math.NaN())), h.round(1)
		for _, C := range []int{16, 64, 512, 24} {
			for _, rows := range []int{1, 3, 4, 6, 8} {
				for _, withRes := range []bool{false, true} {
					g, x := h.inputs(r, rows*C), h.inputs(r, rows*C)
					// Row 0: NaNs of both signs in one lane of the mean's sum
					// (which NaN comes out depends on how the adds are issued).
					g[0], x[0] = nan, one // +NaN·1 in lane 0
					if C > lanes {
						g[lanes], x[lanes] = negNaN|1, one // then −NaN·1
					}
					var res []uint16
					if withRes {
						res = h.inputs(r, rows*C)
					}
					rs := make([]float32, rows)
					for k := range rs {
						rs[k] = float32(math.Ldexp(r.Float64()+0.5, r.IntN(12)-6))
					}
					rs[0] = float32(math.Ldexp(1.1, -125)) // subnormal results
					wantDx, wantM := make([]uint16, rows*C), make([]float32, rows)
					for k := range rows {
						gw, xh := make([]float32, C), make([]float32, C)
						var exact, mag float64
						for c := range C {
							gw[c] = h.widen(g[k*C+c])
							xh[c] = float32(float64(h.widen(x[k*C+c])) * float64(rs[k]))
							exact += float64(gw[c]) * float64(xh[c])
							mag += math.Abs(float64(gw[c]) * float64(xh[c]))
						}
						d := Dot64(gw, xh)
						if !math.IsNaN(exact) && !math.IsInf(exact, 0) {
							require.InDelta(t, exact, d, 1e-12*mag)
						}
						wantM[k] = float32(d / float64(C))
						for c := range C {
							v := rs[k] * (gw[c] - xh[c]*wantM[k])
							if withRes {
								v += h.widen(res[k*C+c])
							}
							wantDx[k*C+c] = h.round(v)
						}
					}
					dx, m := append([]uint16(nil), g...), make([]float32, rows) // dx aliases g
					ok := RMSGradRows16(h.f, dx, dx, x, res, rs, m)
					require.Equal(t, hasRows16(h.f, C), ok, "C %d", C)
					if !ok {
						continue
					}
					what := fmt.Sprintf("C %d rows %d res %v", C, rows, withRes)
					checkSame(t, what+": m", m, wantM)
					checkSame(t, what+": dx", h.widenAll(dx), h.widenAll(wantDx))

					// Row by row, every row a leftover: the same bits wherever
					// a caller cuts the rows, a NaN's sign aside. Where a row's
					// float64 lanes hold NaNs of both signs (an input NaN and
					// the default NaN of 0·Inf), which one sum8 returns is the
					// compiler's choice of operand order for each of its
					// inlined copies: Go does not fix it, and a -race build
					// picks differently.
					for k := range rows {
						lo, hi := k*C, (k+1)*C
						one, mk := append([]uint16(nil), g[lo:hi]...), make([]float32, 1)
						var rk []uint16
						if withRes {
							rk = res[lo:hi]
						}
						require.True(t, RMSGradRows16(h.f, one, one, x[lo:hi], rk, rs[k:k+1], mk))
						checkSame(t, fmt.Sprintf("%s row %d alone: m", what, k), mk, m[k:k+1])
						checkSame(t, fmt.Sprintf("%s row %d alone: dx", what, k), h.widenAll(one), h.widenAll(dx[lo:hi]))
					}
				}
			}
		}
	})
}

package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// bf16Cases is a million random float32 bit patterns (every class: NaNs of
// both signs, infinities, subnormals) with the rounding edges put in: ties
// to even below and above, the largest finite value, NaNs whose payload
// lies only in the low 16 bits.
func bf16Cases() []float32 {
	r := rand.New(rand.NewPCG(17, 18))
	x := make([]float32, 1<<20)
	for i := range x {
		x[i] = math.Float32frombits(r.Uint32())
	}
	edges := []uint32{
		0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001, 0x7f7fffff, 0xff7fffff, 0x7f7f8000,
		0x7f800000, 0xff800000, 0x7f800001, 0xff800001, 0x7fc00000, 0x00008000, 0x80018000, 0, 0x80000000,
	}
	for i, u := range edges {
		x[i] = math.Float32frombits(u)
	}
	return x
}

func TestToBF16(t *testing.T) {
	x := bf16Cases()
	forImpls(t, func(t *testing.T) {
		for _, n := range append(sizes, len(x)) {
			dst := make([]uint16, n+8)
			for i := range dst {
				dst[i] = 0xdead
			}
			ToBF16(dst[:n], x[:n])
			for i, v := range x[:n] {
				if want := backend.BF16Bits(v); dst[i] != want {
					require.Equal(t, want, dst[i], "ToBF16 n=%d: [%d] = %#08x", n, i, math.Float32bits(v))
				}
			}
			for i := n; i < n+8; i++ {
				require.Equal(t, uint16(0xdead), dst[i], "ToBF16 n=%d wrote past the end at %d", n, i)
			}
		}
	})
}

func TestFromBF16(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	forImpls(t, func(t *testing.T) {
		for _, n := range append(sizes, len(src)) {
			dst, check := guarded(n)
			FromBF16(dst, src[:n])
			check(t, fmt.Sprintf("FromBF16 n=%d", n))
			for i, b := range src[:n] {
				if want := backend.BF16Float(b); math.Float32bits(dst[i]) != math.Float32bits(want) {
					require.Equal(t, math.Float32bits(want), math.Float32bits(dst[i]), "FromBF16 n=%d: [%d] = %#04x → %v, want %v (bits)", n, i, b, dst[i], want)
				}
			}
		}
	})
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

// TestScaledAddBackBF16 holds the fused kernel to its definition, written
// out here element by element in float64: dy is s·g rounded to float32
// then to bfloat16 (subnormal products included: scales near 1e-38 make
// them), and each column's sum adds the exact products row after row.
func TestScaledAddBackBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	forImpls(t, func(t *testing.T) {
		for _, C := range []int{16, 48, 512, 7, 24} {
			for _, rows := range []int{1, 3, 4} {
				g, y := bf16Inputs(r, rows*C), bf16Inputs(r, rows*C)
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
					gv, yv := float64(backend.BF16Float(g[i])), float64(backend.BF16Float(y[i]))
					want[i%C] += gv * yv
					wantDy[i] = backend.BF16Bits(float32(float64(s[i%C]) * gv))
				}
				dy := make([]uint16, rows*C)
				if !ScaledAddBackBF16(acc, dy, g, y, s) {
					require.False(t, useAsm && use512 && useCvtBF16 && C%16 == 0, "C %d: the kernel declined", C)
					continue
				}
				require.Equal(t, wantDy, dy, "C %d rows %d", C, rows)
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

// TestRMSRowsBF16: SumSq64RowsBF16 returns the bits of SumSq64 on each
// widened row, within float64's rounding of the exact sum; ScaleRowsBF16
// rounds each x·s[r] to float32 then to bfloat16, subnormal and
// non-finite results included.
func TestRMSRowsBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	forImpls(t, func(t *testing.T) {
		for _, C := range []int{16, 64, 512, 24} {
			for _, rows := range []int{1, 3, 4, 5, 9} {
				x := bf16Inputs(r, rows*C)
				wide := make([]float32, len(x))
				for i, u := range x {
					wide[i] = backend.BF16Float(u)
				}
				ss := make([]float64, rows)
				ok := SumSq64RowsBF16(ss, x)
				require.Equal(t, hasBF16Rows(C), ok, "C %d", C)
				s := make([]float32, rows)
				for k := range s {
					s[k] = float32(math.Ldexp(r.Float64()+0.5, r.IntN(20)-10))
				}
				s[0] = float32(math.Ldexp(1.3, -130)) // subnormal products
				out := make([]uint16, len(x))
				require.Equal(t, ok, ScaleRowsBF16(out, x, s))
				if !ok {
					continue
				}
				for k := range rows {
					alone := make([]float64, 1)
					require.True(t, SumSq64RowsBF16(alone, x[k*C:(k+1)*C]))
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
					for c, v := range row {
						want := backend.BF16Bits(float32(float64(v) * float64(s[k])))
						require.Equal(t, want, out[k*C+c], "C %d rows %d [%d,%d]: %v·%v", C, rows, k, c, v, s[k])
					}
				}
			}
		}
	})
}

// widenAll returns bfloat16 patterns as float32, for checkSame (which
// lets a NaN match a NaN of another sign or payload).
func widenAll(u []uint16) []float32 {
	f := make([]float32, len(u))
	for i, b := range u {
		f[i] = backend.BF16Float(b)
	}
	return f
}

// TestRMSGradRowsBF16: the fused backward pass against its definition
// written out per element (float32 operations rounded one at a time, the
// mean as Dot64 of the widened rows, itself within float64's rounding of
// the exact mean), with and without res, and with dx aliasing g; a NaN
// may come out with another sign (the fused multiply-add picks another
// operand's NaN than the separate add does).
func TestRMSGradRowsBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	forImpls(t, func(t *testing.T) {
		for _, C := range []int{16, 64, 512, 24} {
			for _, rows := range []int{1, 3, 4, 6, 8} {
				for _, withRes := range []bool{false, true} {
					g, x := bf16Inputs(r, rows*C), bf16Inputs(r, rows*C)
					// Row 0: NaNs of both signs in one lane of the mean's sum
					// (which NaN comes out depends on how the adds are issued).
					g[0], x[0] = 0x7fc0, 0x3f80 // +NaN·1 in lane 0
					if C > lanes {
						g[lanes], x[lanes] = 0xffc1, 0x3f80 // then −NaN·1
					}
					var res []uint16
					if withRes {
						res = bf16Inputs(r, rows*C)
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
							gw[c] = backend.BF16Float(g[k*C+c])
							xh[c] = float32(float64(backend.BF16Float(x[k*C+c])) * float64(rs[k]))
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
								v += backend.BF16Float(res[k*C+c])
							}
							wantDx[k*C+c] = backend.BF16Bits(v)
						}
					}
					dx, m := append([]uint16(nil), g...), make([]float32, rows) // dx aliases g
					ok := RMSGradRowsBF16(dx, dx, x, res, rs, m)
					require.Equal(t, hasBF16Rows(C), ok, "C %d", C)
					if !ok {
						continue
					}
					what := fmt.Sprintf("C %d rows %d res %v", C, rows, withRes)
					checkSame(t, what+": m", m, wantM)
					checkSame(t, what+": dx", widenAll(dx), widenAll(wantDx))

					// Row by row, every row a leftover: the same bits, NaNs'
					// signs included, wherever a caller cuts the rows.
					for k := range rows {
						lo, hi := k*C, (k+1)*C
						one, mk := append([]uint16(nil), g[lo:hi]...), make([]float32, 1)
						var rk []uint16
						if withRes {
							rk = res[lo:hi]
						}
						require.True(t, RMSGradRowsBF16(one, one, x[lo:hi], rk, rs[k:k+1], mk))
						require.Equal(t, math.Float32bits(m[k]), math.Float32bits(mk[0]), "%s row %d alone: m", what, k)
						require.Equal(t, dx[lo:hi], one, "%s row %d alone: dx", what, k)
					}
				}
			}
		}
	})
}

//go:build cgo

package metal

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/shaders"
)

// TestGemmTransposes covers what the linear ops do not reach: every
// combination of trans_a and trans_b, alpha and beta other than 0 and 1,
// a separate c and d, row strides wider than the matrices, and a T input
// with an F32 output. Checked against a float64 oracle of the rounded
// inputs, within 4·k·u of Σ|terms|.
func TestGemmTransposes(t *testing.T) {
	const m, n, k, pad = 37, 70, 19, 3
	const alpha, beta = 0.5, -1.5
	rng := rand.New(rand.NewPCG(1, 2))
	normal := func(l int) []float32 {
		v := make([]float32, l)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		for _, in := range []backend.DType{backend.F32, backend.BF16} {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					ar, ac := m, k
					if ta {
						ar, ac = k, m
					}
					br, bc := k, n
					if tb {
						br, bc = n, k
					}
					lda, ldb, ldc := ac+pad, bc+pad, n+pad
					a, b2 := b.New(in, ar, lda), b.New(in, br, ldb)
					c, d := b.New(backend.F32, m, ldc), b.New(backend.F32, m, ldc)
					b.Upload(a, normal(ar*lda))
					b.Upload(b2, normal(br*ldb))
					b.Upload(c, normal(m*ldc))
					poison := make([]float32, m*ldc)
					for i := range poison {
						poison[i] = float32(math.NaN())
					}
					b.Upload(d, poison)
					av, bv, cv := b.Download(a), b.Download(b2), b.Download(c)
					b.a.gemm = shaders.GemmArgs{M: m, N: n, K: k, Lda: uint32(lda), Ldb: uint32(ldb),
						Ldc: uint32(ldc), Alpha: alpha, Beta: beta}
					if ta {
						b.a.gemm.TransA = 1
					}
					if tb {
						b.a.gemm.TransB = 1
					}
					b.gemm(a, b2, c, d, in, true)
					got := b.Download(d)
					require.NoError(t, b.Sync(), "%v %v trans_a=%v trans_b=%v: Sync", f, in, ta, tb)
					opA := func(i, l int) float64 {
						if ta {
							return float64(av[l*lda+i])
						}
						return float64(av[i*lda+l])
					}
					opB := func(l, j int) float64 {
						if tb {
							return float64(bv[j*ldb+l])
						}
						return float64(bv[l*ldb+j])
					}
					bad := 0
					for i := range m {
						for j := range ldc {
							g := float64(got[i*ldc+j])
							if j >= n {
								if !math.IsNaN(g) {
									if bad < 3 {
										assert.True(t, math.IsNaN(g), "%v %v trans_a=%v trans_b=%v: padding d[%d,%d] = %g written", f, in, ta, tb, i, j, g)
									}
									bad++
								}
								continue
							}
							s, mag := 0.0, 0.0
							for l := range k {
								s += opA(i, l) * opB(l, j)
								mag += math.Abs(opA(i, l) * opB(l, j))
							}
							want := alpha*s + beta*float64(cv[i*ldc+j])
							tol := 4 * float64(k+2) * 0x1p-24 * (math.Abs(alpha)*mag + math.Abs(beta*float64(cv[i*ldc+j])))
							if !(math.Abs(g-want) <= tol) { // NaN fails
								if bad < 3 {
									assert.InDelta(t, want, g, tol, "%v %v trans_a=%v trans_b=%v: d[%d,%d]", f, in, ta, tb, i, j)
								}
								bad++
							}
						}
					}
					// All of them, the first 3 having been shown.
					assert.Zero(t, bad, "%v %v trans_a=%v trans_b=%v: bad elements (padding columns must stay untouched)", f, in, ta, tb)
					for _, x := range []*backend.Tensor{a, b2, c, d} {
						b.Free(x)
					}
				}
			}
		}
	}
}

// TestNewtonSchulzDTypes runs Newton–Schulz with g and out in other dtypes
// than F32 (and different from each other), tall and wide, against the cpu
// backend: out may differ by the rounding of its dtype plus float32 noise.
func TestNewtonSchulzDTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ref := cpu.New()
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		for _, sh := range [][2]int{{20, 12}, {12, 20}} {
			for _, dts := range [][2]backend.DType{{backend.BF16, backend.F16}, {backend.F16, backend.BF16}, {backend.BF16, backend.F32}} {
				R, C := sh[0], sh[1]
				vals := make([]float32, R*C)
				for i := range vals {
					vals[i] = float32(0.02 * rng.NormFloat64())
				}
				g, out := b.New(dts[0], R, C), b.New(dts[1], R, C)
				rg, rout := ref.New(dts[0], R, C), ref.New(dts[1], R, C)
				b.Upload(g, vals)
				ref.Upload(rg, vals)
				b.NewtonSchulz(out, g, 5)
				ref.NewtonSchulz(rout, rg, 5)
				got, want := b.Download(out), ref.Download(rout)
				require.NoError(t, b.Sync(), "%v %dx%d g %v out %v: Sync", f, R, C, dts[0], dts[1])
				require.Equal(t, len(want), len(got), "%v %dx%d g %v out %v: length", f, R, C, dts[0], dts[1])
				u := dts[1].Eps()
				for i := range got {
					if !assert.InDelta(t, float64(want[i]), float64(got[i]), 2*u*math.Abs(float64(want[i]))+1e-4,
						"%v %dx%d g %v out %v: out[%d] against cpu", f, R, C, dts[0], dts[1], i) {
						break
					}
				}
			}
		}
	}
}

// TestGemmPaths covers the simd flavour's paths that the linear ops of the
// suite's small shapes do not reach, in both flavours: interior tiles of
// 16-byte aligned operands (the unchecked vector loads, and the epilogue's
// paired stores from registers), the same shapes with rows that are not
// aligned (the checked path), and split-K
// (a few output tiles with a long k, gemmSlice; its reduction by vectors
// and element by element). Each is checked against a
// float64 oracle within 4·k·u of Σ|terms|, and for the twin rule: the
// 16-bit inputs and their float32 copies give the same bits.
func TestGemmPaths(t *testing.T) {
	type shape struct {
		m, n, k, pad int
		ta, tb       bool
		alpha, beta  float32
	}
	shapes := []shape{
		{128, 192, 48, 0, false, true, 1, 0},    // interior, aligned: vector loads, paired stores
		{128, 128, 40, 0, true, false, 1, 1},    // interior, aligned, k tail on the checked path, beta
		{128, 64, 32, 0, true, true, 0.5, 0},    // interior, alpha ≠ 1: the epilogue scales
		{96, 136, 33, 3, false, false, 1, 0},    // unaligned rows: checked loads and stores everywhere
		{70, 40, 1100, 0, true, false, 1, 1},    // split-K: 2 slices of 560
		{64, 64, 2048, 1, false, true, 1, -0.5}, // split-K on unaligned rows
		{128, 64, 2048, 0, true, false, 1, 1},   // split-K, interior and aligned: 4 slices (vector reduction)
		{64, 70, 2048, 0, true, false, 1, 1},    // split-K, n % 4 ≠ 0: the reduction's chunks straddle rows
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		for _, s := range shapes {
			g := shaders.GemmArgs{M: uint32(s.m), N: uint32(s.n), K: uint32(s.k), Alpha: s.alpha, Beta: s.beta}
			if s.k >= 1024 {
				require.NotZero(t, gemmSlice(&g), "%+v: split", s)
			} else {
				require.Zero(t, gemmSlice(&g), "%+v: not split", s)
			}
			ar, ac := s.m, s.k
			if s.ta {
				ar, ac = s.k, s.m
				g.TransA = 1
			}
			br, bc := s.k, s.n
			if s.tb {
				br, bc = s.n, s.k
				g.TransB = 1
			}
			lda, ldb, ldc := ac+s.pad, bc+s.pad, s.n+s.pad
			g.Lda, g.Ldb, g.Ldc = uint32(lda), uint32(ldb), uint32(ldc)
			// bf16-representable values, so the F32 run is the twin.
			vals := func(l int) []float32 {
				v := make([]float32, l)
				for i := range v {
					v[i] = backend.BF16Float(backend.BF16Bits(float32(rng.NormFloat64())))
				}
				return v
			}
			av, bv, cv := vals(ar*lda), vals(br*ldb), vals(s.m*ldc)
			var outs [][]float32
			for _, in := range []backend.DType{backend.F32, backend.BF16} {
				a, b2, d := b.New(in, ar, lda), b.New(in, br, ldb), b.New(backend.F32, s.m, ldc)
				b.Upload(a, av)
				b.Upload(b2, bv)
				b.Upload(d, cv)
				b.a.gemm = g
				b.gemm(a, b2, d, d, in, true)
				got := b.Download(d)
				require.NoError(t, b.Sync(), "%v %v %+v", f, in, s)
				outs = append(outs, got)
				for _, x := range []*backend.Tensor{a, b2, d} {
					b.Free(x)
				}
			}
			assert.Equal(t, outs[0], outs[1], "%v %+v: the BF16 product and its F32 twin differ", f, s)
			bad := 0
			for i := range s.m {
				for j := range ldc {
					got := float64(outs[1][i*ldc+j])
					if j >= s.n {
						if got != float64(cv[i*ldc+j]) && bad < 3 {
							assert.Equal(t, cv[i*ldc+j], outs[1][i*ldc+j], "%v %+v: padding d[%d,%d] written", f, s, i, j)
						}
						continue
					}
					sum, mag := 0.0, 0.0
					for l := range s.k {
						ai, bi := i*lda+l, l*ldb+j
						if s.ta {
							ai = l*lda + i
						}
						if s.tb {
							bi = j*ldb + l
						}
						x, y := float64(av[ai]), float64(bv[bi])
						sum += x * y
						mag += math.Abs(x * y)
					}
					c := float64(cv[i*ldc+j])
					want := float64(s.alpha)*sum + float64(s.beta)*c
					tol := 4 * float64(s.k+2) * 0x1p-24 * (math.Abs(float64(s.alpha))*mag + math.Abs(float64(s.beta)*c))
					if !(math.Abs(got-want) <= tol) {
						if bad < 3 {
							assert.InDelta(t, want, got, tol, "%v %+v: d[%d,%d]", f, s, i, j)
						}
						bad++
					}
				}
			}
			assert.Zero(t, bad, "%v %+v: bad elements", f, s)
		}
	}
}

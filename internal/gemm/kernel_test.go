package gemm

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKernelsAgreeBitwise: every micro-kernel sums each element over k in
// order with fused multiply-adds, in the same K blocks, so Sgemm returns
// the same bits whichever kernel it runs (and on every architecture, the
// portable kernel being the one arm64 runs).
func TestKernelsAgreeBitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	ks := kernels()
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for _, d := range [][3]int{{37, 70, 300}, {14, 32, 513}, {1, 65, 17}, {130, 33, 256}} {
				tc := newCase(rng, tA, tB, d[0], d[1], d[2], -0.5, 2)
				a, b, c0 := tc.operands(rng)
				var want []float32
				for _, k := range ks {
					c := append([]float32(nil), c0...)
					withKernel(k, func() {
						Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, tc.beta, c, tc.ldc)
					})
					if want == nil {
						want = c
						continue
					}
					requireSameBits(t, want, c, fmt.Sprintf("%v: C from kernel %s against kernel %s", tc, k.name, ks[0].name))
				}
			}
		}
	}
}

// TestKernelsSignedZeros: every micro-kernel returns IEEE's signs of
// zero in its update: with zero products the sum over k is +0, alpha·(+0)
// takes alpha's sign, and adding beta·c = −0 keeps −0 only when both are
// −0. (A kernel that forms alpha·acc as an addition to +0 would lose the
// sign.) Each tile element checks the rule written out here.
func TestKernelsSignedZeros(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	for _, k := range kernels() {
		const kc = 3
		a, b := make([]float32, k.mr*kc), make([]float32, kc*k.nr)
		for i := range b {
			b[i] = float32(i%7) - 3 // products ±0 with a's zeros
		}
		for i := range a {
			if i%2 == 1 {
				a[i] = negZero
			}
		}
		for _, tc := range []struct {
			alpha, beta float32
			loadC       bool
			neg         bool // the expected sign
		}{
			{-1, 0, false, true},
			{1, 0, false, false},
			{-2, 1, true, true},   // −0 + −0
			{2, 1, true, false},   // +0 + −0
			{-2, -1, true, false}, // −0 + +0
		} {
			c := make([]float32, k.mr*k.nr)
			for i := range c {
				c[i] = negZero
			}
			k.fn(kc, a, 1, k.mr, b, c, k.nr, tc.alpha, tc.beta, tc.loadC)
			for i, v := range c {
				require.Zero(t, v, "%s alpha %v beta %v: [%d]", k.name, tc.alpha, tc.beta, i)
				require.Equal(t, tc.neg, math.Signbit(float64(v)), "%s alpha %v beta %v loadC %v: sign of [%d]", k.name, tc.alpha, tc.beta, tc.loadC, i)
			}
		}
	}
}

// TestFMA32: fma32 (vmath.FMA32) rounds a·b + c once, as
// the exact value computed with math/big and rounded to float32; the
// operands include halfway cases that a float64 sum rounded twice gets
// wrong.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(400).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(400).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(400).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	type triple struct{ a, b, c float32 }
	cases := []triple{
		// 1 + 2⁻²⁴ + 2⁻⁵⁴: just above a float32 tie, so 1 + 2⁻²³; the
		// float64 sum rounds it onto the tie, and rounding that to float32
		// (ties to even) would give 1.
		{-(0x1p-12 - 0x1p-27), 0x1p-12 + 0x1p-27, 1 + 0x1p-23},
		{3, 5, -15},
		{-0, 0, -0},
	}
	for range 200000 {
		e := func() float32 {
			return float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(60)-30))
		}
		cases = append(cases, triple{e(), e(), e()})
	}
	twice := func(a, b, c float32) float32 { return float32(float64(a)*float64(b) + float64(c)) }
	tc0 := cases[0]
	require.NotEqual(t, exact(tc0.a, tc0.b, tc0.c), twice(tc0.a, tc0.b, tc0.c), "the first case does not catch a sum rounded twice")
	bad := 0
	for _, tc := range cases {
		want := exact(tc.a, tc.b, tc.c)
		if got := fma32(tc.a, tc.b, tc.c); math.Float32bits(got) != math.Float32bits(want) {
			assert.Equal(t, math.Float32bits(want), math.Float32bits(got), "fma32(%g, %g, %g) = %g, want %g", tc.a, tc.b, tc.c, got, want)
			if bad++; bad == 10 {
				t.FailNow() // enough examples
			}
		}
	}
}

// TestTransposePack: the transposed packing of B (vector where the CPU
// has it) puts element (p, j) of op(B) at p·nr + j of its micro-panel for
// every kc, including the ones that leave a partial 16-row block.
func TestTransposePack(t *testing.T) {
	for _, nr := range []int{16, 32} {
		for _, kc := range []int{1, 15, 16, 17, 40} {
			const ldb = 50
			b := make([]float32, nr*ldb)
			for i := range b {
				b[i] = float32(i)
			}
			d := make([]float32, kc*nr)
			packB(d, nr, b, ldb, true, 3, kc, 0, nr)
			for p := range kc {
				for j := range nr {
					require.Equal(t, b[j*ldb+3+p], d[p*nr+j], "nr=%d kc=%d: packed (%d, %d)", nr, kc, p, j)
				}
			}
		}
	}
}

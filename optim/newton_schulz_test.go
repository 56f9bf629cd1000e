package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// quintic is one Newton–Schulz step on a singular value:
// φ(σ) = a·σ + b·σ³ + c·σ⁵.
func quintic(x float64) float64 {
	return nsA*x + nsB*x*x*x + nsC*x*x*x*x*x
}

// TestNewtonSchulzPolar checks NS5 (the backend's NewtonSchulz as Muon
// calls it) on square, tall and wide matrices:
//   - equal to the float64 iteration;
//   - singular values equal to φ⁵(σᵢ/‖G‖_F), all within the quintic's band
//     [0.68, 1.135] (relative singular values ≥ 0.01);
//   - direction: cos(NS(G), U·Vᵀ) close to 1 (≈0.985 for these spectra).
func TestNewtonSchulzPolar(t *testing.T) {
	b := cpu.New()
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		r, c     int
		gaussian bool // else a prescribed spectrum in [0.1, 1]
	}{
		{40, 40, false}, {48, 24, false}, {24, 48, false}, {64, 32, true}, {32, 64, true}, {33, 17, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%dx%d", tc.r, tc.c), func(t *testing.T) {
			var g []float64
			if tc.gaussian {
				g = f64s(randn(rng, tc.r*tc.c, 1))
			} else {
				k := min(tc.r, tc.c)
				s := make([]float64, k)
				for i := range s {
					s[i] = 0.1 + 0.9*float64(i)/float64(k-1)
				}
				g = withSpectrum(rng, tc.r, tc.c, s)
			}
			g32 := make([]float32, len(g))
			for i, v := range g {
				g32[i] = float32(v)
			}
			g = f64s(g32) // the oracle starts from the same fp32 values
			gt := b.New(backend.F32, tc.r, tc.c)
			out := b.New(backend.F32, tc.r, tc.c)
			b.Upload(gt, g32)
			b.NewtonSchulz(out, gt, 5)
			got := b.Download(out)

			assertClose(t, "NS5 vs float64 iteration", got, nsOracle(g, tc.r, tc.c, 5), 2e-5, 1e-5)

			sg := singularValues(g, tc.r, tc.c)
			nrm := frob(g)
			require.GreaterOrEqual(t, sg[0]/nrm, 0.01, "test matrix too ill-conditioned: σmin/‖G‖")
			want := make([]float64, len(sg))
			for i, s := range sg {
				x := s / (nrm + nsEps)
				for range 5 {
					x = quintic(x)
				}
				want[i] = x
			}
			sort.Float64s(want)
			so := singularValues(f64s(got), tc.r, tc.c)
			assert.InDeltaSlice(t, want, so, 1e-4, "singular values against φ⁵(σ/‖G‖)")
			for i := range so {
				assert.True(t, so[i] >= 0.68 && so[i] <= 1.135, "σ[%d] = %.6f outside the NS5 band [0.68, 1.135]", i, so[i])
			}

			pf := polar(g, tc.r, tc.c)
			dot, pn := 0.0, frob(pf)
			for i := range pf {
				dot += float64(got[i]) * pf[i]
			}
			cos := dot / (frob(f64s(got)) * pn)
			assert.InEpsilon(t, float64(min(tc.r, tc.c)), pn*pn, 1e-6, "the polar factor is orthogonal: ‖UVᵀ‖² = min(r, c)")
			// With the same singular vectors, cos = Σφ⁵(σᵢ)/(√k·‖φ⁵(σ)‖).
			sum, sq := 0.0, 0.0
			for _, y := range want {
				sum, sq = sum+y, sq+y*y
			}
			wantCos := sum / math.Sqrt(float64(len(want))*sq)
			assert.InDelta(t, wantCos, cos, 1e-4, "cos(NS5(G), UVᵀ)")
			assert.GreaterOrEqual(t, cos, 0.97, "cos(NS5(G), UVᵀ)")
		})
	}
}

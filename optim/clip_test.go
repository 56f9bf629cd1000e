package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// gradParams makes parameters of the given sizes with random gradients.
func gradParams(b backend.Backend, rng *rand.Rand, std float64, sizes ...int) ([]*model.Param, [][]float32) {
	var ps []*model.Param
	var gs [][]float32
	for _, n := range sizes {
		g := randn(rng, n, std)
		ps = append(ps, newParam(b, "p", make([]float32, n), g, n))
		gs = append(gs, g)
	}
	return ps, gs
}

func norm64(gs [][]float32) float64 {
	s := 0.0
	for _, g := range gs {
		for _, v := range g {
			s += float64(v) * float64(v)
		}
	}
	return math.Sqrt(s)
}

func TestClipGradNorm(t *testing.T) {
	b := cpu.New()
	rng := rand.New(rand.NewPCG(7, 8))
	sizes := []int{1, 513, 4099, 32}

	ps, gs := gradParams(b, rng, 0.3, sizes...)
	want := norm64(gs)
	assert.InEpsilon(t, want, GradNorm(b, ps), 1e-6, "GradNorm")

	// Clipping to a third of the norm scales every gradient by maxNorm/(norm+1e-12).
	maxNorm := want / 3
	assert.InEpsilon(t, want, ClipGradNorm(b, ps, maxNorm), 1e-6, "ClipGradNorm returns the pre-clip norm")
	s := maxNorm / (want + 1e-12)
	for i, p := range ps {
		w := make([]float64, len(gs[i]))
		for j, v := range gs[i] {
			w[j] = float64(v) * s
		}
		assertClose(t, "clipped grad", b.Download(p.G), w, 0, 2e-6)
	}
	assert.InEpsilon(t, maxNorm, GradNorm(b, ps), 2e-6, "norm after clipping")

	// Under the limit, disabled, or all-zero: gradients untouched.
	ps, gs = gradParams(b, rng, 0.3, sizes...)
	want = norm64(gs)
	assert.InEpsilon(t, want, ClipGradNorm(b, ps, want*1.01), 1e-6, "under the limit: the norm")
	assert.Zero(t, ClipGradNorm(b, ps, 0), "maxNorm 0 (disabled)")
	assert.Zero(t, ClipGradNorm(b, ps, -1), "maxNorm -1 (disabled)")
	for i, p := range ps {
		assertClose(t, "unclipped grad", b.Download(p.G), f64s(gs[i]), 0, 0)
	}
	zs, _ := gradParams(b, rng, 0, 5, 7)
	assert.Zero(t, ClipGradNorm(b, zs, 1), "zero gradients")
}

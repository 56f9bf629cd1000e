package optim

import (
	"math"
	"math/rand/v2"
	"testing"

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
	if got := GradNorm(b, ps); math.Abs(got-want) > 1e-6*want {
		t.Errorf("GradNorm = %.9g, want %.9g", got, want)
	}

	// Clipping to a third of the norm scales every gradient by maxNorm/(norm+1e-12).
	maxNorm := want / 3
	if got := ClipGradNorm(b, ps, maxNorm); math.Abs(got-want) > 1e-6*want {
		t.Errorf("ClipGradNorm returned %.9g, want the pre-clip norm %.9g", got, want)
	}
	s := maxNorm / (want + 1e-12)
	for i, p := range ps {
		w := make([]float64, len(gs[i]))
		for j, v := range gs[i] {
			w[j] = float64(v) * s
		}
		assertClose(t, "clipped grad", b.Download(p.G), w, 0, 2e-6)
	}
	if got := GradNorm(b, ps); math.Abs(got-maxNorm) > 2e-6*maxNorm {
		t.Errorf("norm after clipping %.9g, want %.9g", got, maxNorm)
	}

	// Under the limit, disabled, or all-zero: gradients untouched.
	ps, gs = gradParams(b, rng, 0.3, sizes...)
	want = norm64(gs)
	if got := ClipGradNorm(b, ps, want*1.01); math.Abs(got-want) > 1e-6*want {
		t.Errorf("under the limit: returned %g, want %g", got, want)
	}
	if got := ClipGradNorm(b, ps, 0); got != 0 {
		t.Errorf("maxNorm 0: returned %g, want 0", got)
	}
	if got := ClipGradNorm(b, ps, -1); got != 0 {
		t.Errorf("maxNorm -1: returned %g, want 0", got)
	}
	for i, p := range ps {
		assertClose(t, "unclipped grad", b.Download(p.G), f64s(gs[i]), 0, 0)
	}
	zs, _ := gradParams(b, rng, 0, 5, 7)
	if got := ClipGradNorm(b, zs, 1); got != 0 {
		t.Errorf("zero gradients: returned %g, want 0", got)
	}
}

package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

func TestGradScalerGrowthAndBackoff(t *testing.T) {
	s := NewGradScaler(cpu.New())
	defer s.Free()
	require.Equal(t, 65536.0, s.Scale(), "initial scale 2^16")
	for range 1999 {
		s.Update(false)
	}
	assert.Equal(t, 65536.0, s.Scale(), "scale after 1999 finite steps")
	assert.Equal(t, 1999, s.GrowthTracker(), "tracker after 1999 finite steps")
	s.Update(false)
	assert.Equal(t, 131072.0, s.Scale(), "scale after 2000 finite steps")
	assert.Equal(t, 0, s.GrowthTracker(), "tracker after 2000 finite steps")
	for range 1500 {
		s.Update(false)
	}
	s.Update(true) // an overflow halves S and restarts the count
	assert.Equal(t, 65536.0, s.Scale(), "scale after an overflow")
	assert.Equal(t, 0, s.GrowthTracker(), "tracker after an overflow")
	for range 1999 {
		s.Update(false)
	}
	assert.Equal(t, 65536.0, s.Scale(), "growth must not count across an overflow")
	s.Update(true)
	s.Update(true)
	assert.Equal(t, 16384.0, s.Scale(), "two overflows from 65536")
}

func TestStaticScalerAndPolicy(t *testing.T) {
	b := cpu.New()
	st := NewStaticScaler(b, 1024)
	for range 5000 {
		st.Update(false)
	}
	st.Update(true)
	assert.Equal(t, 1024.0, st.Scale(), "a static scale never moves")
	for _, c := range []struct {
		dt        backend.DType
		lossScale float64
		enabled   bool
		scale     float64
	}{
		{backend.F16, 0, true, 65536},
		{backend.BF16, 0, false, 1},
		{backend.F32, 0, false, 1},
		{backend.BF16, 128, false, 128},
		{backend.F16, 256, false, 256},
	} {
		s, err := ScalerFor(b, c.dt, c.lossScale)
		require.NoError(t, err)
		assert.Equal(t, c.enabled, s.Enabled, "ScalerFor(%v, %g): dynamic", c.dt, c.lossScale)
		assert.Equal(t, c.scale, s.Scale(), "ScalerFor(%v, %g): scale", c.dt, c.lossScale)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := ScalerFor(b, backend.F16, bad)
		assert.ErrorContains(t, err, "--loss-scale", "ScalerFor(--loss-scale %g)", bad)
	}
}

// TestGradScalerStepFlow runs the documented step flow on a Split: finite
// scaled gradients are unscaled (exactly, S a power of two) and applied;
// a NaN or Inf anywhere skips the step, leaves weights and optimizer state
// untouched, and halves S.
func TestGradScalerStepFlow(t *testing.T) {
	b := cpu.New()
	rng := rand.New(rand.NewPCG(9, 10))
	mk := func() []*model.Param {
		r := rand.New(rand.NewPCG(11, 12))
		return []*model.Param{
			newParam(b, "tok_emb.weight", randn(r, 24, 1), nil, 6, 4),
			newParam(b, "blocks.0.attn.c_q.weight", randn(r, 16, 1), nil, 4, 4),
			newParam(b, "blocks.0.attn_scale", randn(r, 4, 1), nil, 4),
		}
	}
	scaled, plain := mk(), mk()
	optS, err := NewSplit(b, scaled, DefaultHyper())
	require.NoError(t, err)
	optP, err := NewSplit(b, plain, DefaultHyper())
	require.NoError(t, err)
	sc := NewGradScaler(b)
	defer sc.Free()

	step := func(i int, poison float32) bool {
		S := float32(sc.Scale())
		for j := range scaled {
			g := randn(rng, scaled[j].G.Len(), 1e-3)
			gs := make([]float32, len(g))
			for k := range g {
				gs[k] = g[k] * S
			}
			if j == 1 && poison != 0 {
				gs[5] = poison
			}
			b.Upload(scaled[j].G, gs)
			b.Upload(plain[j].G, g)
		}
		found := sc.UnscaleAndCheck(scaled)
		if !found {
			for j := range scaled {
				assertClose(t, "unscaled grad", b.Download(scaled[j].G), f64s(b.Download(plain[j].G)), 0, 0)
			}
			optS.Step(i, 1)
			optP.Step(i, 1)
		}
		sc.Update(found)
		return found
	}
	require.False(t, step(0, 0), "finite gradients reported non-finite")
	before := [][]float32{b.Download(scaled[0].W), b.Download(scaled[1].W), b.Download(scaled[2].W)}
	require.True(t, step(1, float32(math.NaN())), "NaN gradient not found")
	assert.Equal(t, 32768.0, sc.Scale(), "scale after NaN")
	require.True(t, step(2, float32(math.Inf(-1))), "-Inf gradient not found")
	for j := range scaled {
		assertClose(t, "weights after skipped steps", b.Download(scaled[j].W), f64s(before[j]), 0, 0)
	}
	assert.Equal(t, 1, optS.Embed.Steps(), "Adam's step after two skipped steps")
	require.False(t, step(3, 0), "finite gradients reported non-finite")
	// Same gradients, same steps: the scaled run equals the plain one exactly.
	for j := range scaled {
		assertClose(t, scaled[j].Name, b.Download(scaled[j].W), f64s(b.Download(plain[j].W)), 0, 0)
	}

	// A static scaler neither checks nor skips: it only unscales.
	st := NewStaticScaler(b, 4)
	g := []float32{8, float32(math.NaN()), -4}
	p := newParam(b, "x", make([]float32, 3), g, 3)
	assert.False(t, st.UnscaleAndCheck([]*model.Param{p}), "a static scaler never reports non-finite gradients")
	got := b.Download(p.G)
	assert.Equal(t, float32(2), got[0])
	assert.True(t, math.IsNaN(float64(got[1])), "NaN stays NaN, got %g", got[1])
	assert.Equal(t, float32(-1), got[2])
}

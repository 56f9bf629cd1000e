package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

func TestGradScalerGrowthAndBackoff(t *testing.T) {
	s := NewGradScaler(cpu.New())
	defer s.Free()
	if s.Scale() != 65536 {
		t.Fatalf("initial scale %g, want 2^16", s.Scale())
	}
	for range 1999 {
		s.Update(false)
	}
	if s.Scale() != 65536 || s.GrowthTracker() != 1999 {
		t.Errorf("after 1999 finite steps: scale %g tracker %d, want 65536, 1999", s.Scale(), s.GrowthTracker())
	}
	s.Update(false)
	if s.Scale() != 131072 || s.GrowthTracker() != 0 {
		t.Errorf("after 2000 finite steps: scale %g tracker %d, want 131072, 0", s.Scale(), s.GrowthTracker())
	}
	for range 1500 {
		s.Update(false)
	}
	s.Update(true) // an overflow halves S and restarts the count
	if s.Scale() != 65536 || s.GrowthTracker() != 0 {
		t.Errorf("after overflow: scale %g tracker %d, want 65536, 0", s.Scale(), s.GrowthTracker())
	}
	for range 1999 {
		s.Update(false)
	}
	if s.Scale() != 65536 {
		t.Errorf("growth counted across an overflow: scale %g", s.Scale())
	}
	s.Update(true)
	s.Update(true)
	if s.Scale() != 16384 {
		t.Errorf("two overflows from 65536: scale %g, want 16384", s.Scale())
	}
}

func TestStaticScalerAndPolicy(t *testing.T) {
	b := cpu.New()
	st := NewStaticScaler(b, 1024)
	for range 5000 {
		st.Update(false)
	}
	st.Update(true)
	if st.Scale() != 1024 {
		t.Errorf("static scale moved to %g", st.Scale())
	}
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
		if err != nil {
			t.Fatal(err)
		}
		if s.Enabled != c.enabled || s.Scale() != c.scale {
			t.Errorf("ScalerFor(%v, %g): enabled %v scale %g, want %v %g", c.dt, c.lossScale, s.Enabled, s.Scale(), c.enabled, c.scale)
		}
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := ScalerFor(b, backend.F16, bad); err == nil {
			t.Errorf("ScalerFor accepted --loss-scale %g", bad)
		}
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
	if err != nil {
		t.Fatal(err)
	}
	optP, _ := NewSplit(b, plain, DefaultHyper())
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
	if step(0, 0) {
		t.Fatal("finite gradients reported non-finite")
	}
	before := [][]float32{b.Download(scaled[0].W), b.Download(scaled[1].W), b.Download(scaled[2].W)}
	if !step(1, float32(math.NaN())) {
		t.Fatal("NaN gradient not found")
	}
	if sc.Scale() != 32768 {
		t.Errorf("scale after NaN %g, want 32768", sc.Scale())
	}
	if !step(2, float32(math.Inf(-1))) {
		t.Fatal("-Inf gradient not found")
	}
	for j := range scaled {
		assertClose(t, "weights after skipped steps", b.Download(scaled[j].W), f64s(before[j]), 0, 0)
	}
	if optS.Embed.Steps() != 1 {
		t.Errorf("skipped steps advanced Adam to step %d", optS.Embed.Steps())
	}
	if step(3, 0) {
		t.Fatal("finite gradients reported non-finite")
	}
	// Same gradients, same steps: the scaled run equals the plain one exactly.
	for j := range scaled {
		assertClose(t, scaled[j].Name, b.Download(scaled[j].W), f64s(b.Download(plain[j].W)), 0, 0)
	}

	// A static scaler neither checks nor skips: it only unscales.
	st := NewStaticScaler(b, 4)
	g := []float32{8, float32(math.NaN()), -4}
	p := newParam(b, "x", make([]float32, 3), g, 3)
	if st.UnscaleAndCheck([]*model.Param{p}) {
		t.Errorf("static scaler reported non-finite gradients")
	}
	got := b.Download(p.G)
	if got[0] != 2 || got[2] != -1 || !math.IsNaN(float64(got[1])) {
		t.Errorf("static unscale: %v, want [2 NaN -1]", got)
	}
}

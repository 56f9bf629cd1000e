package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// tinyConfig is the model of the gradient and golden tests: an odd layer
// count, so one decoder block has no skip, and grouped-query attention.
func tinyConfig() Config {
	return Config{
		VocabSize: 64, NumLayers: 3, ModelDim: 32, NumHeads: 4, NumKVHeads: 2, MLPMult: 2,
		LogitSoftcap: 30, RopeBase: 10000, QKGainInit: 1.5, TiedEmbedInitStd: 0.005,
	}
}

func TestNumParamsBaseline(t *testing.T) {
	// V·C (tied embedding) + S·C (skip weights) + per block:
	// c_q C·C, c_k KV·C, c_v KV·C, proj C·C, q_gain H, attn_scale C,
	// mlp_scale C, resid_mix 2·C, fc F·C, mlp.proj C·F.
	const V, L, C, H, KV, F = 1024, 9, 512, 8, 4 * 64, 2 * 512
	const S = 4 // min(9/2, 9−9/2)
	perBlock := C*C + KV*C + KV*C + C*C + H + C + C + 2*C + F*C + C*F
	want := V*C + S*C + L*perBlock
	require.Equal(t, 17_059_912, want, "independent count; the reference's baseline has 17,059,912")
	assert.Equal(t, want, NumParams(Baseline()), "NumParams(Baseline())")
}

func TestParamsNamesShapes(t *testing.T) {
	UseComputeDType(t, backend.F32)
	cfg := tinyConfig()
	m, err := New(cpu.New(), cfg, 1)
	require.NoError(t, err)
	want := []string{"tok_emb.weight [64 32]", "skip_weights [1 32]"}
	for i := range 3 {
		b := fmt.Sprintf("blocks.%d.", i)
		want = append(want,
			b+"attn.c_q.weight [32 32]", b+"attn.c_k.weight [16 32]", b+"attn.c_v.weight [16 32]",
			b+"attn.proj.weight [32 32]", b+"attn.q_gain [4]", b+"attn_scale [32]", b+"mlp_scale [32]",
			b+"resid_mix [2 32]", b+"mlp.fc.weight [64 32]", b+"mlp.proj.weight [32 64]")
	}
	var got []string
	total := 0
	for _, p := range m.Params() {
		got = append(got, fmt.Sprintf("%s %v", p.Name, p.W.Shape))
		assert.Equal(t, p.W.Shape, p.G.Shape, "%s: W and G shapes", p.Name)
		assert.Equal(t, backend.F32, p.W.DType, "%s: W dtype", p.Name)
		assert.Equal(t, backend.F32, p.G.DType, "%s: G dtype", p.Name)
		assert.Same(t, p, m.Param(p.Name), "Param(%q) returns the listed parameter", p.Name)
		total += p.W.Len()
	}
	assert.Equal(t, want, got, "parameter names and shapes")
	assert.Equal(t, NumParams(cfg), total, "values held by the tensors")
}

func TestInit(t *testing.T) {
	UseComputeDType(t, backend.BF16)
	cfg := tinyConfig()
	cfg.VocabSize, cfg.ModelDim, cfg.NumHeads = 256, 64, 4
	m, err := New(cpu.New(), cfg, 7)
	require.NoError(t, err)
	w := m.Weights()
	for name, v := range w {
		p := m.Param(name)
		switch {
		case name == "tok_emb.weight":
			// Normal with std 0.005 over 16384 draws: the sample mean and std
			// lie within 5 standard errors; values are bf16-representable.
			mean, sd := meanStd(v)
			se := cfg.TiedEmbedInitStd / math.Sqrt(float64(len(v)))
			assert.InDelta(t, 0, mean, 5*se, "%s: mean of N(0, %g)", name, cfg.TiedEmbedInitStd)
			assert.InDelta(t, cfg.TiedEmbedInitStd, sd, 5*se*math.Sqrt(0.5)+0.01*cfg.TiedEmbedInitStd, "%s: std", name)
			checkAll(t, name+" (bf16 values)", v, func(x float32) bool { return backend.Round(backend.BF16, x) == x })
		case isSuffix(name, "attn.proj.weight", "mlp.proj.weight"):
			checkAll(t, name, v, func(x float32) bool { return x == 0 })
		case isSuffix(name, "c_q.weight", "c_k.weight", "c_v.weight", "fc.weight"):
			// uniform(±1/sqrt(in)): inside the bound, variance bound²/3.
			bound := 1 / math.Sqrt(float64(p.W.Shape[1]))
			checkAll(t, name, v, func(x float32) bool { return math.Abs(float64(x)) <= bound })
			_, sd := meanStd(v)
			assert.InEpsilon(t, bound/math.Sqrt(3), sd, 0.1, "%s: std of uniform(±%g)", name, bound)
		case isSuffix(name, "q_gain"):
			checkAll(t, name, v, func(x float32) bool { return x == 1.5 })
		case isSuffix(name, "attn_scale", "mlp_scale", "skip_weights"):
			checkAll(t, name, v, func(x float32) bool { return x == 1 })
		case isSuffix(name, "resid_mix"):
			C := cfg.ModelDim
			checkAll(t, name+"[0]", v[:C], func(x float32) bool { return x == 1 })
			checkAll(t, name+"[1]", v[C:], func(x float32) bool { return x == 0 })
		default:
			assert.Failf(t, "a parameter without an init check", "%s", name)
		}
	}
	// Same seed, same weights; another seed, other random weights.
	m2, err := New(cpu.New(), cfg, 7)
	require.NoError(t, err)
	m3, err := New(cpu.New(), cfg, 8)
	require.NoError(t, err)
	w2, w3 := m2.Weights(), m3.Weights()
	for name, v := range w {
		assert.Equal(t, v, w2[name], "%s: two models of seed 7", name)
		if isSuffix(name, "tok_emb.weight", "c_q.weight", "fc.weight") {
			assert.NotEqual(t, v, w3[name], "%s: seeds 7 and 8", name)
		}
	}
}

func TestSetWeightsErrors(t *testing.T) {
	UseComputeDType(t, backend.F32)
	m, err := New(cpu.New(), tinyConfig(), 1)
	require.NoError(t, err)
	w := m.Weights()
	w["blocks.9.attn_scale"] = make([]float32, 32)
	assert.ErrorContains(t, m.SetWeights(w), "blocks.9.attn_scale", "unknown name")
	delete(w, "blocks.9.attn_scale")
	w["skip_weights"] = w["skip_weights"][:5]
	assert.ErrorContains(t, m.SetWeights(w), "skip_weights", "short tensor")
	delete(w, "skip_weights")
	assert.ErrorContains(t, m.SetWeights(w), "skip_weights", "missing tensor")
	_, err = New(cpu.New(), Config{}, 1)
	assert.Error(t, err, "invalid config")
}

func TestForwardBeforeCastPanics(t *testing.T) {
	UseComputeDType(t, backend.F32)
	b := cpu.New()
	m, err := New(b, tinyConfig(), 1)
	require.NoError(t, err)
	ids := b.New(backend.I32, 16)
	assert.Panics(t, func() { m.Forward(ids, ids, 16) }, "Forward without CastWeights")
}

func meanStd(v []float32) (mean, sd float64) {
	for _, x := range v {
		mean += float64(x)
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (float64(x) - mean) * (float64(x) - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)))
}

// checkAll fails at the first element of v for which ok is false.
func checkAll(t *testing.T, name string, v []float32, ok func(float32) bool) {
	t.Helper()
	for i, x := range v {
		if !ok(x) {
			assert.Failf(t, "a value breaks the init rule", "%s[%d] = %g", name, i, x)
			return
		}
	}
}

func isSuffix(name string, suffixes ...string) bool {
	for _, s := range suffixes {
		if len(name) >= len(s) && name[len(name)-len(s):] == s {
			return true
		}
	}
	return false
}

// randomWeights draws non-zero weights for every parameter (proj matrices
// included) and perturbed control tensors, so that every gradient path
// carries signal.
func randomWeights(m *Model, rng *rand.Rand) map[string][]float32 {
	w := map[string][]float32{}
	C := m.Cfg.ModelDim
	for _, p := range m.Params() {
		v := make([]float32, p.W.Len())
		for i := range v {
			n := rng.NormFloat64()
			switch {
			case p.Name == "tok_emb.weight":
				v[i] = float32(0.5 * n)
			case isSuffix(p.Name, ".weight"):
				bound := 1 / math.Sqrt(float64(p.W.Shape[1]))
				v[i] = float32((2*rng.Float64() - 1) * bound)
			case isSuffix(p.Name, "q_gain"):
				v[i] = float32(1.5 + 0.2*n)
			case isSuffix(p.Name, "resid_mix") && i >= C:
				v[i] = float32(0.3 * n)
			default: // scales, skip weights, resid_mix[0]
				v[i] = float32(1 + 0.2*n)
			}
		}
		w[p.Name] = v
	}
	return w
}

// randomBatch uploads B·T random token ids and targets.
func randomBatch(b backend.Backend, rng *rand.Rand, n, vocab int) (ids, targets *backend.Tensor) {
	ids, targets = b.New(backend.I32, n), b.New(backend.I32, n)
	x, y := make([]int32, n), make([]int32, n)
	for i := range x {
		x[i], y[i] = int32(rng.IntN(vocab)), int32(rng.IntN(vocab))
	}
	b.Upload(ids, x)
	b.Upload(targets, y)
	return ids, targets
}

// freeCounter counts live tensors on a backend.
type freeCounter struct {
	backend.Backend
	live int
}

func (f *freeCounter) New(dt backend.DType, shape ...int) *backend.Tensor {
	f.live++
	return f.Backend.New(dt, shape...)
}

func (f *freeCounter) Free(t *backend.Tensor) {
	f.live--
	f.Backend.Free(t)
}

// TestFreeReleasesEverything: after a training step and an evaluation,
// Free releases every tensor New and the workspaces allocated.
func TestFreeReleasesEverything(t *testing.T) {
	UseComputeDType(t, backend.BF16)
	fc := &freeCounter{Backend: cpu.New()}
	cfg := Baseline()
	cfg.VocabSize, cfg.NumLayers, cfg.ModelDim, cfg.NumHeads, cfg.NumKVHeads = 64, 2, 32, 4, 2
	m, err := New(fc, cfg, 1)
	require.NoError(t, err)
	ids, tg := fc.New(backend.I32, 16), fc.New(backend.I32, 16)
	m.CastWeights()
	m.LossAndGrad(ids, tg, 8, 1)
	m.Loss(ids, tg, 8)
	require.Greater(t, fc.live, 2+2*len(m.Params()))
	m.Free()
	assert.Equal(t, 2, fc.live, "only the test's own two token tensors stay")
}

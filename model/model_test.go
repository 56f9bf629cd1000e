package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

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
	if want != 17_059_912 {
		t.Fatalf("independent count %d, the reference's baseline has 17,059,912", want)
	}
	if got := NumParams(Baseline()); got != want {
		t.Fatalf("NumParams(Baseline()) = %d, want %d", got, want)
	}
}

func TestParamsNamesShapes(t *testing.T) {
	UseComputeDType(t, backend.F32)
	cfg := tinyConfig()
	m, err := New(cpu.New(), cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
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
		if !slices.Equal(p.G.Shape, p.W.Shape) || p.W.DType != backend.F32 || p.G.DType != backend.F32 {
			t.Errorf("%s: W %v, G %v: want two F32 tensors of one shape", p.Name, p.W, p.G)
		}
		if m.Param(p.Name) != p {
			t.Errorf("Param(%q) does not return the listed parameter", p.Name)
		}
		total += p.W.Len()
	}
	if !slices.Equal(got, want) {
		t.Fatalf("params\n got %v\nwant %v", got, want)
	}
	if total != NumParams(cfg) {
		t.Fatalf("tensors hold %d values, NumParams says %d", total, NumParams(cfg))
	}
}

func TestInit(t *testing.T) {
	UseComputeDType(t, backend.BF16)
	cfg := tinyConfig()
	cfg.VocabSize, cfg.ModelDim, cfg.NumHeads = 256, 64, 4
	m, err := New(cpu.New(), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	w := m.Weights()
	for name, v := range w {
		p := m.Param(name)
		switch {
		case name == "tok_emb.weight":
			// Normal with std 0.005 over 16384 draws: the sample mean and std
			// lie within 5 standard errors; values are bf16-representable.
			mean, sd := meanStd(v)
			se := cfg.TiedEmbedInitStd / math.Sqrt(float64(len(v)))
			if math.Abs(mean) > 5*se || math.Abs(sd-cfg.TiedEmbedInitStd) > 5*se*math.Sqrt(0.5)+0.01*cfg.TiedEmbedInitStd {
				t.Errorf("%s: mean %g std %g, want N(0, %g)", name, mean, sd, cfg.TiedEmbedInitStd)
			}
			for _, x := range v {
				if backend.Round(backend.BF16, x) != x {
					t.Fatalf("%s: %g is not a bf16 value", name, x)
				}
			}
		case isSuffix(name, "attn.proj.weight", "mlp.proj.weight"):
			checkAll(t, name, v, func(x float32) bool { return x == 0 })
		case isSuffix(name, "c_q.weight", "c_k.weight", "c_v.weight", "fc.weight"):
			// uniform(±1/sqrt(in)): inside the bound, variance bound²/3.
			bound := 1 / math.Sqrt(float64(p.W.Shape[1]))
			checkAll(t, name, v, func(x float32) bool { return math.Abs(float64(x)) <= bound })
			_, sd := meanStd(v)
			if want := bound / math.Sqrt(3); math.Abs(sd-want) > 0.1*want {
				t.Errorf("%s: std %g, want %g", name, sd, want)
			}
		case isSuffix(name, "q_gain"):
			checkAll(t, name, v, func(x float32) bool { return x == 1.5 })
		case isSuffix(name, "attn_scale", "mlp_scale", "skip_weights"):
			checkAll(t, name, v, func(x float32) bool { return x == 1 })
		case isSuffix(name, "resid_mix"):
			C := cfg.ModelDim
			checkAll(t, name+"[0]", v[:C], func(x float32) bool { return x == 1 })
			checkAll(t, name+"[1]", v[C:], func(x float32) bool { return x == 0 })
		default:
			t.Errorf("%s: no init check", name)
		}
	}
	// Same seed, same weights; another seed, other random weights.
	m2, _ := New(cpu.New(), cfg, 7)
	m3, _ := New(cpu.New(), cfg, 8)
	w2, w3 := m2.Weights(), m3.Weights()
	for name, v := range w {
		if !slices.Equal(v, w2[name]) {
			t.Errorf("%s differs between two models of seed 7", name)
		}
		if isSuffix(name, "tok_emb.weight", "c_q.weight", "fc.weight") && slices.Equal(v, w3[name]) {
			t.Errorf("%s equal for seeds 7 and 8", name)
		}
	}
}

func TestSetWeightsErrors(t *testing.T) {
	UseComputeDType(t, backend.F32)
	m, _ := New(cpu.New(), tinyConfig(), 1)
	w := m.Weights()
	w["blocks.9.attn_scale"] = make([]float32, 32)
	if err := m.SetWeights(w); err == nil {
		t.Error("unknown name accepted")
	}
	delete(w, "blocks.9.attn_scale")
	w["skip_weights"] = w["skip_weights"][:5]
	if err := m.SetWeights(w); err == nil {
		t.Error("short tensor accepted")
	}
	delete(w, "skip_weights")
	if err := m.SetWeights(w); err == nil {
		t.Error("missing tensor accepted")
	}
	if _, err := New(cpu.New(), Config{}, 1); err == nil {
		t.Error("invalid config accepted")
	}
}

func TestForwardBeforeCastPanics(t *testing.T) {
	UseComputeDType(t, backend.F32)
	b := cpu.New()
	m, _ := New(b, tinyConfig(), 1)
	ids := b.New(backend.I32, 16)
	defer func() {
		if recover() == nil {
			t.Error("Forward without CastWeights did not panic")
		}
	}()
	m.Forward(ids, ids, 16)
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

func checkAll(t *testing.T, name string, v []float32, ok func(float32) bool) {
	t.Helper()
	for i, x := range v {
		if !ok(x) {
			t.Errorf("%s[%d] = %g", name, i, x)
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

package model

import (
	"encoding/json"
	"fmt"
	"os"
)

// GoldenPath is the golden file scripts/golden.py writes, relative to the
// model package directory.
const GoldenPath = "testdata/golden_tiny.json"

// GoldenTensor is one tensor of the golden file: a shape and its row-major
// values (float64 as written by the oracle).
type GoldenTensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

// Float32 returns the values rounded to float32.
func (t GoldenTensor) Float32() []float32 {
	v := make([]float32, len(t.Data))
	for i, x := range t.Data {
		v[i] = float32(x)
	}
	return v
}

// GoldenConfig is the golden file's model configuration and batch shape.
type GoldenConfig struct {
	VocabSize        int     `json:"vocab_size"`
	NumLayers        int     `json:"num_layers"`
	ModelDim         int     `json:"model_dim"`
	NumHeads         int     `json:"num_heads"`
	NumKVHeads       int     `json:"num_kv_heads"`
	MLPMult          int     `json:"mlp_mult"`
	SeqLen           int     `json:"seq_len"`
	Batch            int     `json:"batch"`
	LogitSoftcap     float64 `json:"logit_softcap"`
	RopeBase         float64 `json:"rope_base"`
	QKGainInit       float64 `json:"qk_gain_init"`
	TiedEmbedInitStd float64 `json:"tied_embed_init_std"`
}

// GoldenOptim is the golden file's optimizer hyperparameters (the
// reference's names).
type GoldenOptim struct {
	MatrixLR                float64 `json:"matrix_lr"`
	ScalarLR                float64 `json:"scalar_lr"`
	TiedEmbedLR             float64 `json:"tied_embed_lr"`
	Beta1                   float64 `json:"beta1"`
	Beta2                   float64 `json:"beta2"`
	AdamEps                 float64 `json:"adam_eps"`
	MuonMomentum            float64 `json:"muon_momentum"`
	MuonBackendSteps        int     `json:"muon_backend_steps"`
	MuonMomentumWarmupStart float64 `json:"muon_momentum_warmup_start"`
	MuonMomentumWarmupSteps int     `json:"muon_momentum_warmup_steps"`
}

// Golden is the float64 oracle's record of a tiny model: initial weights,
// one batch with its softcapped logits, mean loss and gradients (of the
// mean), the weights after one optimizer step, and a 10-step run.
type Golden struct {
	Config          GoldenConfig            `json:"config"`
	Optim           GoldenOptim             `json:"optim"`
	Params          map[string]GoldenTensor `json:"params"`
	Inputs          [][]int32               `json:"inputs"`  // (B, T)
	Targets         [][]int32               `json:"targets"` // (B, T)
	Logits          GoldenTensor            `json:"logits"`  // (B·T, V) after softcap
	Loss            float64                 `json:"loss"`    // mean over B·T
	Grads           map[string]GoldenTensor `json:"grads"`   // of the mean loss
	ParamsAfterStep map[string]GoldenTensor `json:"params_after_step"`
	RunInputs       [][][]int32             `json:"run_inputs"`  // (steps, B, T)
	RunTargets      [][][]int32             `json:"run_targets"` // (steps, B, T)
	LossesRun       []float64               `json:"losses_run"`
}

// LoadGolden reads and checks a golden file.
func LoadGolden(path string) (*Golden, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var g Golden
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := g.ModelConfig().Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, set := range []map[string]GoldenTensor{g.Params, g.Grads, g.ParamsAfterStep} {
		for name, t := range set {
			if shapeLen(t.Shape) != len(t.Data) {
				return nil, fmt.Errorf("%s: tensor %q has shape %v but %d values", path, name, t.Shape, len(t.Data))
			}
		}
	}
	return &g, nil
}

// ModelConfig is the golden configuration as a Config (one logit chunk).
func (g *Golden) ModelConfig() Config {
	c := g.Config
	return Config{
		VocabSize: c.VocabSize, NumLayers: c.NumLayers, ModelDim: c.ModelDim,
		NumHeads: c.NumHeads, NumKVHeads: c.NumKVHeads, MLPMult: c.MLPMult,
		LogitSoftcap: c.LogitSoftcap, RopeBase: c.RopeBase,
		QKGainInit: c.QKGainInit, TiedEmbedInitStd: c.TiedEmbedInitStd,
	}
}

// Float32Set returns a tensor set (Params, ParamsAfterStep or Grads) as
// float32 values by name, the form SetWeights takes.
func Float32Set(set map[string]GoldenTensor) map[string][]float32 {
	w := make(map[string][]float32, len(set))
	for name, t := range set {
		w[name] = t.Float32()
	}
	return w
}

// Flat concatenates a (B,T) batch of token ids row-major into (B·T).
func Flat(rows [][]int32) []int32 {
	var v []int32
	for _, r := range rows {
		v = append(v, r...)
	}
	return v
}

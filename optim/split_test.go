package optim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// shapeParams builds the flat parameter list of a configuration by hand,
// with the reference's names, as shape-only tensors (no storage).
func shapeParams(c model.Config) []*model.Param {
	C, kv, hid := c.ModelDim, c.KVDim(), c.ModelDim*c.MLPMult
	var ps []*model.Param
	add := func(name string, shape ...int) {
		ps = append(ps, &model.Param{Name: name, W: &backend.Tensor{Shape: shape, DType: backend.F32}})
	}
	add("tok_emb.weight", c.VocabSize, C)
	add("skip_weights", c.NumSkipWeights(), C)
	for i := range c.NumLayers {
		p := fmt.Sprintf("blocks.%d.", i)
		add(p+"attn.c_q.weight", C, C)
		add(p+"attn.c_k.weight", kv, C)
		add(p+"attn.c_v.weight", kv, C)
		add(p+"attn.proj.weight", C, C)
		add(p+"attn.q_gain", c.NumHeads)
		add(p+"attn_scale", C)
		add(p+"mlp_scale", C)
		add(p+"resid_mix", 2, C)
		add(p+"mlp.fc.weight", hid, C)
		add(p+"mlp.proj.weight", C, hid)
	}
	return ps
}

func TestClassifyBaseline(t *testing.T) {
	g, err := Classify(shapeParams(model.Baseline()), DefaultHyper().ControlPatterns)
	require.NoError(t, err)
	assert.Equal(t, "tok_emb.weight", g.Embed, "embed key")
	assert.Len(t, g.Matrix, 9*6, "matrix keys")
	assert.Len(t, g.Scalar, 9*4+1, "scalar keys")
	for _, k := range g.Matrix {
		assert.Regexp(t, `^blocks\.\d+\..*\.weight$`, k, "matrix key")
	}
	// resid_mix is 2-D but a control tensor: Adam, not Muon.
	assert.Contains(t, g.Scalar, "blocks.3.resid_mix")
	assert.NotContains(t, g.Matrix, "blocks.3.resid_mix")
	for _, k := range []string{"skip_weights", "blocks.0.attn.q_gain", "blocks.8.attn_scale", "blocks.8.mlp_scale"} {
		assert.Contains(t, g.Scalar, k, "scalar keys")
	}
}

func TestClassifyPatternsAndErrors(t *testing.T) {
	ps := shapeParams(model.Config{VocabSize: 8, NumLayers: 2, ModelDim: 4, NumHeads: 2, NumKVHeads: 1, MLPMult: 2})
	// Without control patterns the 2-D resid_mix becomes a Muon matrix.
	g, err := Classify(ps, ParseControlPatterns(""))
	require.NoError(t, err)
	assert.Len(t, g.Matrix, 2*7, "no patterns: matrix keys")
	assert.Len(t, g.Scalar, 2*3+1, "no patterns: scalar keys")
	// A pattern matching a weight name moves it to the scalar Adam.
	g, err = Classify(ps, ParseControlPatterns("resid_mix,,c_q"))
	require.NoError(t, err)
	assert.Len(t, g.Matrix, 2*5, "pattern c_q: matrix keys")
	assert.Contains(t, g.Scalar, "blocks.1.attn.c_q.weight", "pattern c_q: scalar keys")
	extra := append(slices.Clone(ps), &model.Param{Name: "lm_head.weight", W: &backend.Tensor{Shape: []int{8, 4}}})
	_, err = Classify(extra, DefaultHyper().ControlPatterns)
	assert.ErrorContains(t, err, "lm_head.weight", "a parameter in no group")
	_, err = Classify(ps[1:], DefaultHyper().ControlPatterns)
	assert.ErrorContains(t, err, "tok_emb.weight", "no embedding")
	_, err = Classify(append(slices.Clone(ps), ps[3]), DefaultHyper().ControlPatterns)
	assert.ErrorContains(t, err, ps[3].Name, "a repeated name")
}

func TestNewSplitKeysAndState(t *testing.T) {
	b := cpu.New()
	cfg := model.Config{VocabSize: 16, NumLayers: 3, ModelDim: 8, NumHeads: 2, NumKVHeads: 1, MLPMult: 2}
	var ps []*model.Param
	for _, p := range shapeParams(cfg) {
		ps = append(ps, newParam(b, p.Name, make([]float32, p.W.Len()), nil, p.W.Shape...))
	}
	s, err := NewSplit(b, ps, DefaultHyper())
	require.NoError(t, err)
	defer s.Free()
	assert.Len(t, s.MatrixKeys(), 3*6, "matrix keys")
	assert.Len(t, s.ScalarKeys(), 3*4+1, "scalar keys")
	require.NotSame(t, s.Embed, s.Scalar, "embedding and scalar Adam share an instance")
	s.Step(0, 1)
	s.Step(1, 1)
	assert.Equal(t, 2, s.Embed.Steps(), "embedding Adam steps")
	assert.Equal(t, 2, s.Scalar.Steps(), "scalar Adam steps")

	bad := newParam(b, "blocks.0.attn.c_q.weight", make([]float32, 64), nil, 8, 8)
	bad.G = b.New(backend.F32, 4, 16)
	_, err = NewSplit(b, append(ps[:2:2], bad), DefaultHyper())
	assert.ErrorContains(t, err, "shape", "gradient shape mismatch")
	half := newParam(b, "blocks.0.attn.c_q.weight", make([]float32, 64), nil, 8, 8)
	half.G = b.New(backend.BF16, 8, 8)
	_, err = NewSplit(b, append(ps[:2:2], half), DefaultHyper())
	assert.ErrorContains(t, err, "fp32", "bf16 gradient")
}

// BenchmarkSplitStep times one optimizer step of a 2-layer, width-256
// model's parameter set on the CPU backend.
func BenchmarkSplitStep(bm *testing.B) {
	b := cpu.New()
	cfg := model.Config{VocabSize: 1024, NumLayers: 2, ModelDim: 256, NumHeads: 4, NumKVHeads: 2, MLPMult: 2}
	var ps []*model.Param
	for _, p := range shapeParams(cfg) {
		ps = append(ps, newParam(b, p.Name, make([]float32, p.W.Len()), make([]float32, p.W.Len()), p.W.Shape...))
	}
	s, err := NewSplit(b, ps, DefaultHyper())
	if err != nil {
		bm.Fatal(err)
	}
	defer s.Free()
	for i := 0; bm.Loop(); i++ {
		s.Step(i, 1)
	}
}

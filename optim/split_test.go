package optim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

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
	if err != nil {
		t.Fatal(err)
	}
	if g.Embed != "tok_emb.weight" {
		t.Errorf("embed key %q", g.Embed)
	}
	if len(g.Matrix) != 9*6 {
		t.Errorf("%d matrix keys, want 54: %v", len(g.Matrix), g.Matrix)
	}
	if len(g.Scalar) != 9*4+1 {
		t.Errorf("%d scalar keys, want 37: %v", len(g.Scalar), g.Scalar)
	}
	for _, k := range g.Matrix {
		if !strings.HasSuffix(k, ".weight") || !strings.HasPrefix(k, "blocks.") {
			t.Errorf("matrix key %q", k)
		}
	}
	// resid_mix is 2-D but a control tensor: Adam, not Muon.
	if !slices.Contains(g.Scalar, "blocks.3.resid_mix") || slices.Contains(g.Matrix, "blocks.3.resid_mix") {
		t.Errorf("blocks.3.resid_mix misplaced")
	}
	for _, k := range []string{"skip_weights", "blocks.0.attn.q_gain", "blocks.8.attn_scale", "blocks.8.mlp_scale"} {
		if !slices.Contains(g.Scalar, k) {
			t.Errorf("%s not a scalar key", k)
		}
	}
}

func TestClassifyPatternsAndErrors(t *testing.T) {
	ps := shapeParams(model.Config{VocabSize: 8, NumLayers: 2, ModelDim: 4, NumHeads: 2, NumKVHeads: 1, MLPMult: 2})
	// Without control patterns the 2-D resid_mix becomes a Muon matrix.
	g, err := Classify(ps, ParseControlPatterns(""))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Matrix) != 2*7 || len(g.Scalar) != 2*3+1 {
		t.Errorf("no patterns: %d matrix, %d scalar keys, want 14, 7", len(g.Matrix), len(g.Scalar))
	}
	// A pattern matching a weight name moves it to the scalar Adam.
	g, err = Classify(ps, ParseControlPatterns("resid_mix,,c_q"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Matrix) != 2*5 || !slices.Contains(g.Scalar, "blocks.1.attn.c_q.weight") {
		t.Errorf("pattern c_q: matrix %v scalar %v", g.Matrix, g.Scalar)
	}
	extra := append(slices.Clone(ps), &model.Param{Name: "lm_head.weight", W: &backend.Tensor{Shape: []int{8, 4}}})
	if _, err := Classify(extra, DefaultHyper().ControlPatterns); err == nil || !strings.Contains(err.Error(), "lm_head.weight") {
		t.Errorf("unassigned parameter: err = %v", err)
	}
	if _, err := Classify(ps[1:], DefaultHyper().ControlPatterns); err == nil {
		t.Errorf("missing tok_emb.weight accepted")
	}
	if _, err := Classify(append(slices.Clone(ps), ps[3]), DefaultHyper().ControlPatterns); err == nil {
		t.Errorf("repeated name accepted")
	}
}

func TestNewSplitKeysAndState(t *testing.T) {
	b := cpu.New()
	cfg := model.Config{VocabSize: 16, NumLayers: 3, ModelDim: 8, NumHeads: 2, NumKVHeads: 1, MLPMult: 2}
	var ps []*model.Param
	for _, p := range shapeParams(cfg) {
		ps = append(ps, newParam(b, p.Name, make([]float32, p.W.Len()), nil, p.W.Shape...))
	}
	s, err := NewSplit(b, ps, DefaultHyper())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Free()
	if len(s.MatrixKeys()) != 3*6 || len(s.ScalarKeys()) != 3*4+1 {
		t.Errorf("%d matrix, %d scalar keys, want 18, 13", len(s.MatrixKeys()), len(s.ScalarKeys()))
	}
	if s.Embed == s.Scalar {
		t.Fatal("embedding and scalar Adam share an instance")
	}
	s.Step(0, 1)
	s.Step(1, 1)
	if s.Embed.Steps() != 2 || s.Scalar.Steps() != 2 {
		t.Errorf("Adam steps %d, %d, want 2, 2", s.Embed.Steps(), s.Scalar.Steps())
	}

	bad := newParam(b, "blocks.0.attn.c_q.weight", make([]float32, 64), nil, 8, 8)
	bad.G = b.New(backend.F32, 4, 16)
	if _, err := NewSplit(b, append(ps[:2:2], bad), DefaultHyper()); err == nil {
		t.Errorf("gradient shape mismatch accepted")
	}
	half := newParam(b, "blocks.0.attn.c_q.weight", make([]float32, 64), nil, 8, 8)
	half.G = b.New(backend.BF16, 8, 8)
	if _, err := NewSplit(b, append(ps[:2:2], half), DefaultHyper()); err == nil {
		t.Errorf("bf16 gradient accepted")
	}
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

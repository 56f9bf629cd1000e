package train

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/artifact"
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// shapesOf lists the parameter shapes model.New gives cfg (on the counting
// backend), as a saved artifact declares them.
func shapesOf(t *testing.T, cfg model.Config) map[string][]int {
	m, err := model.New(&countingBackend{}, cfg, 0)
	require.NoError(t, err)
	out := map[string][]int{}
	for _, p := range m.Params() {
		out[p.Name] = p.W.Shape
	}
	return out
}

func shapeOnly(c model.Config) model.Config {
	return model.Config{VocabSize: c.VocabSize, NumLayers: c.NumLayers, ModelDim: c.ModelDim,
		NumHeads: c.NumHeads, NumKVHeads: c.NumKVHeads, MLPMult: c.MLPMult}
}

func TestInferModel(t *testing.T) {
	for _, c := range []model.Config{
		model.Baseline(),
		{VocabSize: 77, NumLayers: 5, ModelDim: 48, NumHeads: 6, NumKVHeads: 2, MLPMult: 3},
		{VocabSize: 16, NumLayers: 1, ModelDim: 8, NumHeads: 4, NumKVHeads: 4, MLPMult: 1},
		{VocabSize: 1024, NumLayers: 4, ModelDim: 256, NumHeads: 4, NumKVHeads: 1, MLPMult: 2},
	} {
		c.LogitSoftcap, c.RopeBase = 30, 10000
		got, err := InferModel(shapesOf(t, c))
		require.NoError(t, err)
		assert.Equal(t, shapeOnly(c), got)
	}

	good := shapesOf(t, model.Config{VocabSize: 16, NumLayers: 2, ModelDim: 8, NumHeads: 2, NumKVHeads: 1, MLPMult: 2, LogitSoftcap: 1, RopeBase: 2})
	for _, tc := range []struct {
		name string
		edit func(map[string][]int)
		want string
	}{
		{"no embedding", func(s map[string][]int) { delete(s, "tok_emb.weight") }, "no tensor tok_emb.weight"},
		{"embedding of rank 1", func(s map[string][]int) { s["tok_emb.weight"] = []int{16} }, "tok_emb.weight has shape [16]"},
		{"no blocks", func(s map[string][]int) {
			for n := range s {
				if len(n) > 7 && n[:7] == "blocks." {
					delete(s, n)
				}
			}
		}, "no blocks.<i>"},
		{"bad block index", func(s map[string][]int) { s["blocks.x.attn_scale"] = []int{8} }, "blocks.x.attn_scale"},
		{"heads do not divide the width", func(s map[string][]int) { s["blocks.0.attn.q_gain"] = []int{3} }, "3 heads"},
		{"kv rows not a multiple of the head dim", func(s map[string][]int) { s["blocks.0.attn.c_k.weight"] = []int{5, 8} }, "5 rows"},
		{"mlp rows not a multiple of the width", func(s map[string][]int) { s["blocks.0.mlp.fc.weight"] = []int{12, 8} }, "12 rows"},
		{"no mlp", func(s map[string][]int) { delete(s, "blocks.0.mlp.fc.weight") }, "MLP_MULT"},
	} {
		s := map[string][]int{}
		for k, v := range good {
			s[k] = v
		}
		tc.edit(s)
		_, err := InferModel(s)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestMergeShape(t *testing.T) {
	inferred := model.Config{VocabSize: 1024, NumLayers: 2, ModelDim: 96, NumHeads: 4, NumKVHeads: 2, MLPMult: 2}
	c := model.Baseline()
	require.NoError(t, mergeShape(&c, inferred, ShapeFlags{}, "m.npz"))
	assert.Equal(t, inferred, shapeOnly(c))
	assert.Equal(t, 30.0, c.LogitSoftcap, "knobs an artifact does not record are kept")

	c = model.Baseline()
	c.NumLayers = 2 // given, and equal: fine
	require.NoError(t, mergeShape(&c, inferred, ShapeFlags{NumLayers: true}, "m.npz"))
	c = model.Baseline()
	err := mergeShape(&c, inferred, ShapeFlags{ModelDim: true}, "m.npz")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MODEL_DIM=512 was given")
	assert.Contains(t, err.Error(), "m.npz holds a model with MODEL_DIM=96")
}

// randomModel is a model of cfg with its initial weights as artifact
// tensors.
func randomModel(t *testing.T, cfg model.Config) []artifact.Tensor {
	m, err := model.New(cpu.New(), cfg, 3)
	require.NoError(t, err)
	return modelTensors(m)
}

// TestArtifactLimit: the real artifacts of a model are within the limit,
// and the limit is not loose by more than the documented slack.
func TestArtifactLimit(t *testing.T) {
	cfg := model.Config{VocabSize: 1024, NumLayers: 3, ModelDim: 96, NumHeads: 4, NumKVHeads: 2, MLPMult: 2,
		LogitSoftcap: 30, RopeBase: 10000, TiedEmbedInitStd: 0.005, QKGainInit: 1.5}
	ts := randomModel(t, cfg)
	dir := t.TempDir()
	p := filepath.Join(dir, "m.npz")
	require.NoError(t, artifact.SaveNPZ(p, ts))
	infos, err := artifact.InspectNPZ(p)
	require.NoError(t, err)
	raw := int64(0)
	for _, in := range infos {
		n := int64(4)
		for _, d := range in.Shape {
			n *= int64(d)
		}
		raw += n
	}
	limit := ArtifactLimit(cfg)
	st, _ := os.Stat(p)
	assert.GreaterOrEqual(t, limit, st.Size(), "the .npz file (all its members and headers)")
	assert.LessOrEqual(t, limit, raw+1024*int64(len(infos))+1<<20)
	_, err = LoadArtifact(p, artifact.MaxBytes(limit))
	require.NoError(t, err)

	q, _ := artifact.Quantize(ts, SplitPatterns(DefaultControlPatterns))
	encoded, err := artifact.EncodeQuantized(q)
	require.NoError(t, err)
	assert.Less(t, int64(len(encoded)), limit, "the int8 container's inflated stream")
}

// TestLoadArtifactNonFinite: a NaN or an infinity in a raw model, or an
// infinite scale in an int8 container, is an error naming the tensor.
func TestLoadArtifactNonFinite(t *testing.T) {
	cfg := model.Config{VocabSize: 64, NumLayers: 2, ModelDim: 16, NumHeads: 2, NumKVHeads: 1, MLPMult: 2,
		LogitSoftcap: 30, RopeBase: 10000, TiedEmbedInitStd: 0.005, QKGainInit: 1.5}
	dir := t.TempDir()
	for i, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		ts := randomModel(t, cfg)
		ts[3].Data[5] = bad
		p := filepath.Join(dir, "bad.npz")
		require.NoError(t, artifact.SaveNPZ(p, ts))
		_, err := LoadArtifact(p)
		require.Error(t, err, "case %d", i)
		assert.Contains(t, err.Error(), ts[3].Name)
		assert.Contains(t, err.Error(), "flat index 5")
	}

	// tok_emb (1024, 96) is quantized per row; an infinite row scale.
	cfg.VocabSize, cfg.ModelDim, cfg.NumHeads = 1024, 96, 4
	q, _ := artifact.Quantize(randomModel(t, cfg), nil)
	require.Contains(t, q.Quantized, "tok_emb.weight")
	scales := q.Scales["tok_emb.weight"].Float32s()
	scales[7] = float32(math.Inf(1))
	q.Scales["tok_emb.weight"] = artifact.F16Array([]int{len(scales)}, scales)
	p := filepath.Join(dir, "bad.int8.ptz")
	_, _, err := artifact.SaveQuantized(p, q)
	require.NoError(t, err)
	_, err = LoadArtifact(p)
	assert.ErrorContains(t, err, "tok_emb.weight")
}

// evalConfig evaluates on the embedded data set with flags that do not
// describe the model: Evaluate must take the shape from the file.
func evalConfig(t *testing.T) Config {
	c := Defaults()
	c.DataPath = filepath.Join(t.TempDir(), "absent")
	c.TrainSeqLen, c.ValBatchSize, c.TrainBatchTokens, c.GradAccumSteps = 64, 16384, 4096, 1
	c.DType = backend.F32
	return c
}

func TestEvaluateInfersShape(t *testing.T) {
	cfg := model.Config{VocabSize: 1024, NumLayers: 3, ModelDim: 32, NumHeads: 4, NumKVHeads: 2, MLPMult: 3,
		LogitSoftcap: 30, RopeBase: 10000, TiedEmbedInitStd: 0.005, QKGainInit: 1.5}
	ts := randomModel(t, cfg)
	p := filepath.Join(t.TempDir(), "m.npz")
	require.NoError(t, artifact.SaveNPZ(p, ts))
	var logged []string
	loss, bpb, err := Evaluate(context.Background(), evalConfig(t), ShapeFlags{}, cpu.New(), p, func(s string) { logged = append(logged, s) })
	require.NoError(t, err)
	// Freshly initialised: the tied embedding's logits are near zero, so
	// the loss is near ln V.
	assert.InDelta(t, math.Log(1024), loss, 0.05)
	assert.Greater(t, bpb, 0.0)
	assert.Contains(t, logged[0], "layers:3 dim:32 heads:4 kv_heads:2 mlp_mult:3")

	_, _, err = Evaluate(context.Background(), evalConfig(t), ShapeFlags{NumLayers: true}, cpu.New(), p, nil)
	assert.ErrorContains(t, err, "NUM_LAYERS=9 was given")
}

// TestEvaluateRefuses: broken weights (NaN), weights whose loss overflows,
// and a file whose tensors do not form the inferred model are errors that
// name the file and the tensor.
func TestEvaluateRefuses(t *testing.T) {
	cfg := model.Config{VocabSize: 1024, NumLayers: 2, ModelDim: 32, NumHeads: 4, NumKVHeads: 2, MLPMult: 2,
		LogitSoftcap: 30, RopeBase: 10000, TiedEmbedInitStd: 0.005, QKGainInit: 1.5}
	dir := t.TempDir()
	save := func(name string, edit func(ts []artifact.Tensor) []artifact.Tensor) string {
		p := filepath.Join(dir, name)
		require.NoError(t, artifact.SaveNPZ(p, edit(randomModel(t, cfg))))
		return p
	}
	find := func(ts []artifact.Tensor, name string) int {
		for i, x := range ts {
			if x.Name == name {
				return i
			}
		}
		require.Failf(t, "no such tensor in the model", "%s", name)
		return -1
	}
	for _, tc := range []struct {
		file string
		edit func([]artifact.Tensor) []artifact.Tensor
		want []string
	}{
		{"nan.npz", func(ts []artifact.Tensor) []artifact.Tensor {
			ts[find(ts, "blocks.1.mlp.fc.weight")].Data[0] = float32(math.NaN())
			return ts
		}, []string{"nan.npz", "blocks.1.mlp.fc.weight", "non-finite"}},
		{"overflow.npz", func(ts []artifact.Tensor) []artifact.Tensor {
			// Finite weights whose products overflow float32.
			for _, name := range []string{"blocks.0.attn.c_v.weight", "blocks.0.attn.proj.weight"} {
				d := ts[find(ts, name)].Data
				for i := range d {
					d[i] = 3e38
				}
			}
			return ts
		}, []string{"overflow.npz", "val_loss", "not finite"}},
		{"extra.npz", func(ts []artifact.Tensor) []artifact.Tensor {
			return append(ts, artifact.Tensor{Name: "lm_head.weight", Shape: []int{2}, DType: backend.F32, Data: []float32{1, 2}})
		}, []string{"extra.npz", "lm_head.weight"}},
		{"skip.npz", func(ts []artifact.Tensor) []artifact.Tensor {
			i := find(ts, "skip_weights")
			ts[i].Shape, ts[i].Data = []int{2, 16}, make([]float32, 32)
			return ts
		}, []string{"skip.npz", "skip_weights has shape [2 16], want [1 32]"}},
	} {
		p := save(tc.file, tc.edit)
		_, _, err := Evaluate(context.Background(), evalConfig(t), ShapeFlags{}, cpu.New(), p, nil)
		if assert.Error(t, err, tc.file) {
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		}
	}
}

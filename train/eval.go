package train

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/checkpoint"
	"github.com/golf-ml/golf/model"
)

// isQuantized reports whether path names an int8+zlib container rather
// than a raw .npz (by extension, as golf names its artifacts).
func isQuantized(path string) bool { return !strings.HasSuffix(path, ".npz") }

// ArtifactShapes reads the tensor shapes a raw .npz or an int8 container
// declares, by reference name, from the arrays' headers alone: a .npz is not
// read beyond its headers; a container is inflated once as a stream (its
// payload is not kept), under checkpoint.DefaultMaxBytes.
func ArtifactShapes(path string) (map[string][]int, error) {
	shapes := map[string][]int{}
	if !isQuantized(path) {
		infos, err := checkpoint.InspectNPZ(path)
		if err != nil {
			return nil, err
		}
		for _, a := range infos {
			shapes[a.Name] = a.Shape
		}
		return shapes, nil
	}
	infos, err := checkpoint.InspectQuantized(path)
	if err != nil {
		return nil, err
	}
	for _, a := range infos {
		// The payload of a quantized tensor has the tensor's own shape;
		// scales and the metadata are not tensors of the model.
		for _, prefix := range []string{"quantized/", "passthrough/"} {
			if name, ok := strings.CutPrefix(a.Name, prefix); ok {
				shapes[name] = a.Shape
			}
		}
	}
	return shapes, nil
}

// InferModel reads the architecture off the parameter shapes of a saved
// model (the reference's flat names):
//
//	tok_emb.weight            (V, C)    VOCAB_SIZE = V, MODEL_DIM = C
//	blocks.<i>.…              i < L     NUM_LAYERS = L
//	blocks.0.attn.q_gain      (H)       NUM_HEADS = H
//	blocks.0.attn.c_k.weight  (KV, C)   NUM_KV_HEADS = KV/(C/H)
//	blocks.0.mlp.fc.weight    (F, C)    MLP_MULT = F/C
//
// Only those six fields of the result are set. The shapes are not checked
// against each other beyond what the inference needs; Evaluate compares
// every tensor with the model it builds.
func InferModel(shapes map[string][]int) (model.Config, error) {
	var c model.Config
	get := func(name string, rank int, what string) ([]int, error) {
		s, ok := shapes[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("it has no tensor %s, from which %s is read", name, what)
		case len(s) != rank || s[0] <= 0 || s[len(s)-1] <= 0:
			return nil, fmt.Errorf("its %s has shape %v, want %d positive dimensions (for %s)", name, s, rank, what)
		}
		return s, nil
	}
	emb, err := get("tok_emb.weight", 2, "VOCAB_SIZE and MODEL_DIM")
	if err != nil {
		return c, err
	}
	c.VocabSize, c.ModelDim = emb[0], emb[1]
	for name := range shapes {
		rest, ok := strings.CutPrefix(name, "blocks.")
		if !ok {
			continue
		}
		idx, _, _ := strings.Cut(rest, ".")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= model.MaxTensorElems {
			return c, fmt.Errorf("tensor %s does not name a block index", name)
		}
		c.NumLayers = max(c.NumLayers, i+1)
	}
	if c.NumLayers == 0 {
		return c, fmt.Errorf("it has no blocks.<i>.* tensors, from which NUM_LAYERS is read")
	}
	gain, err := get("blocks.0.attn.q_gain", 1, "NUM_HEADS")
	if err != nil {
		return c, err
	}
	c.NumHeads = gain[0]
	if c.ModelDim%c.NumHeads != 0 {
		return c, fmt.Errorf("its %d heads (blocks.0.attn.q_gain) do not divide MODEL_DIM=%d (tok_emb.weight)", c.NumHeads, c.ModelDim)
	}
	ck, err := get("blocks.0.attn.c_k.weight", 2, "NUM_KV_HEADS")
	if err != nil {
		return c, err
	}
	hd := c.ModelDim / c.NumHeads
	if ck[0]%hd != 0 {
		return c, fmt.Errorf("blocks.0.attn.c_k.weight has %d rows, not a multiple of the head dim %d", ck[0], hd)
	}
	c.NumKVHeads = ck[0] / hd
	fc, err := get("blocks.0.mlp.fc.weight", 2, "MLP_MULT")
	if err != nil {
		return c, err
	}
	if fc[0]%c.ModelDim != 0 {
		return c, fmt.Errorf("blocks.0.mlp.fc.weight has %d rows, not a multiple of MODEL_DIM=%d", fc[0], c.ModelDim)
	}
	c.MLPMult = fc[0] / c.ModelDim
	return c, nil
}

// ShapeFlags records which model-shape knobs the user gave (flag or
// environment variable); Evaluate refuses a given value that differs from
// the model file's and takes the file's for the others.
type ShapeFlags struct {
	VocabSize, NumLayers, ModelDim, NumHeads, NumKVHeads, MLPMult bool
}

// mergeShape sets cfg's six shape fields from the inferred ones, refusing
// an explicitly given value that differs.
func mergeShape(cfg *model.Config, inferred model.Config, set ShapeFlags, path string) error {
	for _, f := range []struct {
		env      string
		given    bool
		dst      *int
		inferred int
		from     string
	}{
		{"VOCAB_SIZE", set.VocabSize, &cfg.VocabSize, inferred.VocabSize, "rows of tok_emb.weight"},
		{"NUM_LAYERS", set.NumLayers, &cfg.NumLayers, inferred.NumLayers, "blocks.<i>"},
		{"MODEL_DIM", set.ModelDim, &cfg.ModelDim, inferred.ModelDim, "columns of tok_emb.weight"},
		{"NUM_HEADS", set.NumHeads, &cfg.NumHeads, inferred.NumHeads, "length of blocks.0.attn.q_gain"},
		{"NUM_KV_HEADS", set.NumKVHeads, &cfg.NumKVHeads, inferred.NumKVHeads, "rows of blocks.0.attn.c_k.weight / head dim"},
		{"MLP_MULT", set.MLPMult, &cfg.MLPMult, inferred.MLPMult, "rows of blocks.0.mlp.fc.weight / MODEL_DIM"},
	} {
		if f.given && *f.dst != f.inferred {
			return fmt.Errorf("%s=%d was given but %s holds a model with %s=%d (%s): drop the setting or evaluate the matching file",
				f.env, *f.dst, path, f.env, f.inferred, f.from)
		}
		*f.dst = f.inferred
	}
	return nil
}

// ArtifactLimit is the most bytes a legitimate artifact of m may decode to:
// its parameters in fp32 (the raw .npz; the int8 container is smaller) plus
// 1 KiB a tensor for .npy and zip headers and the container's metadata,
// plus 1 MiB. m must be valid.
func ArtifactLimit(m model.Config) int64 {
	return 4*int64(model.NumParams(m)) + 1024*int64(2+10*m.NumLayers) + 1<<20
}

// LoadArtifact reads a raw .npz or an int8+zlib container (.ptz) into
// float32 tensors, under the cap opts give (checkpoint.DefaultMaxBytes when
// none), dequantizing a container. A tensor that is not a float tensor, or
// that holds a NaN or an infinity, is an error naming it.
func LoadArtifact(path string, opts ...checkpoint.ReadOption) ([]checkpoint.Tensor, error) {
	var ts []checkpoint.Tensor
	if !isQuantized(path) {
		var err error
		if ts, err = checkpoint.ReadNPZ(path, opts...); err != nil {
			return nil, err
		}
	} else {
		q, err := checkpoint.LoadQuantized(path, opts...)
		if err != nil {
			return nil, err
		}
		ts = checkpoint.Dequantize(q)
	}
	for _, t := range ts {
		if !t.DType.IsFloat() {
			return nil, fmt.Errorf("%s: tensor %s is %v, want a float tensor", path, t.Name, t.DType)
		}
		if i, v, bad := firstNonFinite(t.Data); bad {
			return nil, fmt.Errorf("%s: tensor %s %v holds a non-finite value (%g at flat index %d): the weights are broken",
				path, t.Name, t.Shape, v, i)
		}
	}
	return ts, nil
}

func firstNonFinite(xs []float32) (int, float32, bool) {
	for i, v := range xs {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return i, v, true
		}
	}
	return 0, 0, false
}

// Evaluate computes val_loss and val_bpb of the weights in path on the
// configured validation split, as the final evaluation of a run does. The
// model's shape comes from the file (InferModel); a shape knob the user gave
// (set) must agree with it. LOGIT_SOFTCAP, ROPE_BASE, TRAIN_SEQ_LEN and the
// dtype are not recorded in an artifact and come from cfg. Before the
// weights are read, the evaluation's memory is checked (CPU backend) and the
// file is capped at ArtifactLimit of the model; weights or a loss that are
// not finite are an error.
func Evaluate(ctx context.Context, cfg Config, set ShapeFlags, b backend.Backend, path string, logf func(string)) (valLoss, valBPB float64, err error) {
	shapes, err := ArtifactShapes(path)
	if err != nil {
		return 0, 0, err
	}
	inferred, err := InferModel(shapes)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: cannot read the model's shape: %w", path, err)
	}
	if err := mergeShape(&cfg.Model, inferred, set, path); err != nil {
		return 0, 0, err
	}
	if err := cfg.Validate(); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	if logf != nil {
		m := cfg.Model
		logf(fmt.Sprintf("model:%s vocab_size:%d layers:%d dim:%d heads:%d kv_heads:%d mlp_mult:%d",
			filepath.Base(path), m.VocabSize, m.NumLayers, m.ModelDim, m.NumHeads, m.NumKVHeads, m.MLPMult))
	}
	if _, err := checkMemory(cfg, b, false); err != nil {
		return 0, 0, err
	}
	in, err := prepareInputs(ctx, &cfg, nil)
	if err != nil {
		return 0, 0, err
	}
	ts, err := LoadArtifact(path, checkpoint.MaxBytes(ArtifactLimit(cfg.Model)))
	if err != nil {
		return 0, 0, err
	}
	model.ComputeDType = cfg.DType
	m, err := model.New(b, cfg.Model, uint64(cfg.Seed))
	if err != nil {
		return 0, 0, err
	}
	if err := matchParams(m, ts); err != nil {
		return 0, 0, fmt.Errorf("%s does not hold the model its shapes describe: %w", path, err)
	}
	if err := m.SetWeights(tensorMap(ts)); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	st := &stepper{cfg: cfg, b: b, m: m}
	defer st.free()
	valLoss, valBPB, err = EvalVal(ctx, cfg, m, in.valTokens, in.luts, logf, st.tokens)
	if err != nil {
		return 0, 0, err
	}
	if math.IsNaN(valLoss) || math.IsInf(valLoss, 0) || math.IsNaN(valBPB) || math.IsInf(valBPB, 0) {
		return 0, 0, fmt.Errorf("%s: val_loss is %g and val_bpb %g, not finite: the weights overflow in %s", path, valLoss, valBPB, cfg.DType)
	}
	return valLoss, valBPB, nil
}

// matchParams checks that ts holds exactly m's parameters, each with its
// shape, naming the first difference.
func matchParams(m *model.Model, ts []checkpoint.Tensor) error {
	byName := make(map[string][]int, len(ts))
	for _, t := range ts {
		byName[t.Name] = t.Shape
	}
	for _, p := range m.Params() {
		s, ok := byName[p.Name]
		if !ok {
			return fmt.Errorf("tensor %s %v is missing", p.Name, p.W.Shape)
		}
		if !slices.Equal(s, p.W.Shape) {
			return fmt.Errorf("tensor %s has shape %v, want %v", p.Name, s, p.W.Shape)
		}
		delete(byName, p.Name)
	}
	if len(byName) > 0 {
		extra := make([]string, 0, len(byName))
		for n := range byName {
			extra = append(extra, n)
		}
		sort.Strings(extra)
		return fmt.Errorf("tensors %s are not parameters of the model", strings.Join(extra, ", "))
	}
	return nil
}

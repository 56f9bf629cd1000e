package train

import (
	"context"
	"fmt"
	"strings"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/checkpoint"
	"github.com/golf-ml/golf/model"
)

// LoadArtifact reads a raw .npz or an int8+zlib container (.ptz) into
// float32 master weights by reference name.
func LoadArtifact(path string) (map[string][]float32, error) {
	var ts []checkpoint.Tensor
	if strings.HasSuffix(path, ".npz") {
		var err error
		if ts, err = checkpoint.ReadNPZ(path); err != nil {
			return nil, err
		}
	} else {
		q, err := checkpoint.LoadQuantized(path)
		if err != nil {
			return nil, err
		}
		ts = checkpoint.Dequantize(q)
	}
	return tensorMap(ts), nil
}

// Evaluate computes val_loss and val_bpb of the weights in path on the
// configured validation split, as the final evaluation of a run does.
func Evaluate(ctx context.Context, cfg Config, b backend.Backend, path string, logf func(string)) (valLoss, valBPB float64, err error) {
	if err := cfg.Validate(); err != nil {
		return 0, 0, err
	}
	in, err := prepareInputs(&cfg)
	if err != nil {
		return 0, 0, err
	}
	w, err := LoadArtifact(path)
	if err != nil {
		return 0, 0, err
	}
	model.ComputeDType = cfg.DType
	m, err := model.New(b, cfg.Model, uint64(cfg.Seed))
	if err != nil {
		return 0, 0, err
	}
	if err := m.SetWeights(w); err != nil {
		return 0, 0, fmt.Errorf("%s does not fit the configured model (check VOCAB_SIZE, NUM_LAYERS, MODEL_DIM, NUM_HEADS, NUM_KV_HEADS, MLP_MULT): %w", path, err)
	}
	st := &stepper{cfg: cfg, b: b, m: m}
	defer st.free()
	return EvalVal(ctx, cfg, m, in.valTokens, in.luts, logf, st.tokens)
}

package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/model"
)

// TestEvalValBitsPerByte checks val_loss and val_bpb end to end against
// numbers that do not come from golf: a model whose weights are all zero
// predicts the uniform distribution, so every token's loss is ln V; the
// byte count of the targets is the real sentencepiece library's, through
// the reference's LUT formula (data/testdata/fineweb_8192_luts.json, made
// by scripts/spm_luts_golden.py). So
//
//	val_loss = ln 8192,  val_bpb = log2(8192) · targets / bytes = 13 · 134 / 226
func TestEvalValBitsPerByte(t *testing.T) {
	var golden struct {
		Sample struct {
			IDs         []int32 `json:"ids"`
			TargetBytes float64 `json:"target_bytes"`
		} `json:"sample"`
	}
	b, err := os.ReadFile(filepath.Join("..", "data", "testdata", "fineweb_8192_luts.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &golden))
	ids := golden.Sample.IDs
	require.Len(t, ids, 135)
	require.Equal(t, 226.0, golden.Sample.TargetBytes)
	tok, err := data.LoadSentencePiece(filepath.Join("..", "data", "testdata", "fineweb_8192_bpe.model"))
	require.NoError(t, err)

	cfg := Defaults()
	cfg.Model.VocabSize, cfg.Model.NumLayers, cfg.Model.ModelDim, cfg.Model.NumHeads, cfg.Model.NumKVHeads = 8192, 2, 16, 2, 1
	cfg.TrainSeqLen = len(ids) - 1 // one sequence of 134 targets
	cfg.GradAccumSteps = 1
	cfg.ValBatchSize = 4 * cfg.TrainSeqLen
	cfg.DType = backend.F32
	model.UseComputeDType(t, backend.F32)
	be := cpu.New()
	m, err := model.New(be, cfg.Model, 1)
	require.NoError(t, err)
	zero := map[string][]float32{}
	for _, p := range m.Params() {
		zero[p.Name] = make([]float32, p.W.Len())
	}
	require.NoError(t, m.SetWeights(zero))
	st := &stepper{cfg: cfg, b: be, m: m}
	defer st.free()

	valLoss, valBPB, err := EvalVal(context.Background(), cfg, m, ids, data.NewByteLUTs(tok, 8192), nil, st.tokens)
	require.NoError(t, err)
	lnV := float64(float32(math.Log(8192))) // each row's loss, computed in float32
	assert.InEpsilon(t, lnV, valLoss, 1e-12)
	assert.InEpsilon(t, 13.0*134/226, valBPB, 1e-7)
}

//go:build cgo

package metal

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/train"
)

// TestTrainRunEmulated runs golf's whole training program (embedded data,
// warm-up, training loop, validation, both artifacts and the int8 round
// trip) on the Metal backend over the emulator and checks its losses and
// val_bpb against the same run on the CPU backend.
func TestTrainRunEmulated(t *testing.T) {
	dataPath, tokPath := smallDataset(t)
	cfg := func(dt backend.DType) train.Config {
		c := train.Defaults()
		c.DataPath, c.TokenizerPath, c.DataPathSet, c.TokenizerPathSet = dataPath, tokPath, true, true
		c.OutDir = t.TempDir()
		c.RunID = "emu"
		c.Iterations = 4
		c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 3, 32, 4, 2
		c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 32, 256, 2, 64
		c.ValBatchSize = 2048
		c.WarmupSteps, c.WarmdownIters, c.MaxWallclockSeconds = 1, 2, 0
		c.DType = dt
		return c
	}
	for _, dt := range []backend.DType{backend.F32, backend.BF16} {
		t.Run(dt.String(), func(t *testing.T) {
			ref, err := train.Run(context.Background(), cfg(dt), cpu.New(), nil)
			require.NoError(t, err, "train.Run on the cpu backend")
			got, err := train.Run(context.Background(), cfg(dt), New(NewEmulatedRuntime(Simd)), nil)
			require.NoError(t, err, "train.Run on the metal backend")
			// fp32: the two backends differ only in summation order; bf16:
			// also in where near-ties of stored activations round.
			tol := 1e-4
			if dt == backend.BF16 {
				tol = 2e-2
			}
			require.Len(t, got.TrainLosses, len(ref.TrainLosses), "train losses")
			for i := range ref.TrainLosses {
				a, b := ref.TrainLosses[i].Loss, got.TrainLosses[i].Loss
				assert.InEpsilon(t, a, b, tol, "step %d: train loss cpu %.6f, metal %.6f", i+1, a, b)
			}
			assert.InEpsilon(t, ref.ValBPB, got.ValBPB, tol, "val_bpb cpu %.6f, metal %.6f", ref.ValBPB, got.ValBPB)
			assert.InEpsilon(t, ref.QValBPB, got.QValBPB, tol, "int8 round-trip val_bpb cpu %.6f, metal %.6f", ref.QValBPB, got.QValBPB)
			t.Logf("train losses cpu %v", ref.TrainLosses)
			t.Logf("train losses metal %v; val_bpb %.5f vs %.5f", got.TrainLosses, ref.ValBPB, got.ValBPB)
		})
	}
}

// smallDataset cuts the embedded data set down to 1,025 validation and
// 20,000 training tokens, so a run over the emulator stays quick.
func smallDataset(t *testing.T) (dataPath, tokPath string) {
	t.Helper()
	src, tok, err := data.ExtractEmbedded(t.TempDir())
	require.NoError(t, err, "extracting the embedded data set")
	dir := filepath.Join(t.TempDir(), "small")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, s := range []struct {
		name string
		n    int
	}{{"fineweb_val_000000.bin", 1025}, {"fineweb_train_000000.bin", 20000}} {
		toks, err := data.ReadShard(filepath.Join(src, s.name))
		require.NoError(t, err, "reading %s", s.name)
		require.GreaterOrEqual(t, len(toks), s.n, "tokens in %s", s.name)
		require.NoError(t, data.WriteShard(filepath.Join(dir, s.name), toks[:s.n]), "writing %s", s.name)
	}
	return dir, tok
}

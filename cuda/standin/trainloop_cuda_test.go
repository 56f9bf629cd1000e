//go:build cuda

package standin

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/internal/kemu/cudacpp"
	"github.com/golf-ml/golf/train"
)

// counts is what the backend and the stand-in had counted when the
// training loop wrote a step's train_loss line.
type counts struct {
	b cuda.Stats
	s cudacpp.Stats
}

// countsAtLines records the counts at each train_loss line.
type countsAtLines struct {
	b  *cuda.Backend
	mu sync.Mutex
	at map[int]counts // by step
}

var trainLine = regexp.MustCompile(`^step:(\d+)/\d+ train_loss:`)

func (c *countsAtLines) Write(p []byte) (int, error) {
	if m := trainLine.FindSubmatch(bytes.TrimSpace(p)); m != nil {
		step, _ := strconv.Atoi(string(m[1]))
		c.mu.Lock()
		c.at[step] = counts{c.b.Stats(), handle.Stats()}
		c.mu.Unlock()
	}
	return len(p), nil
}

// smallDataset writes a few thousand tokens of the embedded dataset.
func smallDataset(t *testing.T) (dataPath, tokPath string) {
	t.Helper()
	src, tok, err := data.ExtractEmbedded(t.TempDir())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "small")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, s := range []struct {
		name string
		n    int
	}{{"fineweb_val_000000.bin", 1025}, {"fineweb_train_000000.bin", 20000}} {
		toks, err := data.ReadShard(filepath.Join(src, s.name))
		require.NoError(t, err)
		require.NoError(t, data.WriteShard(filepath.Join(dir, s.name), toks[:s.n]))
	}
	return dir, tok
}

// TestTrainLoopHostWaits runs golf's real training loop (train.Run) on the
// CUDA backend over the stand-in (tc kernels, cuBLASLt) and counts, on the
// backend and independently in the stand-in driver, the host's waits for
// the device and the device allocations: the five steps 11–15 between the
// lines of steps 10 and 15 (TRAIN_LOG_EVERY=5) wait once, at step 15's
// read of the losses, with no staging wait; every step up to 10 logs (as
// the reference does) and waits once; and no step after the first
// allocates device memory. Each
// step has 4 microbatch chunks, so the uploads of 8 token batches per step
// go through the staging buffer without a wait.
func TestTrainLoopHostWaits(t *testing.T) {
	b := open(t, cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMCublasLt})
	dataPath, tokPath := smallDataset(t)
	c := train.Defaults()
	c.DataPath, c.TokenizerPath, c.DataPathSet, c.TokenizerPathSet = dataPath, tokPath, true, true
	c.OutDir = t.TempDir()
	c.RunID = "waits"
	c.Iterations = 15
	c.TrainLogEvery = 5
	c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 2, 32, 4, 2
	c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 32, 256, 2, 64
	c.ValBatchSize = 2048
	c.WarmupSteps, c.WarmdownIters, c.MaxWallclockSeconds = 0, 4, 0
	c.Checkpoint.EverySeconds = 0
	c.DType = backend.BF16
	rec := &countsAtLines{b: b, at: map[int]counts{}}
	_, err := train.Run(context.Background(), c, b, rec)
	require.NoError(t, err, "stand-in: %s", handle.LastError())
	require.Contains(t, rec.at, 1)
	require.Contains(t, rec.at, 10)
	require.Contains(t, rec.at, 15)

	d, s := rec.at[15].b.Sub(rec.at[10].b), rec.at[15].s.Sub(rec.at[10].s)
	t.Logf("steps 11-15: %d launches, %d matmuls, %d syncs, %d staging waits, %d allocations; the stand-in: %d waits (%d with work queued)",
		d.Launches, d.Matmuls, d.Syncs, d.StagingWaits, d.Allocs, s.Syncs, s.BlockingSyncs)
	assert.EqualValues(t, 1, d.Syncs, "one host wait in five steps: step 15's read of the losses")
	assert.EqualValues(t, 0, d.StagingWaits)
	assert.EqualValues(t, 1, s.BlockingSyncs, "the stand-in saw one wait with work queued")
	assert.Positive(t, d.Launches)
	assert.Positive(t, d.Matmuls)
	for step := 2; step <= 10; step++ {
		d := rec.at[step].b.Sub(rec.at[step-1].b)
		assert.EqualValues(t, 1, d.Syncs+d.StagingWaits, "step %d logs and waits once", step)
	}
	all, stand := rec.at[15].b.Sub(rec.at[1].b), rec.at[15].s.Sub(rec.at[1].s)
	assert.EqualValues(t, 0, all.Allocs, "device allocations in steps 2-15")
	assert.EqualValues(t, 0, stand.Allocs, "cuMemAlloc calls in steps 2-15, as the stand-in counted them")
	assert.EqualValues(t, 0, stand.ImplicitSyncs)
}

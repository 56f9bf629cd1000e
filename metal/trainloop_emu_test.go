//go:build cgo

package metal

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/train"
)

// statsAtLines records the runtime's counters each time the training loop
// writes a train_loss line.
type statsAtLines struct {
	b  *Backend
	mu sync.Mutex
	at map[int]Stats // by step
}

var trainLine = regexp.MustCompile(`^step:(\d+)/\d+ train_loss:`)

func (s *statsAtLines) Write(p []byte) (int, error) {
	if m := trainLine.FindSubmatch(bytes.TrimSpace(p)); m != nil {
		step, _ := strconv.Atoi(string(m[1]))
		s.mu.Lock()
		s.at[step] = s.b.Stats()
		s.mu.Unlock()
	}
	return len(p), nil
}

// TestTrainLoopHostWaits runs golf's real training loop (train.Run) on the
// Metal backend over the emulated runtime and counts the host's waits on
// the GPU between two logged steps: the ten steps 11–20 between the lines
// of steps 10 and 20 (TRAIN_LOG_EVERY=10) wait once, at step 20's read of
// the losses, and never drain the GPU otherwise; every step before 10 logs
// and waits once.
func TestTrainLoopHostWaits(t *testing.T) {
	dataPath, tokPath := smallDataset(t)
	c := train.Defaults()
	c.DataPath, c.TokenizerPath, c.DataPathSet, c.TokenizerPathSet = dataPath, tokPath, true, true
	c.OutDir = t.TempDir()
	c.RunID = "waits"
	c.Iterations = 20
	c.TrainLogEvery = 10
	c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 2, 32, 4, 2
	c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 32, 256, 2, 64
	c.ValBatchSize = 2048
	c.WarmupSteps, c.WarmdownIters, c.MaxWallclockSeconds = 0, 4, 0
	c.Checkpoint.EverySeconds = 0
	c.DType = backend.BF16
	b, err := Open(NewEmulatedRuntime(Simd))
	require.NoError(t, err)
	rec := &statsAtLines{b: b, at: map[int]Stats{}}
	_, err = train.Run(context.Background(), c, b, rec)
	require.NoError(t, err)
	require.Contains(t, rec.at, 10)
	require.Contains(t, rec.at, 20)
	d := rec.at[20].Sub(rec.at[10])
	t.Logf("steps 11-20: %d dispatches, %d command buffers, %d Sync, %d drains, %d partial waits, %d throttles",
		d.Dispatches, d.CommandBuffers, d.Syncs, d.Drains, d.PartialWaits, d.Throttles)
	assert.EqualValues(t, 0, d.Syncs, "no Sync in steps 11-20")
	assert.EqualValues(t, 1, d.Drains+d.PartialWaits, "one wait in ten steps: step 20's read of the losses")
	for step := 2; step <= 10; step++ {
		d := rec.at[step].Sub(rec.at[step-1])
		assert.EqualValues(t, 1, d.Drains+d.PartialWaits, "step %d logs and waits once", step)
	}
}

//go:build cgo

package metal

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/train"
)

// TestReproducibleEmulated trains the same configuration and seed twice on
// the Metal backend over the emulator, whose threadgroups run on a pool of
// GOMAXPROCS OS threads: once on one thread, once on four. Every train
// loss, the validation figures, the weights and every artifact must be
// bit-identical; a kernel whose threadgroups raced, or whose result
// depended on the order in which they ran, would differ.
func TestReproducibleEmulated(t *testing.T) {
	dataPath, tokPath := smallDataset(t)
	// Validation on 8 sequences only: the emulator's time goes to the
	// logits of every validation token.
	val := filepath.Join(dataPath, "fineweb_val_000000.bin")
	toks, err := data.ReadShard(val)
	require.NoError(t, err)
	require.NoError(t, data.WriteShard(val, toks[:8*32+1]))
	type run struct {
		losses    []uint64
		val       [4]uint64
		artifacts map[string][]byte
	}
	train1 := func(procs int) run {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		c := train.Defaults()
		c.DataPath, c.TokenizerPath, c.DataPathSet, c.TokenizerPathSet = dataPath, tokPath, true, true
		c.OutDir = t.TempDir()
		c.RunID, c.Seed = "emu", 5
		c.Iterations = 2
		c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 2, 32, 4, 2
		c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 32, 256, 1, 128 // two chunks accumulate
		c.ValBatchSize = 256
		c.WarmupSteps, c.WarmdownIters, c.MaxWallclockSeconds = 0, 1, 0
		c.Optim.GradClipNorm = 1
		c.DType = backend.BF16
		res, err := train.Run(context.Background(), c, New(NewEmulatedRuntime(Simd)), nil)
		require.NoError(t, err)
		require.Len(t, res.TrainLosses, c.Iterations)
		r := run{artifacts: map[string][]byte{}}
		for _, p := range res.TrainLosses {
			r.losses = append(r.losses, math.Float64bits(p.Loss))
		}
		for i, v := range []float64{res.ValLoss, res.ValBPB, res.QValLoss, res.QValBPB} {
			r.val[i] = math.Float64bits(v)
		}
		for _, p := range []string{res.ModelPath, res.QuantPath, res.SummaryPath, res.PlotPath} {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			r.artifacts[filepath.Base(p)] = b
		}
		return r
	}
	a, b := train1(1), train1(4)
	assert.Equal(t, a.losses, b.losses, "train losses, bit for bit")
	assert.Equal(t, a.val, b.val, "val_loss, val_bpb and their int8 round trip, bit for bit")
	for name, x := range a.artifacts {
		assert.True(t, string(x) == string(b.artifacts[name]), "%s differs between 1 and 4 threads", name)
	}
}

package train

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/trainstate"
)

// resumeConfig is a small run with validation and checkpoints inside the
// window the resume tests cut.
func resumeConfig(t *testing.T, dt backend.DType) Config {
	c := Defaults()
	c.DataPath = filepath.Join(t.TempDir(), "absent")
	c.OutDir = filepath.Join(t.TempDir(), "out")
	c.RunID = "resume"
	c.Seed = 11
	c.Iterations = 14
	c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 2, 64, 4, 2
	c.TrainSeqLen = 32
	c.TrainBatchTokens = 512
	c.GradAccumSteps = 2
	c.MaxMicrobatchTokens = 128 // two chunks per microbatch
	c.ValBatchSize = 8192
	c.ValLossEvery = 7
	c.WarmupSteps = 1
	c.WarmdownIters = 6
	c.MaxWallclockSeconds = 0
	c.TrainLogEvery = 1
	c.DType = dt
	c.Checkpoint = CheckpointConfig{Every: 4, Keep: 2}
	return c
}

// stopAfterLine cancels a run's context, as a signal does, when the log
// line starting with prefix has been written.
type stopAfterLine struct {
	prefix []byte
	cancel context.CancelCauseFunc
}

var errTestSignal = errors.New("test signal")

func (w *stopAfterLine) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, w.prefix) {
		w.cancel(errTestSignal)
	}
	return len(p), nil
}

// overflowAt wraps a backend so that the backward of the softcapped loss
// overflows (every gradient becomes non-finite) at the given call indices
// counted from at; the dynamic loss scaler must skip those steps.
type overflowAt struct {
	backend.Backend
	calls int
	at    map[int]bool
}

func (o *overflowAt) SoftcapCEBackward(dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	if o.at[o.calls] {
		scale = float32(math.Inf(1))
	}
	o.calls++
	o.Backend.SoftcapCEBackward(dlogits, logits, targets, cap, scale)
}

func (o *overflowAt) SoftcapCEForwardBackward(loss, dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	if o.at[o.calls] {
		scale = float32(math.Inf(1))
	}
	o.calls++
	o.Backend.SoftcapCEForwardBackward(loss, dlogits, logits, targets, cap, scale)
}

var trainLossLine = regexp.MustCompile(`(?m)^step:(\d+)/\d+ train_loss:(\S+) `)

// logLosses maps each logged step to its train loss as printed.
func logLosses(t *testing.T, path string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[int]string{}
	for _, m := range trainLossLine.FindAllStringSubmatch(string(b), -1) {
		step, _ := strconv.Atoi(m[1])
		out[step] = m[2]
	}
	return out
}

func requireSameFiles(t *testing.T, a, b *Result) {
	t.Helper()
	for _, p := range [][2]string{{a.ModelPath, b.ModelPath}, {a.QuantPath, b.QuantPath}, {a.SummaryPath, b.SummaryPath}, {a.PlotPath, b.PlotPath}} {
		x, err := os.ReadFile(p[0])
		require.NoError(t, err)
		y, err := os.ReadFile(p[1])
		require.NoError(t, err)
		assert.True(t, bytes.Equal(x, y), "%s and %s differ", p[0], p[1])
	}
}

// TestResumeIdentity: N steps straight, and k steps + interrupt + resume +
// N−k steps, give bit-identical losses, weights and artifacts, in every
// dtype; fp16 with an overflow (a skipped step and a halved loss scale)
// inside the resumed window.
func TestResumeIdentity(t *testing.T) {
	for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			const stopAt = 6
			wrap := func(offset int) backend.Backend {
				if dt != backend.F16 {
					return cpu.New()
				}
				// step 9 (1-based) overflows: its two microbatches × two
				// chunks are calls 32..35 of a run without warm-up.
				return &overflowAt{Backend: cpu.New(), at: map[int]bool{32 - offset: true}}
			}
			cfg := resumeConfig(t, dt)
			if dt == backend.F16 {
				cfg.WarmupSteps = 0
			}
			straight, err := Run(context.Background(), cfg, wrap(0), nil)
			require.NoError(t, err)

			cut := cfg
			cut.OutDir = filepath.Join(t.TempDir(), "cut")
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			_, err = Run(ctx, cut, wrap(0), &stopAfterLine{prefix: []byte("step:" + strconv.Itoa(stopAt) + "/"), cancel: cancel})
			var ie *Interrupted
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, stopAt, ie.Step)
			assert.ErrorIs(t, err, errTestSignal)
			assert.Equal(t, filepath.Join(trainstate.Dir(cut.OutDir, cut.RunID), trainstate.FileName(stopAt)), ie.Checkpoint)
			cps, err := trainstate.List(trainstate.Dir(cut.OutDir, cut.RunID))
			require.NoError(t, err)
			require.Len(t, cps, 2, "CHECKPOINT_EVERY=4 saved step 4; the interrupt saved step 6")
			assert.Equal(t, []int{4, 6}, []int{cps[0].Step, cps[1].Step})

			cut.Checkpoint.Resume = "latest"
			resumed, err := Run(context.Background(), cut, wrap(2*2*stopAt), nil)
			require.NoError(t, err)

			require.Len(t, resumed.TrainLosses, len(straight.TrainLosses))
			for i := range straight.TrainLosses {
				assert.Equal(t, math.Float64bits(straight.TrainLosses[i].Loss), math.Float64bits(resumed.TrainLosses[i].Loss), "train loss of step %d", i+1)
			}
			assert.Equal(t, math.Float64bits(straight.ValLoss), math.Float64bits(resumed.ValLoss))
			assert.Equal(t, math.Float64bits(straight.QValBPB), math.Float64bits(resumed.QValBPB))
			requireSameFiles(t, straight, resumed)
			a, b := logLosses(t, straight.LogPath), logLosses(t, resumed.LogPath)
			assert.Len(t, a, cfg.Iterations)
			assert.Equal(t, a, b, "the logged train losses")
			if dt == backend.F16 {
				log, err := os.ReadFile(resumed.LogPath)
				require.NoError(t, err)
				assert.Contains(t, string(log), "loss_scale: non-finite gradients at step:9, step skipped, scale now 32768")
				assert.True(t, math.IsNaN(straight.TrainLosses[8].Loss) || math.IsInf(straight.TrainLosses[8].Loss, 0) || straight.TrainLosses[8].Loss > 0)
			}
			_, err = os.Stat(trainstate.Dir(cut.OutDir, cut.RunID))
			assert.True(t, os.IsNotExist(err), "a finished run leaves no training state")
		})
	}
}

// TestResumeFromOlderCheckpoint resumes from the first of two checkpoints,
// as after a kill -9 between checkpoints: the run repeats the lost steps
// and still ends identical to the straight run.
func TestResumeFromOlderCheckpoint(t *testing.T) {
	cfg := resumeConfig(t, backend.BF16)
	straight, err := Run(context.Background(), cfg, cpu.New(), nil)
	require.NoError(t, err)

	cut := cfg
	cut.OutDir = filepath.Join(t.TempDir(), "cut")
	ctx, cancel := context.WithCancelCause(context.Background())
	_, err = Run(ctx, cut, cpu.New(), &stopAfterLine{prefix: []byte("step:10/"), cancel: cancel})
	require.Error(t, err)
	cps, err := trainstate.List(trainstate.Dir(cut.OutDir, cut.RunID))
	require.NoError(t, err)
	require.Len(t, cps, 2)
	require.Equal(t, 8, cps[0].Step)
	cut.Checkpoint.Resume = cps[0].Path
	resumed, err := Run(context.Background(), cut, cpu.New(), nil)
	require.NoError(t, err)
	requireSameFiles(t, straight, resumed)
}

// TestResumeRefusals: a different model, dtype or data, a corrupt or
// truncated file, and a fresh start over unfinished state are refused
// before any work, naming what differs.
func TestResumeRefusals(t *testing.T) {
	cfg := resumeConfig(t, backend.BF16)
	ctx, cancel := context.WithCancelCause(context.Background())
	_, err := Run(ctx, cfg, cpu.New(), &stopAfterLine{prefix: []byte("step:4/"), cancel: cancel})
	require.Error(t, err)
	cps, err := trainstate.List(trainstate.Dir(cfg.OutDir, cfg.RunID))
	require.NoError(t, err)
	require.Len(t, cps, 1)
	path := cps[0].Path

	_, err = Run(context.Background(), cfg, cpu.New(), nil)
	assert.ErrorContains(t, err, "unfinished training state", "a fresh run over unfinished state")

	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want []string
	}{
		{"width", func(c *Config) { c.Model.ModelDim = 96 }, []string{"model.ModelDim: 64 in the checkpoint, 96 now"}},
		{"dtype", func(c *Config) { c.DType = backend.F32 }, []string{"dtype"}},
		{"batch and lr", func(c *Config) { c.TrainBatchTokens = 1024; c.Optim.MatrixLR = 0.01 }, []string{"train_batch_tokens", "optim.MatrixLR"}},
		{"run id", func(c *Config) { c.RunID = "other" }, []string{"belongs to RUN_ID=resume"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.Checkpoint.Resume = path
			tc.edit(&c)
			_, err := Run(context.Background(), c, cpu.New(), nil)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	t.Run("data", func(t *testing.T) {
		dp, tp := copyEmbedded(t)
		shard := filepath.Join(dp, "fineweb_train_000000.bin")
		b, err := os.ReadFile(shard)
		require.NoError(t, err)
		b[len(b)-1] ^= 1 // one token changed
		require.NoError(t, os.WriteFile(shard, b, 0o644))
		c := cfg
		c.DataPath, c.TokenizerPath, c.DataPathSet, c.TokenizerPathSet = dp, tp, true, true
		c.Checkpoint.Resume = path
		_, err = Run(context.Background(), c, cpu.New(), nil)
		assert.ErrorContains(t, err, "data:")
	})
	t.Run("corrupt", func(t *testing.T) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		bad := filepath.Join(t.TempDir(), "bad.state")
		b[len(b)/2] ^= 0xff
		require.NoError(t, os.WriteFile(bad, b, 0o644))
		c := cfg
		c.Checkpoint.Resume = bad
		_, err = Run(context.Background(), c, cpu.New(), nil)
		assert.ErrorContains(t, err, bad)
		assert.ErrorContains(t, err, "checksum")
		require.NoError(t, os.WriteFile(bad, b[:len(b)/3], 0o644))
		_, err = Run(context.Background(), c, cpu.New(), nil)
		assert.ErrorContains(t, err, bad)
	})
}

// copyEmbedded copies the embedded data set into a fresh directory and
// returns its DATA_PATH and TOKENIZER_PATH.
func copyEmbedded(t *testing.T) (string, string) {
	t.Helper()
	dp, tp, err := data.ExtractEmbedded(t.TempDir())
	require.NoError(t, err)
	root := filepath.Dir(filepath.Dir(dp))
	dst := t.TempDir()
	require.NoError(t, os.CopyFS(dst, os.DirFS(root)))
	rel, err := filepath.Rel(root, tp)
	require.NoError(t, err)
	return filepath.Join(dst, "datasets", data.EmbeddedDataset), filepath.Join(dst, rel)
}

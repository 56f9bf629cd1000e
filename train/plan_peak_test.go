package train

import (
	"context"
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
	"github.com/golf-ml/golf/internal/racebuild"
)

// embeddedData is a private copy of the embedded data set (the whole
// validation split: 55,808 tokens, so most batch sizes leave a shorter last
// batch).
func embeddedData(t *testing.T) (dataPath, tokPath string) {
	t.Helper()
	dp, tp, err := data.ExtractEmbedded(t.TempDir())
	require.NoError(t, err)
	return dp, tp
}

// valShardSeqs counts the validation sequences of seqLen in dataPath from
// the shard files' sizes alone (a shard is a 1,024-byte header and 2 bytes
// a token; the split is trimmed to whole sequences plus one target).
func valShardSeqs(t *testing.T, dataPath string, seqLen int) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataPath, "fineweb_val_*.bin"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	tokens := int64(0)
	for _, f := range files {
		st, err := os.Stat(f)
		require.NoError(t, err)
		tokens += (st.Size() - 1024) / 2
	}
	return int((tokens - 1) / int64(seqLen))
}

// planConfigs are the configurations whose plan is checked against a run:
// golf train --smoke, and tiny ones that take a shorter last chunk, several
// accumulation steps, logit chunks and fp16's loss scaler.
func planConfigs(dp, tp string) map[string]Config {
	base := func() Config {
		c := Defaults()
		c.DataPath, c.TokenizerPath, c.DataPathSet, c.TokenizerPathSet = dp, tp, true, true
		c.RunID, c.Iterations, c.WarmupSteps, c.WarmdownIters, c.TrainLogEvery = "plan", 1, 1, 1, 1
		return c
	}
	smoke := base()
	smoke.Model.NumLayers, smoke.Model.ModelDim, smoke.Model.NumHeads, smoke.Model.NumKVHeads = 4, 256, 4, 2
	smoke.TrainSeqLen, smoke.TrainBatchTokens, smoke.GradAccumSteps, smoke.MaxMicrobatchTokens = 256, 4096, 1, 4096
	smoke.ValBatchSize, smoke.TrainLogEvery, smoke.MaxWallclockSeconds = 16384, 10, 0

	tiny := base()
	tiny.Model.NumLayers, tiny.Model.ModelDim, tiny.Model.NumHeads, tiny.Model.NumKVHeads = 1, 32, 2, 1
	tiny.TrainSeqLen, tiny.TrainBatchTokens, tiny.GradAccumSteps, tiny.MaxMicrobatchTokens = 32, 1024, 1, 1024
	tiny.ValBatchSize = 1024 // training chunks and validation batches share their token buffers

	odd := tiny
	odd.Model.NumLayers = 3
	odd.TrainBatchTokens, odd.GradAccumSteps, odd.MaxMicrobatchTokens = 320, 2, 64 // 160-token microbatches: chunks of 64, 64, 32
	odd.ValBatchSize = 2 * 1536                                                    // batches of 48 sequences
	odd.Model.LogitChunkTokens = 512
	odd.DType = backend.F16
	return map[string]Config{"smoke": smoke, "tiny": tiny, "tail chunk, accumulation, logit chunks, fp16": odd}
}

// TestPlanBoundsRunPeak runs each configuration on the CPU backend and
// compares its measured peak of live tensors (what the run logs as "peak
// memory allocated") with the plan: the plan must not be below it, nor
// above twice it. Read with the split's length from the shard headers the
// plan is the run's peak; without it (an unknown split) it is still a bound.
func TestPlanBoundsRunPeak(t *testing.T) {
	dp, tp := embeddedData(t)
	for name, cfg := range planConfigs(dp, tp) {
		t.Run(name, func(t *testing.T) {
			if racebuild.Enabled && name == "smoke" {
				t.Skip("a minute of the race detector's time; the tiny configurations check the same")
			}
			cfg.OutDir = t.TempDir()
			plan, err := PlanMemory(cfg)
			require.NoError(t, err)
			unknown := cfg
			unknown.DataPath = filepath.Join(t.TempDir(), "absent")
			blind, err := PlanMemory(unknown)
			require.NoError(t, err)

			b := cpu.New()
			res, err := Run(context.Background(), cfg, b, nil)
			require.NoError(t, err)
			_, measured := b.AllocatedBytes()
			t.Logf("measured peak %d bytes (%.1f MiB); plan %d (%.1f MiB), %.3f×; without the split's length %d (%.3f×)",
				measured, float64(measured)/(1<<20), plan.Peak, float64(plan.Peak)/(1<<20), float64(plan.Peak)/float64(measured),
				blind.Peak, float64(blind.Peak)/float64(measured))
			for what, p := range map[string]int64{"plan": plan.Peak, "plan without the split's length": blind.Peak} {
				assert.GreaterOrEqual(t, p, measured, "%s below the run's peak", what)
				assert.LessOrEqual(t, p, 2*measured, "%s above twice the run's peak", what)
			}
			assert.InDelta(t, measured, plan.Peak, 1<<20, "with the split's length the plan is the run's peak")

			log, err := os.ReadFile(res.LogPath)
			require.NoError(t, err)
			m := regexp.MustCompile(`(?m)^peak memory allocated: (\d+) MiB`).FindSubmatch(log)
			require.NotNil(t, m, "no peak memory line in\n%s", log)
			logged, _ := strconv.ParseInt(string(m[1]), 10, 64)
			assert.LessOrEqual(t, logged<<20, plan.Peak, "the logged peak (whole MiB) against the plan")
		})
	}
}

// TestPlanLastValidationBatch: the plan's shorter last validation batch is
// the one eval_val's batching leaves, with the split's length counted from
// the shard files; without the split it is the longest possible one.
func TestPlanLastValidationBatch(t *testing.T) {
	dp, tp := embeddedData(t)
	for _, tc := range []struct{ seq, valBatch, accum int }{
		{256, 16384, 1}, {32, 1024, 1}, {32, 3072, 2}, {1024, 524288, 8}, {64, 64, 1},
	} {
		c := Defaults()
		c.DataPath, c.TokenizerPath, c.DataPathSet, c.TokenizerPathSet = dp, tp, true, true
		c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 1, 32, 2, 1
		c.TrainSeqLen, c.ValBatchSize, c.GradAccumSteps = tc.seq, tc.valBatch, tc.accum
		c.TrainBatchTokens, c.MaxMicrobatchTokens = tc.seq*tc.accum, tc.seq
		seqs := valShardSeqs(t, dp, tc.seq)
		batchSeqs := tc.valBatch / tc.accum / tc.seq
		want := 0
		if seqs > batchSeqs {
			want = seqs % batchSeqs * tc.seq
		}
		plan, err := PlanMemory(c)
		require.NoError(t, err)
		assert.Equal(t, seqs, plan.ValSeqs, "%+v", tc)
		assert.Equal(t, want, plan.EvalLastTokens, "%+v: %d sequences in batches of %d", tc, seqs, batchSeqs)
		assert.Equal(t, want > 0, plan.EvalLastActivation > 0, "%+v", tc)

		c.DataPath = filepath.Join(t.TempDir(), "absent")
		plan, err = PlanMemory(c)
		require.NoError(t, err)
		assert.Equal(t, -1, plan.ValSeqs)
		assert.Equal(t, (batchSeqs-1)*tc.seq, plan.EvalLastTokens, "%+v: unknown split", tc)
	}
}

package train

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/artifact"
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// embedGradOverflow is the CPU backend with an fp16 overflow injected into one
// training step: on the step-th EmbeddingBackward (one per step when a
// step is one chunk of one microbatch, and none outside training steps
// when there is no warm-up), the first element of the tied embedding's
// gradient becomes +Inf, as a scaled gradient too large for its dtype
// would. step 0 injects nothing.
type embedGradOverflow struct {
	*cpu.Backend
	step  int
	calls int // EmbeddingBackward calls so far
}

func (b *embedGradOverflow) EmbeddingBackward(dw, ids, dout *backend.Tensor) {
	b.Backend.EmbeddingBackward(dw, ids, dout)
	b.calls++
	if b.calls == b.step {
		g := b.Download(dw)
		g[0] = float32(math.Inf(1))
		b.Upload(dw, g)
	}
}

// TestDynamicScalerSkipsOverflowStep trains in fp16 (the dynamic loss
// scaler, 2^16 at the start) through Run and makes step k's gradients
// overflow. The log must say that step k was skipped and the scale halved
// to 2^15, and the weights after step k must be those after step k−1, bit
// for bit: a run of k−1 steps without the overflow ends with the same
// .npz. The learning rate is constant (no warm-down), so the two runs
// differ in nothing else; a step that went ahead would have written the
// Inf into Adam's moments and the weights.
func TestDynamicScalerSkipsOverflowStep(t *testing.T) {
	const k = 3
	run := func(iterations, inject int) (*Result, *embedGradOverflow) {
		cfg := tinyConfig(t)
		cfg.DType = backend.F16
		cfg.Iterations = iterations
		cfg.WarmupSteps = 0
		cfg.WarmdownIters = 0
		cfg.MaxMicrobatchTokens = cfg.TrainBatchTokens // one chunk per step
		cfg.RunID = fmt.Sprintf("overflow%d_steps%d", inject, iterations)
		b := &embedGradOverflow{Backend: cpu.New(), step: inject}
		model.UseComputeDType(t, model.ComputeDType) // Run sets it; restore it afterwards
		res, err := Run(context.Background(), cfg, b, nil)
		require.NoError(t, err)
		require.Equal(t, iterations, b.calls, "one EmbeddingBackward per training step")
		return res, b
	}
	before, _ := run(k-1, 0)
	after, _ := run(k, k)

	logBefore, err := os.ReadFile(before.LogPath)
	require.NoError(t, err)
	logAfter, err := os.ReadFile(after.LogPath)
	require.NoError(t, err)
	require.Regexp(t, `(?m)^compute_dtype:float16 loss_scale:65536 loss_scaling:dynamic$`, string(logAfter))
	require.NotContains(t, string(logBefore), "loss_scale: non-finite", "the run without an injected overflow skipped a step")
	skips := regexp.MustCompile(`(?m)^loss_scale: non-finite gradients at step:(\d+), step skipped, scale now (\S+)$`).FindAllStringSubmatch(string(logAfter), -1)
	require.Len(t, skips, 1, "one skipped step in\n%s", logAfter)
	assert.Equal(t, fmt.Sprint(k), skips[0][1], "the skipped step")
	assert.Equal(t, "32768", skips[0][2], "the loss scale after the skip")
	assert.Len(t, after.TrainLosses, k, "the skipped step still counts as a step")

	want, err := artifact.ReadNPZ(before.ModelPath)
	require.NoError(t, err)
	got, err := artifact.ReadNPZ(after.ModelPath)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i, w := range want {
		g := got[i]
		require.Equal(t, w.Name, g.Name)
		require.Len(t, g.Data, len(w.Data), w.Name)
		differ := 0
		for j := range w.Data {
			if math.Float32bits(w.Data[j]) != math.Float32bits(g.Data[j]) {
				differ++
			}
		}
		assert.Zero(t, differ, "%s: elements differing after the skipped step %d from those after step %d", w.Name, k, k-1)
	}
}

package train

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// The logged peak of live tensors is the memory plan's peak: PlanMemory
// walks the same allocation path over a counting backend that computes
// nothing, so the two agree byte for byte when the run allocates nothing
// the plan leaves out (here: validation in one batch of the planned size,
// microbatches of whole chunks, no clipping scratch). On a backend that
// already holds tensors (an earlier run's weights) the figure is the run's
// own.
func TestPeakMemoryLine(t *testing.T) {
	dp, tp := smallData(t)
	cfg := reproConfig(t, dp, tp, backend.BF16)
	cfg.OutDir = t.TempDir()
	cfg.Optim.GradClipNorm = 0
	plan, err := PlanMemory(cfg)
	require.NoError(t, err)
	b := cpu.New()
	const held = 4 << 20
	h := b.New(backend.F32, held/4) // what an earlier run left behind
	defer b.Free(h)

	res, err := Run(context.Background(), cfg, b, nil)
	require.NoError(t, err)
	_, peak := b.AllocatedBytes()
	assert.Equal(t, plan.Peak, peak-held, "the run's peak of live tensors, in bytes")
	t.Logf("plan peak %d bytes", plan.Peak)
	log, err := os.ReadFile(res.LogPath)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^peak memory allocated: (\d+) MiB reserved: (\d+) MiB$`).FindSubmatch(log)
	require.NotNil(t, m, "no peak memory line in\n%s", log)
	allocated, _ := strconv.ParseInt(string(m[1]), 10, 64)
	reserved, _ := strconv.ParseInt(string(m[2]), 10, 64)
	assert.Equal(t, plan.Peak>>20, allocated, "whole MiB, rounded down; plan peak %d bytes", plan.Peak)
	assert.GreaterOrEqual(t, reserved, allocated+held>>20, "the process's peak resident set holds the tensors")
	assert.Regexp(t, `(?s)step:3/3 val_loss.*\npeak memory allocated: .*\nsaved_model:`, string(log), "after the training loop, before the artifacts, as train_gpt.py")

	// The figure before rounding: a run's own bytes on a shared backend.
	p := startPeakMemory(b)
	x := b.New(backend.BF16, 3, 1000) // 6,000 bytes
	b.Free(x)
	a, _, ok := p.bytes()
	require.True(t, ok)
	assert.Equal(t, int64(6000), a)
}

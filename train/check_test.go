package train

import (
	"context"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// limitedDevice is the CPU backend dressed as a GPU without bfloat and with
// a small working set.
type limitedDevice struct {
	backend.Backend
	ws uint64
}

func (d limitedDevice) Supports(op backend.Op, dt backend.DType) bool {
	return dt != backend.BF16 && d.Backend.Supports(op, dt)
}
func (d limitedDevice) RecommendedWorkingSet() uint64 { return d.ws }

func TestCheckBackend(t *testing.T) {
	cfg := tinyConfig(t)
	dev := limitedDevice{Backend: cpu.New(), ws: 1 << 40}
	_, err := Run(context.Background(), cfg, dev, nil)
	require.ErrorContains(t, err, "no bfloat support: use --dtype fp16 or --dtype fp32", "bf16 on a device without bfloat")
	_, err = os.Stat(cfg.OutDir)
	assert.ErrorIs(t, err, fs.ErrNotExist, "OUT_DIR %s created by a refused run", cfg.OutDir)

	cfg.DType = backend.F16
	plan, err := PlanMemory(cfg)
	require.NoError(t, err)
	dev.ws = uint64(plan.Peak) - 1
	err = CheckBackend(cfg, dev)
	require.ErrorContains(t, err, "recommends at most", "memory plan over the working set")
	require.ErrorContains(t, err, mib(plan.Peak), "memory plan over the working set: the error names the peak")
	dev.ws = uint64(plan.Peak)
	require.NoError(t, CheckBackend(cfg, dev), "memory plan at the working set")
}

func TestPlanMemoryCounts(t *testing.T) {
	cfg := Defaults()
	plan, err := PlanMemory(cfg)
	require.NoError(t, err)
	// Independent arithmetic for the baseline: 17,059,912 fp32 masters and
	// gradients; bf16 copies of tok_emb and the 54 block matrices.
	const params = 17059912
	C, V, L := 512, 1024, 9
	matrices := L * (C*C + 2*256*C + C*C + 2*1024*C)
	assert.Equal(t, int64(4*params), plan.Params, "fp32 master weights")
	// The gradient arena starts each gradient at a multiple of 64
	// elements: each block's q_gain (8 heads) leaves a gap of 56.
	assert.Equal(t, int64(4*params+4*L*(64-8)), plan.Grads, "fp32 gradients")
	assert.Equal(t, int64(2*(matrices+V*C)), plan.WeightCopies, "bf16 weight copies")
	// Muon keeps one momentum buffer per matrix, Adam two moments for the
	// rest; both at least.
	assert.GreaterOrEqual(t, plan.OptimizerState, int64(4*matrices+8*(params-matrices)), "optimizer state")
	assert.GreaterOrEqual(t, plan.Peak, plan.Params+plan.Grads+plan.WeightCopies+plan.OptimizerState+plan.TrainActivation,
		"peak against the sum of its parts")
}

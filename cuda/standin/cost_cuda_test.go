//go:build cuda

package standin

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// TestDryStepIsTheRealStep: a training step on the dry backend
// (cuda.OpenDry) makes the launches and matmuls, with the same arguments
// and so the same costs, that it makes on the stand-in, where every kernel
// runs: the cost model's step is the step.
func TestDryStepIsTheRealStep(t *testing.T) {
	cfg := model.Config{VocabSize: 96, NumLayers: 2, ModelDim: 64, NumHeads: 4, NumKVHeads: 2, MLPMult: 2,
		LogitSoftcap: 30, RopeBase: 10000, QKGainInit: 1.5, TiedEmbedInitStd: 0.005}
	const seq, rows = 32, 64
	tally := func(b *cuda.Backend) cuda.CostTally {
		saved := model.ComputeDType
		model.ComputeDType = backend.BF16
		m, err := model.New(b, cfg, 1)
		model.ComputeDType = saved
		require.NoError(t, err)
		defer m.FreeWorkspaces()
		opt, err := optim.NewSplit(b, m.Params(), optim.DefaultHyper())
		require.NoError(t, err)
		defer opt.Free()
		ids, tg := b.New(backend.I32, rows), b.New(backend.I32, rows)
		defer b.Free(ids)
		defer b.Free(tg)
		r := rand.New(rand.NewPCG(5, 6))
		x := make([]int32, rows)
		for i := range x {
			x[i] = int32(r.IntN(cfg.VocabSize))
		}
		b.Upload(ids, x)
		b.Upload(tg, x)
		for step := range 2 {
			if step == 1 {
				b.StartCosts()
			}
			m.CastWeights()
			m.ZeroGrads()
			m.Forward(ids, tg, seq)
			m.Backward(1 / float32(rows))
			opt.Step(step, 1)
		}
		require.NoError(t, b.Sync())
		return b.Costs()
	}
	real := tally(open(t, cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMCublasLt}))
	dry, err := cuda.OpenDry(cuda.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, dry.Close()) }()
	want := tally(dry)
	assert.Empty(t, real.Uncosted)
	assert.Positive(t, real.Launches)
	assert.Positive(t, real.Matmuls)
	assert.Equal(t, want, real)
}

package train

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// TestCPUStepAllocatesNothing: once the first step has made the
// workspaces, a whole training step on the CPU backend — the weights'
// cast, forward, backward, the device-side loss sum, and Muon with Adam —
// allocates nothing, in every compute dtype: the backend's ops run on a
// fixed worker pool with scratch kept from call to call.
func TestCPUStepAllocatesNothing(t *testing.T) {
	for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			model.UseComputeDType(t, dt)
			cfg := model.Baseline()
			cfg.NumLayers, cfg.ModelDim, cfg.NumHeads, cfg.NumKVHeads, cfg.VocabSize = 2, 64, 4, 2, 256
			const seq, tokens = 64, 256
			b := cpu.New()
			m, err := model.New(b, cfg, 1)
			require.NoError(t, err)
			defer m.Free()
			opt, err := optim.NewSplit(b, m.Params(), optim.DefaultHyper())
			require.NoError(t, err)
			defer opt.Free()
			ids, tg, acc := b.New(backend.I32, tokens), b.New(backend.I32, tokens), b.New(backend.F32, 2)
			r := rand.New(rand.NewPCG(1, 2))
			x := make([]int32, tokens)
			for i := range x {
				x[i] = int32(r.IntN(cfg.VocabSize))
			}
			b.Upload(ids, x)
			b.Upload(tg, x)
			step := 0
			run := func() {
				m.CastWeights()
				m.ZeroGrads()
				m.Forward(ids, tg, seq)
				m.Backward(1 / float32(tokens))
				b.Accumulate(acc, m.RowLoss(), 1)
				opt.Step(step, 1)
				step++
			}
			run() // the first step makes the workspaces and scratch
			allocs := testing.AllocsPerRun(3, run)
			assert.Zero(t, allocs, "allocations per training step after the first")
			loss, err := b.ReadScalar(acc)
			require.NoError(t, err)
			assert.Greater(t, loss, 0.0, "the steps computed a loss")
		})
	}
}

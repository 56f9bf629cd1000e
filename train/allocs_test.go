package train

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/internal/racebuild"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// TestCPUStepAllocatesNothing: once the first step has made the
// workspaces, a whole training step on the CPU backend — the weights'
// cast, forward, backward, the device-side loss sum, and Muon with Adam —
// allocates nothing, in every compute dtype: the backend's ops run on a
// fixed worker pool with scratch kept from call to call.
func TestCPUStepAllocatesNothing(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("the race detector's runtime allocates (sync.Pool drops items at random), so a step's count means nothing")
	}
	for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			model.UseComputeDType(t, dt)
			cfg := model.Baseline()
			cfg.NumLayers, cfg.ModelDim, cfg.NumHeads, cfg.NumKVHeads, cfg.VocabSize = 2, 64, 4, 2, 256
			b := cpu.New()
			run, loss := cpuSteps(t, b, cfg, 64, 256)
			run() // the first step makes the workspaces and scratch
			allocs := testing.AllocsPerRun(3, run)
			assert.Zero(t, allocs, "allocations per training step after the first")
			assert.Greater(t, loss(), 0.0, "the steps computed a loss")
		})
	}
}

// TestCPUPanelsWithinEstimate: the memory check's "cpu matmul panels" line
// holds the float32 panels a training step makes on the CPU backend, and
// is at most twice them, in every compute dtype (a model wide enough that
// its products run in several K blocks: the 16-bit ones keep partial sums
// in a panel).
func TestCPUPanelsWithinEstimate(t *testing.T) {
	for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			model.UseComputeDType(t, dt)
			cfg := model.Baseline()
			cfg.NumLayers, cfg.ModelDim, cfg.NumHeads, cfg.NumKVHeads, cfg.VocabSize = 1, 320, 4, 2, 256
			const seq, tokens = 64, 256
			b := cpu.New()
			run, _ := cpuSteps(t, b, cfg, seq, tokens)
			run()
			c := Defaults()
			c.Model, c.TrainSeqLen, c.DType = cfg, seq, dt
			var line float64
			for _, l := range hostLines(c, MemoryPlan{ChunkTokens: tokens, EvalTokens: tokens}, true, true) {
				if l.name == "cpu matmul panels" {
					line = l.bytes
				}
			}
			held := float64(b.PanelBytes())
			if dt == backend.F32 {
				assert.Zero(t, held, "fp32 products need no panels")
				assert.Zero(t, line, "the memory check counts no panels for fp32")
				return
			}
			require.Positive(t, held, "a 16-bit step with K > 256 keeps partial sums in a panel")
			assert.LessOrEqual(t, held, line, "panels held against the memory check's line")
			assert.LessOrEqual(t, line, 2*held, "the memory check's line against the panels held")
		})
	}
}

// cpuSteps makes a model of cfg and its optimizer on b and returns a
// training step over tokens random ids in sequences of seq (the weights'
// cast, forward, backward, the device-side loss sum, Muon with Adam) and
// the sum of the losses so far.
func cpuSteps(t *testing.T, b *cpu.Backend, cfg model.Config, seq, tokens int) (run func(), loss func() float64) {
	m, err := model.New(b, cfg, 1)
	require.NoError(t, err)
	t.Cleanup(m.Free)
	opt, err := optim.NewSplit(b, m.Params(), optim.DefaultHyper())
	require.NoError(t, err)
	t.Cleanup(opt.Free)
	ids, tg, acc := b.New(backend.I32, tokens), b.New(backend.I32, tokens), b.New(backend.F32, 2)
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]int32, tokens)
	for i := range x {
		x[i] = int32(r.IntN(cfg.VocabSize))
	}
	b.Upload(ids, x)
	b.Upload(tg, x)
	step := 0
	run = func() {
		m.CastWeights()
		m.ZeroGrads()
		m.Forward(ids, tg, seq)
		m.Backward(1 / float32(tokens))
		b.Accumulate(acc, m.RowLoss(), 1)
		opt.Step(step, 1)
		step++
	}
	loss = func() float64 {
		v, err := b.ReadScalar(acc)
		require.NoError(t, err)
		return v
	}
	return run, loss
}

//go:build cgo

package metal

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// syncTestStep is one optimizer step as train/step.go and train/run.go run
// it with today's model code: cast and zero, then per chunk upload the
// token batch into the same two tensors and run model.LossAndGrad (whose
// loss read-back waits for the chunk's forward), then the optimizer and the
// loop's Sync.
func syncTestStep(b *Backend, m *model.Model, opt *optim.Split, ids, tg *backend.Tensor, r *rand.Rand, chunks, seq, step int) error {
	m.CastWeights()
	m.ZeroGrads()
	x := make([]int32, ids.Len())
	for range chunks {
		for i := range x {
			x[i] = int32(r.IntN(m.Cfg.VocabSize))
		}
		b.Upload(ids, x)
		b.Upload(tg, x)
		m.LossAndGrad(ids, tg, seq, 1/float32(chunks*len(x)))
	}
	opt.Step(step, 1)
	return b.Sync()
}

// TestHostWaitsPerStep counts, over the emulated runtime running the real
// model and optimizer, what one training step costs the host in waits on
// the GPU and in command buffers, with the default step's structure (every
// chunk uploads its tokens into the same tensors and reads its loss).
//
// Before this runtime (Upload synced the whole queue, a loss read and a
// scratch growth synced too) a step of C chunks made 3·C + 1 Sync calls,
// C + 2 of which drained the GPU: 193 and 66 for the default step (C = 64:
// 8 microbatches of 8 chunks of 8,192 tokens), measured with the same loop.
//
// Now, with today's model code: one Sync per step (the loop's) and one
// drain; uploads never wait (the in-use token tensor is renamed onto a
// staging buffer); each chunk's loss read waits for that chunk's forward
// only, while its backward stays queued (a partial wait, at most C per
// step: none when the in-flight limit has already waited that far); the
// in-flight limit throttles the host (the emulated GPU runs nothing until
// waited for, so it is always behind); and no scratch buffer grows after
// the first step. Once the loss is accumulated on the device
// and read once per logged step (backend.Accumulate and ReadScalar, model
// and train to follow), a step that logs nothing waits for nothing but the
// in-flight limit: 0 Syncs, 0 drains, 0 partial waits; a logged step has 1
// drain (the read).
func TestHostWaitsPerStep(t *testing.T) {
	model.UseComputeDType(t, backend.BF16)
	b, err := Open(NewEmulatedRuntime(Simd))
	require.NoError(t, err)
	cfg := model.Baseline()
	cfg.NumLayers, cfg.ModelDim, cfg.NumHeads, cfg.NumKVHeads = 2, 32, 4, 2
	m, err := model.New(b, cfg, 1)
	require.NoError(t, err)
	opt, err := optim.NewSplit(b, m.Params(), optim.DefaultHyper())
	require.NoError(t, err)
	const chunks, seq, chunkTokens = 8, 16, 32
	ids, tg := b.New(backend.I32, chunkTokens), b.New(backend.I32, chunkTokens)
	r := rand.New(rand.NewPCG(1, 2))

	require.NoError(t, syncTestStep(b, m, opt, ids, tg, r, chunks, seq, 0))
	growths := b.ScratchGrowths()
	for step := 1; step <= 2; step++ {
		before := b.Stats()
		require.NoError(t, syncTestStep(b, m, opt, ids, tg, r, chunks, seq, step))
		d := b.Stats().Sub(before)
		t.Logf("step %d: %d dispatches, %d command buffers, %d Sync, %d drains, %d partial waits, %d throttles",
			step, d.Dispatches, d.CommandBuffers, d.Syncs, d.Drains, d.PartialWaits, d.Throttles)
		assert.EqualValues(t, 1, d.Syncs)
		assert.EqualValues(t, 1, d.Drains)
		assert.LessOrEqual(t, d.PartialWaits, uint64(chunks), "at most one loss read per chunk, waiting for its forward only")
		assert.LessOrEqual(t, d.Throttles, d.CommandBuffers/(defaultMaxInFlight/2)+1)
		// Bounded command buffers: the count bound here (tiny kernels).
		assert.GreaterOrEqual(t, d.CommandBuffers, d.Dispatches/defaultMaxDispatches)
	}
	assert.Equal(t, growths, b.ScratchGrowths(), "a scratch buffer grew after the first step")
	st := b.Stats()
	assert.LessOrEqual(t, st.MaxBufferDispatches, defaultMaxDispatches)
	assert.LessOrEqual(t, st.MaxSharedBufferSeconds, defaultMaxSeconds, "a buffer of several dispatches over the bound")
}

// TestHostWaitsDefaultStep counts the same on the dry runtime for the
// default configuration itself (the 9×512 model, 64 chunks of 8,192
// tokens per step), which the emulator is far too slow to run, and checks
// every command buffer against its bounds.
func TestHostWaitsDefaultStep(t *testing.T) {
	b, m, opt, ids, tg := dryBaseline(t)
	r := rand.New(rand.NewPCG(3, 4))
	const chunks = 64
	require.NoError(t, syncTestStep(b, m, opt, ids, tg, r, 1, 1024, 0))
	before := b.Stats()
	require.NoError(t, syncTestStep(b, m, opt, ids, tg, r, chunks, 1024, 1))
	d := b.Stats().Sub(before)
	t.Logf("default step: %d dispatches, %d command buffers, %d Sync, %d drains, %d partial waits, %d throttles",
		d.Dispatches, d.CommandBuffers, d.Syncs, d.Drains, d.PartialWaits, d.Throttles)
	assert.EqualValues(t, 1, d.Syncs)
	assert.EqualValues(t, 1, d.Drains)
	assert.LessOrEqual(t, d.PartialWaits, uint64(chunks))
	st := b.Stats()
	assert.LessOrEqual(t, st.MaxBufferDispatches, defaultMaxDispatches)
	assert.LessOrEqual(t, st.MaxSharedBufferSeconds, defaultMaxSeconds, "a buffer of several dispatches over the bound")
	assert.LessOrEqual(t, st.MaxSharedBufferBytes, float64(defaultMaxBytes)+64e6, "only a dispatch moving more than the bound alone passes it")
}

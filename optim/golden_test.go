package optim

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// loadGolden reads model/testdata/golden_tiny.json, written by
// scripts/golden.py (an independent float64 numpy implementation of the
// model and the reference's optimizers).
func loadGolden(t *testing.T) *model.Golden {
	t.Helper()
	path := filepath.Join("..", "model", model.GoldenPath)
	g, err := model.LoadGolden(path)
	require.NoError(t, err, "the golden file is committed; scripts/golden.py writes it")
	return g
}

func goldenHyper(o model.GoldenOptim) Hyper {
	h := DefaultHyper()
	h.MatrixLR, h.ScalarLR, h.TiedEmbedLR = o.MatrixLR, o.ScalarLR, o.TiedEmbedLR
	h.Beta1, h.Beta2, h.AdamEps = o.Beta1, o.Beta2, o.AdamEps
	h.MuonMomentum, h.MuonBackendSteps = o.MuonMomentum, o.MuonBackendSteps
	h.MuonMomentumWarmupStart, h.MuonMomentumWarmupSteps = o.MuonMomentumWarmupStart, o.MuonMomentumWarmupSteps
	return h
}

// TestGoldenOptimizerStep applies one Split.Step(0, 1) to the golden
// parameters with the golden gradients and compares every parameter with
// the oracle's params_after_step.
func TestGoldenOptimizerStep(t *testing.T) {
	g := loadGolden(t)
	b := cpu.New()
	m, err := model.New(b, g.ModelConfig(), 1)
	require.NoError(t, err)
	require.NoError(t, m.SetWeights(model.Float32Set(g.Params)))
	for _, p := range m.Params() {
		gt, ok := g.Grads[p.Name]
		require.True(t, ok, "golden file has no gradient for %s", p.Name)
		b.Upload(p.G, gt.Float32())
	}
	opt, err := NewSplit(b, m.Params(), goldenHyper(g.Optim))
	require.NoError(t, err)
	defer opt.Free()
	assert.Len(t, opt.MatrixKeys(), 6*g.Config.NumLayers, "matrix keys")
	assert.Len(t, opt.ScalarKeys(), 4*g.Config.NumLayers+1, "scalar keys")
	opt.Step(0, 1)
	for _, p := range m.Params() {
		want, ok := g.ParamsAfterStep[p.Name]
		require.True(t, ok, "golden file has no params_after_step for %s", p.Name)
		// fp32: the weights (|w| ≲ 2) round at 1.2e-7, Newton–Schulz in
		// fp32 is good to ~1e-6 of an update of ~4e-2.
		assertClose(t, p.Name, b.Download(p.W), want.Data, 2e-6, 1e-6)
	}
}

// TestGoldenLossRun trains the golden model for 10 steps in fp32 (model
// LossAndGrad, Split.Step with lrMul 1) and compares each step's loss with
// the oracle's losses_run.
func TestGoldenLossRun(t *testing.T) {
	g := loadGolden(t)
	model.UseComputeDType(t, backend.F32)
	b := cpu.New()
	m, err := model.New(b, g.ModelConfig(), 1)
	require.NoError(t, err)
	require.NoError(t, m.SetWeights(model.Float32Set(g.Params)))
	opt, err := NewSplit(b, m.Params(), goldenHyper(g.Optim))
	require.NoError(t, err)
	defer opt.Free()
	B, T := g.Config.Batch, g.Config.SeqLen
	ids, tgt := b.New(backend.I32, B*T), b.New(backend.I32, B*T)
	require.NotEmpty(t, g.LossesRun, "golden run losses")
	require.Len(t, g.RunInputs, len(g.LossesRun), "golden run input batches")
	worst := 0.0
	for s, want := range g.LossesRun {
		b.Upload(ids, model.Flat(g.RunInputs[s]))
		b.Upload(tgt, model.Flat(g.RunTargets[s]))
		m.ZeroGrads()
		m.CastWeights()
		loss := m.LossAndGrad(ids, tgt, T, 1/float32(B*T)) / float64(B*T)
		assert.InEpsilon(t, want, loss, 1e-4, "step %d: loss", s)
		worst = max(worst, math.Abs(loss-want)/want)
		opt.Step(s, 1)
	}
	t.Logf("%d steps: max relative loss error %.2g (first loss %.5f, last %.5f)",
		len(g.LossesRun), worst, g.LossesRun[0], g.LossesRun[len(g.LossesRun)-1])
}

package optim

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"

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
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("golden file %s absent: generate it with scripts/golden.py", path)
	}
	g, err := model.LoadGolden(path)
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetWeights(model.Float32Set(g.Params)); err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params() {
		gt, ok := g.Grads[p.Name]
		if !ok {
			t.Fatalf("golden file has no gradient for %s", p.Name)
		}
		b.Upload(p.G, gt.Float32())
	}
	opt, err := NewSplit(b, m.Params(), goldenHyper(g.Optim))
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	if len(opt.MatrixKeys()) != 6*g.Config.NumLayers || len(opt.ScalarKeys()) != 4*g.Config.NumLayers+1 {
		t.Errorf("%d matrix, %d scalar keys for %d layers", len(opt.MatrixKeys()), len(opt.ScalarKeys()), g.Config.NumLayers)
	}
	opt.Step(0, 1)
	for _, p := range m.Params() {
		want, ok := g.ParamsAfterStep[p.Name]
		if !ok {
			t.Fatalf("golden file has no params_after_step for %s", p.Name)
		}
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
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetWeights(model.Float32Set(g.Params)); err != nil {
		t.Fatal(err)
	}
	opt, err := NewSplit(b, m.Params(), goldenHyper(g.Optim))
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	B, T := g.Config.Batch, g.Config.SeqLen
	ids, tgt := b.New(backend.I32, B*T), b.New(backend.I32, B*T)
	if len(g.LossesRun) == 0 || len(g.RunInputs) != len(g.LossesRun) {
		t.Fatalf("golden run: %d losses, %d input batches", len(g.LossesRun), len(g.RunInputs))
	}
	worst := 0.0
	for s, want := range g.LossesRun {
		b.Upload(ids, model.Flat(g.RunInputs[s]))
		b.Upload(tgt, model.Flat(g.RunTargets[s]))
		m.ZeroGrads()
		m.CastWeights()
		loss := m.LossAndGrad(ids, tgt, T, 1/float32(B*T)) / float64(B*T)
		if math.Abs(loss-want) > 1e-4*math.Abs(want) {
			t.Errorf("step %d: loss %.7f, want %.7f (rel. error %.2g)", s, loss, want, math.Abs(loss-want)/want)
		}
		worst = max(worst, math.Abs(loss-want)/want)
		opt.Step(s, 1)
	}
	t.Logf("%d steps: max relative loss error %.2g (first loss %.5f, last %.5f)",
		len(g.LossesRun), worst, g.LossesRun[0], g.LossesRun[len(g.LossesRun)-1])
}

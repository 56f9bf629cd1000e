package model

import (
	"errors"
	"io/fs"
	"math"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// goldenRun loads the golden file, builds its model in dt on the cpu
// backend with the oracle's initial weights, and runs one forward and
// backward of the golden batch with gradScale = 1/(B·T), the gradient of the
// mean loss the oracle differentiates.
func goldenRun(t *testing.T, dt backend.DType) (g *Golden, m *Model, meanLoss float64, logits []float32) {
	t.Helper()
	g, err := LoadGolden(GoldenPath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("golden file model/testdata/golden_tiny.json absent: run scripts/golden.py")
	}
	if err != nil {
		t.Fatal(err)
	}
	UseComputeDType(t, dt)
	b := cpu.New()
	if m, err = New(b, g.ModelConfig(), 1); err != nil {
		t.Fatal(err)
	}
	if err := m.SetWeights(Float32Set(g.Params)); err != nil {
		t.Fatal(err)
	}
	m.CastWeights()
	n := g.Config.Batch * g.Config.SeqLen
	ids, targets := b.New(backend.I32, n), b.New(backend.I32, n)
	b.Upload(ids, Flat(g.Inputs))
	b.Upload(targets, Flat(g.Targets))
	m.ZeroGrads()
	m.Forward(ids, targets, g.Config.SeqLen)
	logits = b.Download(m.last.logits) // (N,V): one chunk holds every row
	m.Backward(1 / float32(n))
	return g, m, m.LossSum() / float64(n), logits
}

// TestGolden compares the fp32 model with the float64 oracle of
// scripts/golden.py: softcapped logits, mean loss, and every gradient.
//
// Tolerances: the model computes in float32 through ~15 ops per block, each
// rounding with relative error ε32 = 2⁻²³ ≈ 1.2e-7 and summing over at most
// 64 terms, so it matches the float64 oracle to some tens of ε32 relative to
// each tensor's scale (measured: ≤ 1.4e-6 of the largest magnitude, for
// q_gain's gradient; 2e-9 relative on the loss). The bounds are 1e-5 of the
// tensor's largest magnitude (≈84·ε32) for logits and gradients and 1e-6
// relative for the loss, a mean of 32 values near 12.
func TestGolden(t *testing.T) {
	g, m, loss, logits := goldenRun(t, backend.F32)
	if d := math.Abs(loss - g.Loss); d > 1e-6*math.Abs(g.Loss) {
		t.Errorf("loss %.9g, oracle %.9g (rel diff %.3g)", loss, g.Loss, d/g.Loss)
	}
	capped := make([]float64, len(logits))
	c := g.Config.LogitSoftcap
	for i, z := range logits {
		capped[i] = c * math.Tanh(float64(z)/c)
	}
	if len(capped) != len(g.Logits.Data) {
		t.Fatalf("%d logits, oracle has %d", len(capped), len(g.Logits.Data))
	}
	compare(t, "logits", capped, g.Logits.Data, 1e-5)

	grads := m.Grads()
	if len(grads) != len(g.Grads) {
		t.Errorf("model has %d gradients, oracle %d", len(grads), len(g.Grads))
	}
	for name, want := range g.Grads {
		got, ok := grads[name]
		if !ok {
			t.Errorf("oracle gradient %q has no parameter", name)
			continue
		}
		compare(t, name, widen(got), want.Data, 1e-5)
	}
}

// TestGoldenBF16 runs the golden batch with bf16 activations and weight
// copies. bf16 keeps 8 significant bits (ε = 2⁻⁷ ≈ 7.8e-3), so the loss
// must agree within 1% and each gradient tensor's relative L2 error
// ‖g − g*‖/‖g*‖ stay under 0.1 (measured: ≲0.03 for every tensor), with
// a cosine similarity above 0.99.
func TestGoldenBF16(t *testing.T) {
	g, m, loss, _ := goldenRun(t, backend.BF16)
	if d := math.Abs(loss - g.Loss); d > 1e-2*math.Abs(g.Loss) {
		t.Errorf("bf16 loss %.6g, oracle %.6g (rel diff %.3g)", loss, g.Loss, d/g.Loss)
	}
	grads := m.Grads()
	worst := 0.0
	for name, want := range g.Grads {
		got := grads[name]
		var diff, norm, dot, gotNorm float64
		for i, w := range want.Data {
			x := float64(got[i])
			diff += (x - w) * (x - w)
			norm += w * w
			dot += x * w
			gotNorm += x * x
		}
		rel, cos := math.Sqrt(diff/norm), dot/math.Sqrt(norm*gotNorm)
		worst = max(worst, rel)
		if rel > 0.1 || cos < 0.99 {
			t.Errorf("%s: bf16 relative L2 error %.3g, cosine %.5f", name, rel, cos)
		}
	}
	t.Logf("bf16: loss %.6g (oracle %.6g), worst gradient relative L2 error %.3g", loss, g.Loss, worst)
}

// compare fails unless |got − want| ≤ tol·max|want| element-wise, printing
// the largest error and the first differing elements.
func compare(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", name, len(got), len(want))
		return
	}
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(w))
	}
	bound := tol * scale
	worst, shown := 0.0, 0
	for i := range got {
		d := math.Abs(got[i] - want[i])
		worst = max(worst, d)
		if !(d <= bound) && shown < 3 {
			t.Errorf("%s[%d] = %.9g, oracle %.9g (|diff| %.3g > %.3g)", name, i, got[i], want[i], d, bound)
			shown++
		}
	}
	if shown > 0 {
		t.Errorf("%s: max |diff| %.3g, %.3g of max|oracle| %.3g", name, worst, worst/scale, scale)
	}
}

func widen(v []float32) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = float64(x)
	}
	return w
}

package model

import (
	"io/fs"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	require.NotErrorIs(t, err, fs.ErrNotExist, "golden file model/testdata/golden_tiny.json absent: run scripts/golden.py")
	require.NoError(t, err)
	require.GreaterOrEqual(t, g.Config.NumLayers, 5, "the golden model must have ≥ 5 layers, or a wrong U-Net skip pairing passes")
	UseComputeDType(t, dt)
	b := cpu.New()
	m, err = New(b, g.ModelConfig(), 1)
	require.NoError(t, err)
	require.NoError(t, m.SetWeights(Float32Set(g.Params)))
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
// scripts/golden.py (5 layers, so that the U-Net skips pair encoder and
// decoder blocks at different depths): softcapped logits, mean loss, and
// every gradient.
//
// Tolerances: the model computes in float32 through ~15 ops per block, each
// rounding with relative error ε32 = 2⁻²³ ≈ 1.2e-7 and summing over at most
// 64 terms, so it matches the float64 oracle to some tens of ε32 relative to
// each tensor's scale (measured: ≤ 1.4e-6 of the largest magnitude;
// 6e-9 relative on the loss). The bounds are 1e-5 of the
// tensor's largest magnitude (≈84·ε32) for logits and gradients and 1e-6
// relative for the loss, a mean of 32 values near 12.
func TestGolden(t *testing.T) {
	g, m, loss, logits := goldenRun(t, backend.F32)
	assert.InEpsilon(t, g.Loss, loss, 1e-6, "mean loss")
	c := g.Config.LogitSoftcap
	capped := make([]float64, len(logits))
	for i, z := range logits {
		capped[i] = c * math.Tanh(float64(z)/c)
	}
	require.Len(t, capped, len(g.Logits.Data), "logits")
	worst := compare(t, "logits", capped, g.Logits.Data, 1e-5)

	grads := m.Grads()
	assert.Len(t, grads, len(g.Grads), "gradients")
	for name, want := range g.Grads {
		got, ok := grads[name]
		if assert.True(t, ok, "oracle gradient %q has no parameter", name) {
			worst = max(worst, compare(t, name, widen(got), want.Data, 1e-5))
		}
	}
	t.Logf("loss %.9g (oracle %.9g, relative difference %.2g); worst |diff| / max|oracle| of a tensor: %.3g",
		loss, g.Loss, math.Abs(loss-g.Loss)/g.Loss, worst)
}

// TestGoldenBF16 runs the golden batch with bf16 activations and weight
// copies. bf16 keeps 8 significant bits (ε = 2⁻⁷ ≈ 7.8e-3), so the loss
// must agree within 1% and each gradient tensor's relative L2 error
// ‖g − g*‖/‖g*‖ stay under 0.1 (measured: ≲0.03 for every tensor), with
// a cosine similarity above 0.99.
func TestGoldenBF16(t *testing.T) {
	g, m, loss, _ := goldenRun(t, backend.BF16)
	assert.InEpsilon(t, g.Loss, loss, 1e-2, "bf16 mean loss")
	grads := m.Grads()
	worst := 0.0
	for name, want := range g.Grads {
		got := grads[name]
		require.Len(t, got, len(want.Data), name)
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
		assert.Less(t, rel, 0.1, "%s: bf16 relative L2 error", name)
		assert.Greater(t, cos, 0.99, "%s: bf16 cosine similarity", name)
	}
	t.Logf("bf16: loss %.6g (oracle %.6g), worst gradient relative L2 error %.3g", loss, g.Loss, worst)
}

// compare fails unless |got − want| ≤ tol·max|want| element-wise, printing
// the largest error and the first differing elements, and returns the
// largest |got − want| / max|want|.
func compare(t *testing.T, name string, got, want []float64, tol float64) float64 {
	t.Helper()
	if !assert.Len(t, got, len(want), name) {
		return math.Inf(1)
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
			assert.Failf(t, "element beyond the tolerance", "%s[%d] = %.9g, oracle %.9g (|diff| %.3g > %.3g)", name, i, got[i], want[i], d, bound)
			shown++
		}
	}
	if shown > 0 {
		assert.Failf(t, "elements beyond the tolerance", "%s: max |diff| %.3g, %.3g of max|oracle| %.3g", name, worst, worst/scale, scale)
	}
	return worst / scale
}

func widen(v []float32) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = float64(x)
	}
	return w
}

package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// gradFixture is the tiny fp32 model with random weights and one random
// batch of B=2 sequences of T=16 tokens.
type gradFixture struct {
	b               backend.Backend
	m               *Model
	w               map[string][]float32
	ids, targets    *backend.Tensor
	seqLen, rows    int
	lossSum         float64              // Σ_n loss[n] from LossAndGrad
	grads           map[string][]float32 // ∂(Σ_n loss[n])/∂θ
	perRowLossTrain []float32
}

func newGradFixture(t *testing.T, edit func(*Config)) *gradFixture {
	t.Helper()
	UseComputeDType(t, backend.F32)
	const B, T = 2, 16
	f := &gradFixture{b: cpu.New(), seqLen: T, rows: B * T}
	cfg := tinyConfig()
	if edit != nil {
		edit(&cfg)
	}
	var err error
	f.m, err = New(f.b, cfg, 1)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(42, 1))
	f.w = randomWeights(f.m, rng)
	f.ids, f.targets = randomBatch(f.b, rng, f.rows, cfg.VocabSize)
	f.set(t, f.w)
	f.m.ZeroGrads()
	f.lossSum = f.m.LossAndGrad(f.ids, f.targets, T, 1)
	f.perRowLossTrain = f.b.Download(f.m.RowLoss())
	f.grads = f.m.Grads()
	return f
}

func (f *gradFixture) set(t *testing.T, w map[string][]float32) {
	t.Helper()
	require.NoError(t, f.m.SetWeights(w))
	f.m.CastWeights()
}

// lossAt is Σ_n loss[n] (forward-only path) with tensor name replaced by v.
func (f *gradFixture) lossAt(t *testing.T, name string, v []float32) float64 {
	w := map[string][]float32{}
	for k, x := range f.w {
		w[k] = x
	}
	w[name] = v
	f.set(t, w)
	return f.m.Loss(f.ids, f.targets, f.seqLen)
}

// TestGradFiniteDifferences checks every parameter gradient of the tiny
// model (fp32 throughout) against float32 central differences of the loss
// f = Σ_n loss[n]: at the coordinate of largest |g| and 2 random coordinates
// per tensor, and along one random ±1 direction per tensor (the directional
// derivative Σ_i g_i·u_i, which involves every element).
//
// Step: h = 1e-2·rms(tensor), so each perturbed element moves by about 1% of
// its size. Tolerance: |fd − g| ≤ 2·ε32·Σ|loss[n]|/h + 5e-3·|g|.
//   - The first term is rounding noise. Each evaluation of f in float32 errs
//     by some δ, so the quotient errs by up to 2δ/(2h). Measured on this
//     model, the quotient's error stays within 0.25·ε32·Σ|loss|/h for most
//     checks and reached 0.85·ε32·Σ|loss|/h once (the rows' rounding errors
//     are independent and partly cancel); the bound allows 2·ε32·Σ|loss|/h,
//     so that another summation order in the backend's kernels still passes.
//   - The second is truncation, O(h²·∂³f): halving and doubling h on this
//     model puts it under 0.3% of |g| at h = 1e-2 (ReLU² is C¹, so a kink
//     crossed by the step adds only a small second-order term).
//
// A wrong gradient term is off by O(|g|); the directional checks, whose
// noise floor is a few percent of the directional derivative or less here,
// catch it.
func TestGradFiniteDifferences(t *testing.T) {
	f := newGradFixture(t, nil)
	rng := rand.New(rand.NewPCG(7, 7))
	absLoss := 0.0
	for _, v := range f.perRowLossTrain {
		absLoss += math.Abs(float64(v))
	}
	require.InEpsilon(t, f.lossSum, f.m.Loss(f.ids, f.targets, f.seqLen), 1e-6, "forward-only loss against the training forward's")
	worst := 0.0
	for _, p := range f.m.Params() {
		w0, g := f.w[p.Name], f.grads[p.Name]
		_, rms := meanStd(w0)
		rms = math.Sqrt(rms*rms + sq(mean(w0)))
		h := 1e-2 * rms
		noise := 2 * 0x1p-23 * absLoss / h
		check := func(what string, fd, an float64) {
			tol := noise + 5e-3*math.Abs(an)
			worst = max(worst, math.Abs(fd-an)/tol)
			assert.InDelta(t, an, fd, tol, "%s %s: finite difference against the backward", p.Name, what)
		}
		// Coordinates.
		largest := 0
		for i := range g {
			if math.Abs(float64(g[i])) > math.Abs(float64(g[largest])) {
				largest = i
			}
		}
		for _, i := range []int{largest, rng.IntN(len(w0)), rng.IntN(len(w0))} {
			plus, minus := clone(w0), clone(w0)
			plus[i] += float32(h)
			minus[i] -= float32(h)
			hEff := (float64(plus[i]) - float64(minus[i])) / 2 // the step float32 represents
			fd := (f.lossAt(t, p.Name, plus) - f.lossAt(t, p.Name, minus)) / (2 * hEff)
			check("coordinate", fd, float64(g[i]))
		}
		// Direction u ∈ {±1}ⁿ: d/dt f(w + t·u) = Σ g_i·u_i.
		plus, minus := clone(w0), clone(w0)
		an := 0.0
		for i := range w0 {
			u := float64(2*rng.IntN(2) - 1)
			plus[i] = float32(float64(w0[i]) + h*u)
			minus[i] = float32(float64(w0[i]) - h*u)
			an += float64(g[i]) * u
		}
		fd := (f.lossAt(t, p.Name, plus) - f.lossAt(t, p.Name, minus)) / (2 * h)
		check("direction", fd, an)
	}
	t.Logf("worst |fd − backward| / tolerance: %.3f", worst)
}

// TestChunkedLogits checks that LOGIT_CHUNK_TOKENS=8 (4 chunks of the 32
// rows) and 12 (12+12+8) give the unchunked per-row losses and gradients.
// Only the order of the fp32 sums over rows that form tok_emb's head
// gradient changes, so each tensor agrees within 32·ε32·max|g| (N = 32
// rows, at most one rounding of ε32 per addition).
func TestChunkedLogits(t *testing.T) {
	whole := newGradFixture(t, nil)
	for _, k := range []int{8, 12} {
		chunked := newGradFixture(t, func(c *Config) { c.LogitChunkTokens = k })
		require.Equal(t, k, chunked.m.last.logits.Dim(0), "rows of the chunked logits buffer")
		for i, a := range whole.perRowLossTrain {
			assert.InEpsilon(t, a, chunked.perRowLossTrain[i], 1e-6, "chunk %d: loss[%d]", k, i)
		}
		for name, a := range whole.grads {
			assert.InDeltaSlice(t, widen(a), widen(chunked.grads[name]), 32*0x1p-23*maxAbs(a), "chunk %d: %s", k, name)
		}
	}
}

// TestLayerCounts covers the skip wiring at other depths: 1 layer (no
// encoder), 2 and 4 (every decoder block takes a skip) and 5 (one decoder
// block without). For each, the forward-only Loss must equal the training
// forward's summed loss, and the directional derivative of the loss along
// a random ±1 direction must match the backward for the tensors whose
// gradients the skips route: tok_emb, skip_weights and the first and last
// blocks' resid_mix (tolerance as in TestGradFiniteDifferences).
func TestLayerCounts(t *testing.T) {
	for _, L := range []int{1, 2, 4, 5} {
		f := newGradFixture(t, func(c *Config) { c.NumLayers = L })
		assert.InEpsilon(t, f.lossSum, f.m.Loss(f.ids, f.targets, f.seqLen), 1e-6, "L=%d: forward-only loss against the training forward's", L)
		absLoss := 0.0
		for _, v := range f.perRowLossTrain {
			absLoss += math.Abs(float64(v))
		}
		rng := rand.New(rand.NewPCG(uint64(L), 3))
		names := []string{"tok_emb.weight", "skip_weights", "blocks.0.resid_mix", fmt.Sprintf("blocks.%d.resid_mix", L-1)}
		for _, name := range names {
			w0, g := f.w[name], f.grads[name]
			if len(w0) == 0 {
				continue // no skip weights at L = 1
			}
			_, sd := meanStd(w0)
			h := 1e-2 * math.Sqrt(sd*sd+sq(mean(w0)))
			plus, minus := clone(w0), clone(w0)
			an := 0.0
			for i := range w0 {
				u := float64(2*rng.IntN(2) - 1)
				plus[i] = float32(float64(w0[i]) + h*u)
				minus[i] = float32(float64(w0[i]) - h*u)
				an += float64(g[i]) * u
			}
			fd := (f.lossAt(t, name, plus) - f.lossAt(t, name, minus)) / (2 * h)
			assert.InDelta(t, an, fd, 2*0x1p-23*absLoss/h+5e-3*math.Abs(an), "L=%d %s direction: finite difference against the backward", L, name)
		}
	}
}

// TestGradAccumulates checks the += convention: a second LossAndGrad on the
// same batch, without zeroing, doubles every gradient (to fp32 rounding of
// the one extra addition per contribution).
func TestGradAccumulates(t *testing.T) {
	f := newGradFixture(t, nil)
	f.m.LossAndGrad(f.ids, f.targets, f.seqLen, 1)
	twice := f.m.Grads()
	for name, g := range f.grads {
		want := make([]float64, len(g))
		for i, x := range g {
			want[i] = 2 * float64(x)
		}
		assert.InDeltaSlice(t, want, widen(twice[name]), 8*0x1p-23*maxAbs(g), "%s after two passes", name)
	}
}

func clone(v []float32) []float32 { return append([]float32(nil), v...) }

func sq(x float64) float64 { return x * x }

func mean(v []float32) float64 {
	m, _ := meanStd(v)
	return m
}

func maxAbs(v []float32) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	return m
}

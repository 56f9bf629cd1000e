// Package modeltest compares whole training steps of the GPT (package
// model) with its optimizers (package optim) on two backends: the loss,
// every parameter gradient and every updated weight. It sits above model
// and optim, as backend/backendtest, the per-op conformance suite, sits
// above backend alone. A backend's tests run it in one line:
//
//	func TestTrainingStep(t *testing.T) {
//		modeltest.RunTrainingStep(t, cpu.New(), backendtest.Reference())
//	}
package modeltest

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// trainingConfig is the tiny GPT of the training-step comparison:
// grouped-query attention, head dim 8, a vocabulary and width that are
// multiples of no tile, and 6 layers, so that three encoder outputs wait
// on the skip stack and two of the three skips join blocks at other
// depths (decoder block i takes encoder output 2−i): a backend that
// mixes up which activation a skip add reads is caught. (The golden model
// of package model has 5 layers, the odd case with a decoder block
// without a skip.) With 3 layers the one skip joins the middle, where any
// pairing is the right one.
func trainingConfig() model.Config {
	return model.Config{
		VocabSize: 67, NumLayers: 6, ModelDim: 32, NumHeads: 4, NumKVHeads: 2, MLPMult: 2,
		LogitSoftcap: 30, RopeBase: 10000, QKGainInit: 1.5, TiedEmbedInitStd: 0.005,
	}
}

const (
	trainingBatch  = 2
	trainingSeqLen = 17
	trainingSteps  = 2
)

// Training-step allowances, each relative to the compared tensor's largest
// magnitude. Two correct backends differ per op by up to one ulp of the
// compute dtype (where their float32 results straddle a rounding boundary)
// plus their float32 accumulation errors (λ·sqrt(K)·u32 with K ≤ 67, about
// 50·u32); a step chains ~30 ops per block through 6 blocks forward and
// backward, and the differences add up in the worst elements without
// growing much (the network is well conditioned at this size). The
// largest differences measured over 6 seeds, between the CPU backend, the
// emulated Metal backend (both flavours) and Reference, are in brackets;
// each allowance is 3× or more above them, while an op that is wrong is off
// by far more (the per-op suite pins each op down; this check proves that
// they compose into a training step). The worst gradients are those of
// q_gain, a sum over every row and head dimension whose terms cancel, so
// that its error is large against the result.
//
//	loss:      eps(dt) + 64·u32      [fp32 1.7·u32, bf16 3e-3·eps, fp16 5e-3·eps]
//	gradients: 16·eps(dt) + 512·u32  [fp32 66·u32, bf16 1.4·eps, fp16 5.2·eps]
//	weights:   256·u32               [22·u32; the optimizer is float32 and
//	                                  both sides step from identical gradients]
func lossTol(dt backend.DType) float64 { return dt.Eps() + 64*u32 }
func gradTol(dt backend.DType) float64 { return 16*dt.Eps() + 512*u32 }
func weightTol(backend.DType) float64  { return 256 * u32 }

// RunTrainingStep runs two optimizer steps of a tiny GPT (forward, backward,
// loss scaling, the Muon + Adam split step) on b and on ref from identical
// weights and batches, in every compute dtype b supports, and compares the
// loss, every gradient and every updated weight after each step.
func RunTrainingStep(t *testing.T, b, ref backend.Backend) {
	t.Helper()
	for _, dt := range backend.FloatDTypes {
		t.Run(dt.String(), func(t *testing.T) {
			for _, bk := range []backend.Backend{b, ref} {
				for _, op := range backend.Ops {
					opdt := dt
					if !slices.Contains(backendtest.OpDTypes(op), dt) {
						opdt = backend.F32 // the optimizer ops
					}
					if !bk.Supports(op, opdt) {
						t.Skipf("not supported: %s %s on %s", op, opdt, bk.Name())
					}
				}
			}
			runTrainingStep(t, b, ref, dt)
		})
	}
}

// trainer is one model with its optimizer and loss scaler on one backend.
type trainer struct {
	b      backend.Backend
	m      *model.Model
	opt    *optim.Split
	scaler *optim.GradScaler
}

func newTrainer(t testing.TB, b backend.Backend, dt backend.DType, w map[string][]float32) *trainer {
	t.Helper()
	model.UseComputeDType(t, dt)
	m, err := model.New(b, trainingConfig(), 1)
	if err != nil {
		t.Fatalf("model.New on %s: %v", b.Name(), err)
	}
	if w != nil {
		if err := m.SetWeights(w); err != nil {
			t.Fatalf("SetWeights on %s: %v", b.Name(), err)
		}
	}
	opt, err := optim.NewSplit(b, m.Params(), optim.DefaultHyper())
	if err != nil {
		t.Fatalf("optim.NewSplit on %s: %v", b.Name(), err)
	}
	scaler, err := optim.ScalerFor(b, dt, 0)
	if err != nil {
		t.Fatalf("optim.ScalerFor on %s: %v", b.Name(), err)
	}
	t.Cleanup(func() {
		opt.Free()
		scaler.Free()
		m.FreeWorkspaces()
	})
	return &trainer{b: b, m: m, opt: opt, scaler: scaler}
}

// backward runs the forward and backward pass of one training step on a
// batch and returns the loss sum; the unscaled gradients are left in the
// parameters' G.
func (tr *trainer) backward(t testing.TB, step int, ids, targets []int32) float64 {
	t.Helper()
	n := len(ids)
	idT, tgT := tr.b.New(backend.I32, n), tr.b.New(backend.I32, n)
	defer tr.b.Free(idT)
	defer tr.b.Free(tgT)
	tr.b.Upload(idT, ids)
	tr.b.Upload(tgT, targets)
	tr.m.CastWeights()
	tr.m.ZeroGrads()
	loss := tr.m.LossAndGrad(idT, tgT, trainingSeqLen, float32(tr.scaler.Scale()/float64(n)))
	if tr.scaler.UnscaleAndCheck(tr.m.Params()) {
		t.Fatalf("step %d on %s: non-finite gradients at loss scale %g", step, tr.b.Name(), tr.scaler.Scale())
	}
	return loss
}

// update applies the optimizer step to the gradients in G.
func (tr *trainer) update(t testing.TB, step int) {
	t.Helper()
	tr.opt.Step(step, 1)
	tr.scaler.Update(false)
	if err := tr.b.Sync(); err != nil {
		t.Fatalf("step %d on %s: %v", step, tr.b.Name(), err)
	}
}

func runTrainingStep(t testing.TB, b, ref backend.Backend, dt backend.DType) {
	seed := fnv.New64a()
	seed.Write([]byte("training/" + dt.String()))
	rng := rand.New(rand.NewPCG(seed.Sum64(), 1))

	// Start from the model's own initialisation with every tensor moved off
	// its initial value (the reference zero-initialises the output
	// projections and sets the gains to constants, which would leave paths
	// of the backward pass untested).
	r := newTrainer(t, ref, dt, nil)
	w := r.m.Weights()
	for _, name := range slices.Sorted(maps.Keys(w)) {
		sigma := 0.02
		if len(w[name]) <= 2*trainingConfig().ModelDim {
			sigma = 0.1 // gains, scales, mixes
		}
		for i := range w[name] {
			w[name][i] += float32(sigma * rng.NormFloat64())
		}
	}
	if err := r.m.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	g := newTrainer(t, b, dt, w)

	n := trainingBatch * trainingSeqLen
	V := trainingConfig().VocabSize
	for step := range trainingSteps {
		ids, targets := make([]int32, n), make([]int32, n)
		for i := range ids {
			ids[i], targets[i] = int32(rng.IntN(V)), int32(rng.IntN(V))
		}
		at := fmt.Sprintf("step %d", step)
		lossG, lossR := g.backward(t, step, ids, targets), r.backward(t, step, ids, targets)
		closeTo(t, at+" loss", []float32{float32(lossG)}, []float32{float32(lossR)}, dt, lossTol)
		gradsG, gradsR := g.m.Grads(), r.m.Grads()
		for _, name := range slices.Sorted(maps.Keys(gradsR)) {
			closeTo(t, at+" gradient "+name, gradsG[name], gradsR[name], dt, gradTol)
		}
		// Both optimizers step from b's gradients, so the updated weights
		// compare the optimizer alone: Adam's first update is lr·sign(g),
		// which two correct backends may disagree on wherever g ≈ 0.
		for _, p := range r.m.Params() {
			r.b.Upload(p.G, gradsG[p.Name])
		}
		g.update(t, step)
		r.update(t, step)
		wG, wR := g.m.Weights(), r.m.Weights()
		for _, name := range slices.Sorted(maps.Keys(wR)) {
			closeTo(t, at+" updated "+name, wG[name], wR[name], backend.F32, weightTol)
		}
	}
}

// closeTo compares got with want within tol(dt) of max|want| (the tensor's
// scale), through Close.
func closeTo(t testing.TB, name string, got, want []float32, dt backend.DType, tol func(backend.DType) float64) {
	t.Helper()
	scale := 0.0
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	backendtest.Close(t, name, got, widen(want), dt, backendtest.Tol{Abs: tol(dt) * scale})
}

// u32 is the unit roundoff of float32, the arithmetic every op computes in.
const u32 = 0x1p-24

func widen(v []float32) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = float64(x)
	}
	return r
}

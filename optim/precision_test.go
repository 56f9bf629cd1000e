package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// TestFP32MasterKeepsTinyUpdates: an update of lr·grad ≈ 2.4e-7 relative to
// the weight is below bf16's resolution (half an ulp at 1 is 2^-8) but not
// fp32's. 100 such updates move an fp32 master by 100× the update; a
// weight stored in bf16 (cast round trip each step) does not move at all.
func TestFP32MasterKeepsTinyUpdates(t *testing.T) {
	b := cpu.New()
	const n, steps = 8, 100
	const lr = 0x1p-22 // ≈ 2.4e-7, a multiple of fp32's ulp just below 1 (2^-24)
	w0 := []float32{1, 1, 1, 1, 0.75, 0.75, 1.5, 1.5}
	grad := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	want := func(w float32) float64 { return float64(w) - steps*lr }

	t.Run("axpy", func(t *testing.T) {
		master := newParam(b, "w", w0, grad, n)
		stored := b.New(backend.BF16, n) // a weight that lives in bf16
		b.Cast(stored, master.W)
		tmp := b.New(backend.F32, n)
		for range steps {
			b.Axpy(master.W, master.G, -lr) // w −= lr·g in fp32
			b.Cast(tmp, stored)
			b.Axpy(tmp, master.G, -lr)
			b.Cast(stored, tmp)
		}
		// lr is a whole number of fp32 ulps at every w0, so the fp32 master
		// moves by exactly 100·lr.
		got := b.Download(master.W)
		for i := range got {
			assert.Equal(t, steps*lr, float64(w0[i])-float64(got[i]), "fp32 master [%d]: moved by 100 updates", i)
		}
		assertClose(t, "bf16-stored weight unchanged", b.Download(stored), f64s(w0), 0, 0)
	})

	t.Run("adam", func(t *testing.T) {
		// Adam with a constant gradient moves by ≈ lr each step: m̂/√v̂ = 1.
		master := newParam(b, "w", w0, grad, n)
		stored := b.New(backend.BF16, n)
		b.Cast(stored, master.W)
		shadow := newParam(b, "w", make([]float32, n), grad, n)
		am := NewAdam(b, []*model.Param{master}, lr, 0.9, 0.95, 1e-8)
		as := NewAdam(b, []*model.Param{shadow}, lr, 0.9, 0.95, 1e-8)
		for range steps {
			am.Step(1)
			b.Cast(shadow.W, stored)
			as.Step(1)
			b.Cast(stored, shadow.W)
		}
		got := b.Download(master.W)
		for i := range got {
			assert.InDelta(t, want(w0[i]), got[i], 0.1*steps*lr, "fp32 master [%d]", i)
		}
		assertClose(t, "bf16-stored weight unchanged", b.Download(stored), f64s(w0), 0, 0)
	})
}

// TestFP16LossScaling: gradients of 1e-8 flush to zero when stored in fp16
// (its smallest subnormal is 2^-24 ≈ 6e-8); scaled by GradScaler's 2^16
// they are normal fp16 numbers, and unscaled in fp32 they come back within
// fp16's relative precision.
func TestFP16LossScaling(t *testing.T) {
	b := cpu.New()
	g := []float32{1e-8, -1e-8, 2.5e-8, 3e-9, -7.7e-9, 1.3e-8}
	n := len(g)
	src := b.New(backend.F32, n)
	half := b.New(backend.F16, n) // a gradient as fp16 activations store it
	b.Upload(src, g)
	b.Cast(half, src)
	for i, v := range b.Download(half) {
		assert.Zero(t, v, "unscaled %g must underflow to 0 in fp16", g[i])
	}

	sc := NewGradScaler(b)
	defer sc.Free()
	b.Scale(src, float32(sc.Scale())) // the backward pass seeded with S
	b.Cast(half, src)
	p := &model.Param{Name: "w", W: b.New(backend.F32, n), G: b.New(backend.F32, n)}
	b.Axpy(p.G, half, 1) // fp16 activation gradient accumulated into the fp32 grad
	require.False(t, sc.UnscaleAndCheck([]*model.Param{p}), "finite gradients reported non-finite")
	assertClose(t, "scaled, fp16, unscaled", b.Download(p.G), f64s(g), 0, backend.F16.Eps()/2)
}

// TestStaticLossScaleIsNeutral: a real fp32 training step of the model
// whose backward pass is seeded with S = 1024 (gradScale S/tokens), with
// the gradients unscaled by a static GradScaler and clipped, gives the same
// gradients, gradient norm and weights as S = 1, over three steps.
func TestStaticLossScaleIsNeutral(t *testing.T) {
	model.UseComputeDType(t, backend.F32)
	b := cpu.New()
	cfg := model.Config{VocabSize: 64, NumLayers: 3, ModelDim: 32, NumHeads: 4, NumKVHeads: 2, MLPMult: 2,
		LogitSoftcap: 30, RopeBase: 10000, QKGainInit: 1.5, TiedEmbedInitStd: 0.005}
	const B, T = 2, 16
	rng := rand.New(rand.NewPCG(13, 14))
	ids, tgt := b.New(backend.I32, B*T), b.New(backend.I32, B*T)

	type run struct {
		m   *model.Model
		opt *Split
		sc  *GradScaler
	}
	var runs []run
	for _, S := range []float64{1, 1024} {
		m, err := model.New(b, cfg, 7)
		require.NoError(t, err)
		opt, err := NewSplit(b, m.Params(), DefaultHyper())
		require.NoError(t, err)
		runs = append(runs, run{m, opt, NewStaticScaler(b, S)})
	}
	for step := range 3 {
		in, out := make([]int32, B*T), make([]int32, B*T)
		for i := range in {
			in[i], out[i] = rng.Int32N(int32(cfg.VocabSize)), rng.Int32N(int32(cfg.VocabSize))
		}
		b.Upload(ids, in)
		b.Upload(tgt, out)
		var norms []float64
		var grads []map[string][]float32
		for _, r := range runs {
			r.m.ZeroGrads()
			r.m.CastWeights()
			r.m.LossAndGrad(ids, tgt, T, float32(r.sc.Scale()/(B*T)))
			found := r.sc.UnscaleAndCheck(r.m.Params())
			require.False(t, found, "step %d, S = %g: non-finite gradients", step, r.sc.Scale())
			grads = append(grads, r.m.Grads())
			norms = append(norms, ClipGradNorm(b, r.m.Params(), 0.5))
			r.opt.Step(step, 1)
			r.sc.Update(found)
		}
		// Muon and Adam are nearly invariant to the gradients' scale, so
		// check the unscaled gradients and the clipping norm themselves.
		for _, p := range runs[0].m.Params() {
			assertClose(t, "unscaled grad "+p.Name, grads[1][p.Name], f64s(grads[0][p.Name]), 1e-12, 1e-5)
		}
		assert.InEpsilon(t, norms[0], norms[1], 1e-6, "step %d: grad norm with S = 1024 against S = 1", step)
	}
	w1, w1024 := runs[0].m.Weights(), runs[1].m.Weights()
	for _, p := range runs[0].m.Params() {
		assertClose(t, p.Name, w1024[p.Name], f64s(w1[p.Name]), 1e-7, 1e-6)
	}
}

// TestLogSoftmaxCancellation: cross-entropy of nearby logits (10.000,
// 10.001, ...) stored in bf16 but computed in fp32 (SoftcapCEForward, with
// a cap large enough to be nearly the identity) matches the float64 answer
// on the same bf16 operands, while a computation that rounds every
// intermediate to bf16 does not: logsumexp ≈ 15.7 carries bf16's absolute
// error (2^-4 ulp there; the bf16 running sum of 256 exponentials is coarser
// still) into a loss of ≈ 5.6 after the cancellation
// lse − z.
func TestLogSoftmaxCancellation(t *testing.T) {
	b := cpu.New()
	const N, V, cap = 8, 256, 1e4
	logits := make([]float32, N*V)
	targets := make([]int32, N)
	for n := range N {
		for v := range V {
			logits[n*V+v] = 10 + 0.001*float32(v) + 0.0003*float32(n*v%7)
		}
		targets[n] = int32((37 * n) % V)
	}
	backend.RoundSlice(backend.BF16, logits) // the operands, as stored

	lt := b.New(backend.BF16, N, V)
	tt := b.New(backend.I32, N)
	loss := b.New(backend.F32, N)
	b.Upload(lt, logits)
	b.Upload(tt, targets)
	b.SoftcapCEForward(loss, lt, tt, cap)
	got := b.Download(loss)

	want := make([]float64, N)
	allBF16 := make([]float32, N)
	r := func(x float32) float32 { return backend.Round(backend.BF16, x) }
	for n := range N {
		row := logits[n*V : (n+1)*V]
		// float64 oracle
		z := make([]float64, V)
		m := math.Inf(-1)
		for v, x := range row {
			z[v] = cap * math.Tanh(float64(x)/cap)
			m = math.Max(m, z[v])
		}
		s := 0.0
		for _, zv := range z {
			s += math.Exp(zv - m)
		}
		want[n] = m + math.Log(s) - z[targets[n]]

		// every intermediate rounded to bf16 (the cap-1e4 softcap, within
		// 4e-6 of the identity here, left out)
		zb := row
		mb := float32(math.Inf(-1))
		for _, x := range zb {
			mb = max(mb, x)
		}
		var sb float32
		for _, zv := range zb {
			sb = r(sb + r(float32(math.Exp(float64(r(zv-mb))))))
		}
		lse := r(mb + r(float32(math.Log(float64(sb)))))
		allBF16[n] = r(lse - zb[targets[n]])
	}
	assertClose(t, "fp32 compute from bf16 operands", got, want, 2e-6, 1e-6)
	worst := 0.0
	for n := range N {
		worst = max(worst, math.Abs(float64(allBF16[n])-want[n]))
	}
	assert.Greater(t, worst, 0.05, "all-bf16 loss error: the catastrophic cancellation must cost > 0.05")
	t.Logf("max |loss − float64|: fp32 compute %.2g, all-bf16 %.3g", maxAbsDiff(got, want), worst)
}

func maxAbsDiff(got []float32, want []float64) float64 {
	w := 0.0
	for i := range got {
		w = max(w, math.Abs(float64(got[i])-want[i]))
	}
	return w
}

package cuda

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// Every kernel of the registry has a cost formula, and every formula
// belongs to a kernel.
func TestEveryKernelHasCost(t *testing.T) {
	reg := map[kernKey]bool{}
	for _, k := range Kernels {
		reg[kernKey{k.Op, k.Dir}] = true
		assert.Contains(t, kernelCosts, kernKey{k.Op, k.Dir}, "%s_%s has no cost formula", k.Op, k.Dir)
	}
	for k := range kernelCosts {
		assert.True(t, reg[k], "cost formula for %v, which is not in the registry", k)
	}
}

// openDry opens a dry backend, closed at the test's end (after the
// cleanups registered later).
func openDry(t *testing.T) *Backend {
	t.Helper()
	b, err := OpenDry(Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// stepRig is one training step of a model on a backend: casts, zeroed
// gradients, chunks forward and backward passes of rows tokens, the
// optimizer.
type stepRig struct {
	m       *model.Model
	opt     *optim.Split
	ids, tg *backend.Tensor
	n       int
}

func newStepRig(t *testing.T, b backend.Backend, cfg model.Config, dt backend.DType, rows int) *stepRig {
	t.Helper()
	saved := model.ComputeDType
	model.ComputeDType = dt
	m, err := model.New(b, cfg, 1)
	model.ComputeDType = saved
	require.NoError(t, err)
	opt, err := optim.NewSplit(b, m.Params(), optim.DefaultHyper())
	require.NoError(t, err)
	s := &stepRig{m: m, opt: opt, ids: b.New(backend.I32, rows), tg: b.New(backend.I32, rows)}
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]int32, rows)
	for i := range x {
		x[i] = int32(r.IntN(cfg.VocabSize))
	}
	b.Upload(s.ids, x)
	b.Upload(s.tg, x)
	t.Cleanup(func() {
		m.FreeWorkspaces()
		opt.Free()
		b.Free(s.ids)
		b.Free(s.tg)
	})
	return s
}

func (s *stepRig) step(seq, chunks int) {
	s.m.CastWeights()
	s.m.ZeroGrads()
	for range chunks {
		s.m.Forward(s.ids, s.tg, seq)
		s.m.Backward(1 / float32(chunks*s.ids.Len()))
	}
	s.opt.Step(s.n, 1)
	s.n++
}

// The dry backend runs the baseline's training step (9×512, seq 1024, one
// 8,192-token chunk, bf16) without a GPU and costs every launch and
// matmul: none uncosted, the matmuls' FLOPs those of StepGEMMs, and the
// bytes of the whole step printed.
func TestDryStepCosts(t *testing.T) {
	b := openDry(t)
	cfg := model.Baseline()
	const seq, rows = 1024, 8192
	s := newStepRig(t, b, cfg, backend.BF16, rows)
	s.step(seq, 1) // first use: workspaces, rotary tables, scratch
	require.NoError(t, b.ResetPrediction())
	s.step(seq, 1)
	require.NoError(t, b.Sync())
	c := b.Costs()
	assert.Empty(t, c.Uncosted)
	assert.Positive(t, c.Launches)
	assert.Positive(t, c.Matmuls)
	var matmul, gemms float64
	calls := 0
	for _, k := range c.Kernels {
		calls += k.Calls
		assert.Positive(t, k.Cost.Bytes, k.Name)
		if strings.HasPrefix(k.Name, "cublaslt ") {
			matmul += k.Cost.FLOPs
		}
	}
	assert.Equal(t, c.Launches+c.Matmuls, calls)
	for _, g := range StepGEMMs(cfg, rows, 1, backend.BF16, optim.DefaultHyper().MuonBackendSteps) {
		gemms += 2 * float64(g.M) * float64(g.N) * float64(g.K) * float64(g.Count)
	}
	assert.Equal(t, gemms, matmul, "the dry step's matmuls are the step's GEMMs")
	var out strings.Builder
	require.NoError(t, b.WritePrediction(&out, "baseline 9×512, seq 1024, one 8192-token step, bf16", rows))
	t.Logf("%s", out.String())
	t.Logf("baseline step (8192 tokens, bf16): %d launches, %d matmuls, %.1f MB, %.1f GFLOP", c.Launches, c.Matmuls,
		c.Total.Bytes/1e6, c.Total.FLOPs/1e9)
	assert.Contains(t, out.String(), "from the CUDA cost model")
	assert.Contains(t, out.String(), "predicted time per kernel family (a model, not a measurement)")
	assert.Regexp(t, `(?m)^H200: predicted [0-9.]+ ms per 8192-token step`, out.String())
	// Every kernel of the step has a family, and the family model is
	// never faster than the roofline bound at 100% of the peaks.
	for _, k := range c.Kernels {
		f := CUDAFamilyOf(k.Name)
		require.NotNil(t, f, k.Name)
		assert.NotEmpty(t, f.Source, k.Name)
		for _, ch := range Chips {
			assert.GreaterOrEqual(t, f.predictAt(ch, k, 0), ch.Bound(k)*(1-1e-12), k.Name)
			assert.LessOrEqual(t, f.predictAt(ch, k, 1), f.predictAt(ch, k, 0)*(1+1e-12), k.Name)
			assert.GreaterOrEqual(t, f.predictAt(ch, k, -1), f.predictAt(ch, k, 0)*(1-1e-12), k.Name)
		}
	}

	// A new tally starts empty; without one, WritePrediction says why.
	b.StartCosts()
	assert.Empty(t, b.Costs().Kernels)
	b.StopCosts()
	assert.Error(t, b.WritePrediction(&out, "", 1))
}

// TestCUDAFamilies: each family's fractions lie in (0, 1] with its range
// around the central value, and the measured ones come with their source.
func TestCUDAFamilies(t *testing.T) {
	for _, f := range CUDAFamilies {
		assert.True(t, f.Compute > 0 && f.Compute <= 1, f.Name)
		assert.True(t, f.Bandwidth > 0 && f.Bandwidth <= 1, f.Name)
		assert.True(t, f.Low > 0 && f.Low <= f.High && f.High <= 1, f.Name)
		assert.Contains(t, f.Source, "H200", f.Name)
	}
	assert.Same(t, cudaAttnFwd, CUDAFamilyOf("attention_fwd_tc_bfloat"))
	assert.Same(t, cudaAttnBwd, CUDAFamilyOf("attention_dkv_tc_bfloat"))
	assert.Same(t, cudaGEMM32, CUDAFamilyOf("cublaslt fp32→fp32 512×512×512 +C"))
	assert.Same(t, cudaGEMM16, CUDAFamilyOf("cublaslt bf16→bf16 8192×512×512"))
	assert.Same(t, cudaRows, CUDAFamilyOf("rmsnorm_fwd_portable_bfloat"))
	// Attention forward at the measured 38 TFLOP/s: 8.6 GFLOP in 0.225 ms.
	h200 := Chips[1]
	k := KernelCost{Cost: Cost{FLOPs: 38e12 * 0.225e-3}, Tensor: true}
	assert.InEpsilon(t, 0.225e-3, cudaAttnFwd.predictAt(h200, k, 0), 1e-9)
}

// The fused ops move less than their unfused sequences, by the
// intermediates they neither store nor read again.
func TestFusedCostsLess(t *testing.T) {
	b := openDry(t)
	const N, C = 8192, 512
	dt := backend.BF16
	x, x0, mix, h, dx := b.New(dt, N, C), b.New(dt, N, C), b.New(dt, N, C), b.New(dt, N, C), b.New(dt, N, C)
	rstd, mw, dmix, dx0 := b.New(backend.F32, N), b.New(backend.F32, 2, C), b.New(backend.F32, 2, C), b.New(backend.F32, N, C)
	bytes := func(f func()) float64 {
		b.StartCosts()
		f()
		return b.Costs().Total.Bytes
	}
	es := float64(dt.Size())
	fused := bytes(func() { b.ResidMixRMSNormForward(mix, h, rstd, x, x0, mw) })
	unfused := bytes(func() { b.ResidMixForward(mix, x, x0, mw); b.RMSNormForward(h, rstd, mix) })
	assert.InDelta(t, N*C*es, unfused-fused, 1, "mix read back")
	fused = bytes(func() { b.RMSNormResidMixBackward(dx, dx0, dmix, h, mix, rstd, nil, x, x0, mw) })
	unfused = bytes(func() { b.RMSNormBackward(dx, h, mix, rstd, nil); b.ResidMixBackward(dx, dx0, dmix, dx, x, x0, mw) })
	assert.InDelta(t, 2*N*C*es, unfused-fused, 1, "dm written and read")
	logits, dlogits, loss, tg := b.New(dt, N, 1024), b.New(dt, N, 1024), b.New(backend.F32, N), b.New(backend.I32, N)
	fused = bytes(func() { b.SoftcapCEForwardBackward(loss, dlogits, logits, tg, 30, 1) })
	unfused = bytes(func() {
		b.SoftcapCEForward(loss, logits, tg, 30)
		b.SoftcapCEBackward(dlogits, logits, tg, 30, 1)
	})
	assert.InDelta(t, N*1024*es+4*N, unfused-fused, 1, "logits and targets read once")
}

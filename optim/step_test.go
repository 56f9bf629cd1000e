package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// momentumSchedule is the reference's Muon momentum at a few steps,
// (1−t)·0.85 + t·0.95 with t = min(step/500, 1), written out: each step
// of the warm-up adds 0.0002, so a schedule one step early or late is off
// by 2e-4 everywhere before step 500.
var momentumSchedule = []struct {
	step int
	want float64
}{
	{0, 0.85}, {1, 0.8502}, {2, 0.8504}, {50, 0.86}, {250, 0.90},
	{499, 0.9498}, {500, 0.95}, {501, 0.95}, {1000, 0.95},
}

func TestMuonMomentumWarmup(t *testing.T) {
	h := DefaultHyper()
	for _, c := range momentumSchedule {
		assert.InDelta(t, c.want, h.MuonMomentumAt(c.step), 1e-15, "MuonMomentumAt(%d)", c.step)
	}
	h.MuonMomentumWarmupSteps = 0
	assert.Equal(t, 0.95, h.MuonMomentumAt(0), "no warm-up: MuonMomentumAt(0)")
}

// TestSplitStepMomentum reads the momentum Split.Step applies back from a
// Muon buffer: after a first step from the zero buffer (buf = g1, whatever
// the momentum), Step(step) with gradient g2 leaves buf = μ·g1 + g2, so
// μ = Σ(buf − g2)·g1 / Σg1². It must be the schedule's value at that very
// step: the float32 buffer makes the estimate good to a few 1e-8, the
// bound is 1e-6, and one step of the warm-up moves μ by 2e-4.
func TestSplitStepMomentum(t *testing.T) {
	b := cpu.New()
	rng := rand.New(rand.NewPCG(21, 22))
	const r, c = 8, 12
	for _, sc := range momentumSchedule {
		p := newParam(b, "blocks.0.attn.c_q.weight", randn(rng, r*c, 0.5), nil, r, c)
		emb := newParam(b, "tok_emb.weight", randn(rng, 4*c, 0.5), nil, 4, c)
		split, err := NewSplit(b, []*model.Param{emb, p}, DefaultHyper())
		require.NoError(t, err)
		g1, g2 := randn(rng, r*c, 1), randn(rng, r*c, 1)
		b.Upload(p.G, g1)
		split.Step(sc.step, 1)
		b.Upload(p.G, g2)
		split.Step(sc.step, 1)
		buf := b.Download(split.Muon.bufs[0])
		num, den := 0.0, 0.0
		for i := range buf {
			num += (float64(buf[i]) - float64(g2[i])) * float64(g1[i])
			den += float64(g1[i]) * float64(g1[i])
		}
		assert.InDelta(t, sc.want, num/den, 1e-6, "momentum applied by Split.Step(%d)", sc.step)
		split.Free()
	}
}

// oracleParam is one parameter's float64 state in the oracle optimizer.
type oracleParam struct {
	name string
	r, c int // c = 0 for 1-D
	w    []float64
	buf  []float64 // Muon
	m, v []float64 // Adam
}

// oracleMuon is the reference's Muon.step for one matrix, in float64.
func oracleMuon(p *oracleParam, g []float64, momentum, lr float64, steps int) {
	geff := make([]float64, len(g))
	for i := range g {
		p.buf[i] = momentum*p.buf[i] + g[i]
		geff[i] = g[i] + momentum*p.buf[i]
	}
	x := nsOracle(geff, p.r, p.c, steps)
	scale := math.Sqrt(math.Max(1, float64(p.r)/float64(p.c)))
	for i := range x {
		p.w[i] -= lr * scale * x[i]
	}
}

// oracleAdam is MLX Adam (bias_correction=True) for one tensor, in float64.
func oracleAdam(p *oracleParam, g []float64, lr, b1, b2, eps float64, t int) {
	for i := range g {
		p.m[i] = b1*p.m[i] + (1-b1)*g[i]
		p.v[i] = b2*p.v[i] + (1-b2)*g[i]*g[i]
		mhat := p.m[i] / (1 - math.Pow(b1, float64(t)))
		vhat := p.v[i] / (1 - math.Pow(b2, float64(t)))
		p.w[i] -= lr * mhat / (math.Sqrt(vhat) + eps)
	}
}

// TestSplitStepOracle runs Split.Step over a small parameter set with a
// tall, a square and a wide Muon matrix, the embedding and scalar/control
// tensors, at steps 0, 250, 500, 1000 (momentum 0.85, 0.90, 0.95, 0.95) and
// varying lrMul, against a float64 oracle of the reference's optimizers.
func TestSplitStepOracle(t *testing.T) {
	b := cpu.New()
	rng := rand.New(rand.NewPCG(1, 2))
	h := DefaultHyper()
	specs := []struct {
		name string
		r, c int
	}{
		{"tok_emb.weight", 12, 8},
		{"skip_weights", 1, 8},
		{"blocks.0.attn.c_q.weight", 8, 8},   // square: scale 1
		{"blocks.0.mlp.fc.weight", 24, 8},    // tall: scale sqrt(3)
		{"blocks.0.mlp.proj.weight", 8, 24},  // wide: scale 1
		{"blocks.0.attn.c_k.weight", 4, 8},   // wide
		{"blocks.0.resid_mix", 2, 8},         // 2-D control tensor: Adam
		{"blocks.0.attn_scale", 8, 0},        // 1-D: Adam
		{"blocks.0.attn.q_gain", 2, 0},       // 1-D: Adam
		{"blocks.1.attn.proj.weight", 16, 8}, // tall: scale sqrt(2)
	}
	var params []*model.Param
	var oracle []*oracleParam
	for _, s := range specs {
		n, shape := s.r*max(s.c, 1), []int{s.r, s.c}
		if s.c == 0 {
			shape = shape[:1]
		}
		w := randn(rng, n, 0.5)
		params = append(params, newParam(b, s.name, w, nil, shape...))
		oracle = append(oracle, &oracleParam{name: s.name, r: s.r, c: s.c, w: f64s(w),
			buf: make([]float64, n), m: make([]float64, n), v: make([]float64, n)})
	}
	split, err := NewSplit(b, params, h)
	require.NoError(t, err)
	defer split.Free()
	require.Len(t, split.MatrixKeys(), 5, "matrix keys")
	isMatrix := map[string]bool{}
	for _, k := range split.MatrixKeys() {
		isMatrix[k] = true
	}

	for i, c := range []struct {
		step  int
		lrMul float64
	}{{0, 1}, {250, 0.5}, {500, 0.25}, {1000, 1}} {
		momentum := (1-math.Min(float64(c.step)/500, 1))*0.85 + math.Min(float64(c.step)/500, 1)*0.95
		for j, p := range params {
			g := randn(rng, p.G.Len(), 0.1)
			b.Upload(p.G, g)
			o := oracle[j]
			switch {
			case isMatrix[o.name]:
				oracleMuon(o, f64s(g), momentum, 0.04*c.lrMul, 5)
			case o.name == "tok_emb.weight":
				oracleAdam(o, f64s(g), 0.05*c.lrMul, 0.9, 0.95, 1e-8, i+1)
			default:
				oracleAdam(o, f64s(g), 0.04*c.lrMul, 0.9, 0.95, 1e-8, i+1)
			}
		}
		split.Step(c.step, c.lrMul)
		for j, p := range params {
			// The update is ~lr (1e-2); fp32 storage of w (|w| ≲ 2) rounds at 1.2e-7.
			assertClose(t, fmt.Sprintf("%s after step %d", p.Name, c.step), b.Download(p.W), oracle[j].w, 2e-6, 1e-6)
		}
		if t.Failed() {
			return
		}
	}
}

// TestAdamBiasCorrection checks Adam alone at steps 1, 2 and 10 against the
// float64 oracle, including the closed form of the first step,
// p −= lr·g/(|g| + eps).
func TestAdamBiasCorrection(t *testing.T) {
	b := cpu.New()
	rng := rand.New(rand.NewPCG(3, 4))
	const n, lr = 37, 0.05
	w := randn(rng, n, 1)
	p := newParam(b, "tok_emb.weight", w, nil, n)
	a := NewAdam(b, []*model.Param{p}, lr, 0.9, 0.95, 1e-8)
	defer a.Free()
	o := &oracleParam{w: f64s(w), m: make([]float64, n), v: make([]float64, n)}
	for step := 1; step <= 10; step++ {
		g := randn(rng, n, 1e-3)
		b.Upload(p.G, g)
		lrMul := 1 / float64(step)
		if step == 1 {
			closed := make([]float64, n)
			for i := range closed {
				gi := float64(g[i])
				closed[i] = float64(w[i]) - lr*lrMul*gi/(math.Abs(gi)+1e-8)
			}
			a.Step(lrMul)
			oracleAdam(o, f64s(g), lr*lrMul, 0.9, 0.95, 1e-8, step)
			assertClose(t, "step 1 closed form", b.Download(p.W), closed, 2e-7, 1e-6)
		} else {
			a.Step(lrMul)
			oracleAdam(o, f64s(g), lr*lrMul, 0.9, 0.95, 1e-8, step)
		}
		if step == 1 || step == 2 || step == 10 {
			assertClose(t, "Adam", b.Download(p.W), o.w, 2e-7, 1e-6)
		}
	}
	assert.Equal(t, 10, a.Steps(), "Adam steps")
}

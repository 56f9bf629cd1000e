package train

import (
	"os"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
	"github.com/stretchr/testify/assert"
)

// benchTrainStep times whole optimizer steps as the training loop runs
// them (weight cast, forward, backward, unscale, clip, Muon + Adam) on the
// embedded data, and reports tokens/s and GFLOP/s (model.StepFLOPsPerToken:
// 6·params + attention per token).
func benchTrainStep(b *testing.B, cfg Config) {
	dp, _, err := data.ExtractEmbedded(os.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	model.UseComputeDType(b, cfg.DType)
	be := cpu.New()
	m, err := model.New(be, cfg.Model, 1)
	if err != nil {
		b.Fatal(err)
	}
	opt, err := optim.NewSplit(be, m.Params(), cfg.Optim)
	if err != nil {
		b.Fatal(err)
	}
	scaler, _ := optim.ScalerFor(be, cfg.DType, 0)
	lg, err := NewLogger(os.DevNull, nil)
	if err != nil {
		b.Fatal(err)
	}
	st := &stepper{cfg: cfg, b: be, m: m, opt: opt, scaler: scaler, lg: lg, losses: be.New(backend.F32, 1, 2)}
	loader, err := data.NewTokenLoader(trainPattern(dp), nil, "bench")
	if err != nil {
		b.Fatal(err)
	}
	step := 0
	run := func() {
		if err := st.lossAndGrad(loader, st.lossSlot(0)); err != nil {
			b.Fatal(err)
		}
		st.update(step, 1)
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
		step++
	}
	run() // allocate workspaces
	for b.Loop() {
		run()
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(cfg.TrainBatchTokens)/sec, "tokens/s")
	b.ReportMetric(model.StepFLOPsPerToken(cfg.Model, cfg.TrainSeqLen)*float64(cfg.TrainBatchTokens)/sec/1e9, "GFLOP/s")
}

// BenchmarkTrainStepSmall is the small configuration of the reference's env
// names: NUM_LAYERS=4 MODEL_DIM=256 NUM_HEADS=4 NUM_KV_HEADS=2
// TRAIN_SEQ_LEN=256 TRAIN_BATCH_TOKENS=4096 GRAD_ACCUM_STEPS=1.
func BenchmarkTrainStepSmall(b *testing.B) {
	for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
		b.Run(dt.String(), func(b *testing.B) {
			c := Defaults()
			c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 4, 256, 4, 2
			c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 256, 4096, 1, 4096
			c.DType = dt
			benchTrainStep(b, c)
		})
	}
}

// BenchmarkTrainStepBaseline is one 8,192-token microbatch step of the
// 17M-parameter baseline (TRAIN_BATCH_TOKENS=8192 GRAD_ACCUM_STEPS=1).
func BenchmarkTrainStepBaseline(b *testing.B) {
	c := Defaults()
	c.TrainBatchTokens, c.GradAccumSteps = 8192, 1
	benchTrainStep(b, c)
}

// summarize's median is the middle value of the sorted times, or the mean
// of the middle two; least and most are the extremes, whatever the order
// the calls came in.
func TestSummarize(t *testing.T) {
	c := summarize([]float64{0.030, 0.010, 0.050, 0.020, 0.040})
	assert.Equal(t, 5, c.n)
	assert.InDelta(t, 0.030, c.median, 1e-15)
	assert.InDelta(t, 0.010, c.min, 1e-15)
	assert.InDelta(t, 0.050, c.max, 1e-15)
	assert.Equal(t, "30.0 ms (median of 5: 10.0–50.0)", c.String())

	c = summarize([]float64{0.4, 0.1, 0.2, 0.9})
	assert.InDelta(t, 0.3, c.median, 1e-15)
	assert.InDelta(t, 0.1, c.min, 1e-15)
	assert.InDelta(t, 0.9, c.max, 1e-15)

	c = summarize([]float64{0.007})
	assert.Equal(t, callTimes{n: 1, median: 0.007, min: 0.007, max: 0.007}, c)
	assert.Equal(t, callTimes{}, summarize(nil))
}

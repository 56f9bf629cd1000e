package model

import (
	"math/rand/v2"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// benchStep times Forward + Backward of one microbatch of `tokens` rows and
// reports tokens/s and achieved GFLOP/s.
func benchStep(b *testing.B, cfg Config, dt backend.DType, seqLen, tokens int) {
	UseComputeDType(b, dt)
	be := cpu.New()
	m, err := New(be, cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	m.CastWeights()
	ids, targets := randomBatch(be, rand.New(rand.NewPCG(1, 2)), tokens, cfg.VocabSize)
	m.ZeroGrads()
	m.LossAndGrad(ids, targets, seqLen, 1/float32(tokens)) // allocates the workspace
	for b.Loop() {
		m.Forward(ids, targets, seqLen)
		m.Backward(1 / float32(tokens))
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(tokens)/sec, "tokens/s")
	b.ReportMetric(StepFLOPsPerToken(cfg, seqLen)*float64(tokens)/sec/1e9, "GFLOP/s")
}

// smallConfig: 4 layers of width 256, 4 heads, 2 KV heads, vocab 1024.
func smallConfig() Config {
	c := Baseline()
	c.NumLayers, c.ModelDim, c.NumHeads, c.NumKVHeads = 4, 256, 4, 2
	return c
}

func BenchmarkTrainStepSmall(b *testing.B) {
	for _, dt := range []backend.DType{backend.F32, backend.BF16} {
		b.Run(dt.String(), func(b *testing.B) { benchStep(b, smallConfig(), dt, 256, 4096) })
	}
}

func BenchmarkTrainStepBaseline(b *testing.B) {
	benchStep(b, Baseline(), backend.BF16, 1024, 8192)
}

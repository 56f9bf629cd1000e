package artifact

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/golf-ml/golf/backend"
)

// baselineState has the shapes of the 17,059,912-parameter baseline model.
func baselineState() []Tensor {
	r := rand.New(rand.NewPCG(15, 16))
	ts := []Tensor{randTensor(r, "tok_emb.weight", backend.F32, 0.005, 1024, 512)}
	for l := range 9 {
		p := fmt.Sprintf("blocks.%d.", l)
		ts = append(ts,
			randTensor(r, p+"attn.c_q.weight", backend.F32, 0.02, 512, 512),
			randTensor(r, p+"attn.c_k.weight", backend.F32, 0.02, 256, 512),
			randTensor(r, p+"attn.c_v.weight", backend.F32, 0.02, 256, 512),
			randTensor(r, p+"attn.proj.weight", backend.F32, 0.02, 512, 512),
			randTensor(r, p+"attn.q_gain", backend.F32, 1, 8),
			randTensor(r, p+"mlp.fc.weight", backend.F32, 0.02, 1024, 512),
			randTensor(r, p+"mlp.proj.weight", backend.F32, 0.02, 512, 1024),
			randTensor(r, p+"attn_scale", backend.F32, 1, 512),
			randTensor(r, p+"mlp_scale", backend.F32, 1, 512),
			randTensor(r, p+"resid_mix", backend.F32, 1, 2, 512))
	}
	return append(ts, randTensor(r, "skip_weights", backend.F32, 1, 4, 512))
}

// BenchmarkQuantizeBaseline times Quantize on the baseline model's shapes.
func BenchmarkQuantizeBaseline(b *testing.B) {
	ts := baselineState()
	b.ResetTimer()
	for b.Loop() {
		Quantize(ts, testPatterns)
	}
}

// BenchmarkSaveQuantizedBaseline times container encoding plus zlib level 9.
func BenchmarkSaveQuantizedBaseline(b *testing.B) {
	q, _ := Quantize(baselineState(), testPatterns)
	p := filepath.Join(b.TempDir(), "m.int8.ptz")
	b.ResetTimer()
	for b.Loop() {
		n, raw, err := SaveQuantized(p, q)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "file_bytes")
		b.ReportMetric(float64(raw), "raw_bytes")
	}
}

// BenchmarkSaveNPZBaseline times writing the raw model.
func BenchmarkSaveNPZBaseline(b *testing.B) {
	ts := baselineState()
	p := filepath.Join(b.TempDir(), "m.npz")
	b.ResetTimer()
	for b.Loop() {
		if err := SaveNPZ(p, ts); err != nil {
			b.Fatal(err)
		}
	}
}

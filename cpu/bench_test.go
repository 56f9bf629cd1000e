package cpu

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/golf-ml/golf/internal/cputime"

	"github.com/golf-ml/golf/backend"
)

// Benchmarks at the baseline model's shapes. Run with
//
//	go test -run NONE -bench . -benchtime 3x ./cpu/

// reportFlops reports achieved GFLOP/s for flops per iteration, per wall
// second and per CPU second of the process since c0 (with GOMAXPROCS=1,
// the rate of one core, repeatable on a machine shared with other work).
func reportFlops(b *testing.B, flops float64, c0 time.Duration) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if c1, ok := cputime.Now(); ok && c1 > c0 {
		b.ReportMetric(flops*float64(b.N)/(c1-c0).Seconds()/1e9, "GFLOP/cpu-s")
	}
}

func benchLinear(b *testing.B, dt backend.DType, backward bool) {
	const N, C = 8192, 512
	be, r := New(), rand.New(rand.NewPCG(3, 1))
	x, w := upload(be, dt, randVals(r, N*C, 1), N, C), upload(be, dt, randVals(r, C*C, 0.05), C, C)
	out := be.New(dt, N, C)
	dx, dw := be.New(dt, N, C), be.New(backend.F32, C, C)
	flops := 2.0 * N * C * C
	if backward {
		flops *= 2
	}
	b.ResetTimer()
	c0, _ := cputime.Now()
	for range b.N {
		if backward {
			be.LinearBackward(dx, dw, out, x, w, false)
		} else {
			be.LinearForward(out, x, w)
		}
	}
	reportFlops(b, flops, c0)
}

func BenchmarkLinearForward(b *testing.B)  { perDType(b, benchLinear, false) }
func BenchmarkLinearBackward(b *testing.B) { perDType(b, benchLinear, true) }

// perDType runs a benchmark in bf16 (the default compute dtype), fp16 and
// fp32.
func perDType(b *testing.B, f func(*testing.B, backend.DType, bool), backward bool) {
	for _, dt := range []backend.DType{backend.BF16, backend.F16, backend.F32} {
		b.Run(dt.String(), func(b *testing.B) { f(b, dt, backward) })
	}
}

// attOperands are an attention call's tensors: random q (N, H, D), k and v
// (N, Hkv, D) in dt, and out, lse and the gradients to write.
type attOperands struct{ q, k, v, out, lse, dq, dk, dv *backend.Tensor }

func newAttOperands(b *Backend, dt backend.DType, r *rand.Rand, N, H, Hkv, D int) attOperands {
	return attOperands{
		q:   upload(b, dt, randVals(r, N*H*D, 1), N, H, D),
		k:   upload(b, dt, randVals(r, N*Hkv*D, 1), N, Hkv, D),
		v:   upload(b, dt, randVals(r, N*Hkv*D, 1), N, Hkv, D),
		out: b.New(dt, N, H, D), lse: b.New(backend.F32, N, H),
		dq: b.New(dt, N, H, D), dk: b.New(dt, N, Hkv, D), dv: b.New(dt, N, Hkv, D),
	}
}

// forward and backward run the attention on a (backward with out as dout).
func (a attOperands) forward(b *Backend, T int) { b.AttentionForward(a.out, a.lse, a.q, a.k, a.v, T) }
func (a attOperands) backward(b *Backend, T int) {
	b.AttentionBackward(a.dq, a.dk, a.dv, a.out, a.q, a.k, a.v, a.out, a.lse, T)
}

// benchAttention is the attention at the baseline's sequence length, 1024.
func benchAttention(b *testing.B, dt backend.DType, backward bool) {
	benchAttentionSeq(b, dt, backward, 1024)
}

func BenchmarkAttentionForward(b *testing.B)  { perDType(b, benchAttention, false) }
func BenchmarkAttentionBackward(b *testing.B) { perDType(b, benchAttention, true) }

// BenchmarkSoftcapCE runs the loss forward and backward over the baseline's
// logits (N = 8192 tokens, V = 1024) and reports logits per second.
func BenchmarkSoftcapCE(b *testing.B) {
	for _, dt := range []backend.DType{backend.BF16, backend.F16} {
		b.Run(dt.String(), func(b *testing.B) {
			const N, V = 8192, 1024
			be, r := New(), rand.New(rand.NewPCG(3, 3))
			logits := upload(be, dt, randVals(r, N*V, 3), N, V)
			tg := uploadIDs(be, randIDs(r, N, V))
			loss, dl := be.New(backend.F32, N), be.New(dt, N, V)
			b.ResetTimer()
			for range b.N {
				be.SoftcapCEForward(loss, logits, tg, 30)
				be.SoftcapCEBackward(dl, logits, tg, 30, 1.0/N)
			}
			b.ReportMetric(N*V*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlogits/s")
		})
	}
}

// benchAttentionSeq times the attention at sequence length T over 8192/T
// sequences (the baseline's tokens per step).
func benchAttentionSeq(b *testing.B, dt backend.DType, backward bool, T int) {
	const H, Hkv, D, N = 8, 4, 64, 8192
	B := N / T
	be := New()
	a := newAttOperands(be, dt, rand.New(rand.NewPCG(3, 4)), N, H, Hkv, D)
	a.forward(be, T)
	// Visible (query, key) pairs times 2·D per product: two products
	// forward (q·k, p·v), five backward (q·k again, dout·v, dq, dk, dv).
	pairs := float64(B*H) * float64(T) * float64(T+1) / 2
	flops := 2 * 2 * D * pairs
	if backward {
		flops = 5 * 2 * D * pairs
	}
	b.ResetTimer()
	c0, _ := cputime.Now()
	for range b.N {
		if backward {
			a.backward(be, T)
		} else {
			a.forward(be, T)
		}
	}
	reportFlops(b, flops, c0)
}

// BenchmarkAttentionForward256 and BenchmarkAttentionBackward256 are the
// attention benchmarks at the small config's sequence length, 256.
func BenchmarkAttentionForward256(b *testing.B) {
	perDType(b, func(b *testing.B, dt backend.DType, bw bool) { benchAttentionSeq(b, dt, bw, 256) }, false)
}

func BenchmarkAttentionBackward256(b *testing.B) {
	perDType(b, func(b *testing.B, dt backend.DType, bw bool) { benchAttentionSeq(b, dt, bw, 256) }, true)
}

// rowTensors are a row-wise op's operands at the baseline's activation
// shape: x, y, out CD (N, C); rstd F32 (N); s, ds F32 (C).
type rowTensors struct{ x, y, out, rstd, s, ds *backend.Tensor }

// benchRows runs a memory-bound op at the baseline's activation shape
// (N = 8192 rows of C = 512) and reports GB/s for the bytes it must move
// (bytesPerElem CD elements per element of x).
func benchRows(b *testing.B, dt backend.DType, bytesPerElem float64, op func(*Backend, rowTensors)) {
	const N, C = 8192, 512
	be, r := New(), rand.New(rand.NewPCG(3, 5))
	t := rowTensors{
		x: upload(be, dt, randVals(r, N*C, 1), N, C), y: upload(be, dt, randVals(r, N*C, 1), N, C),
		out: be.New(dt, N, C), rstd: upload(be, backend.F32, randVals(r, N, 1), N),
		s: upload(be, backend.F32, randVals(r, C, 1), C), ds: be.New(backend.F32, C),
	}
	b.ResetTimer()
	c0, _ := cputime.Now()
	for range b.N {
		op(be, t)
	}
	bytes := bytesPerElem * float64(dt.Size()) * N * C * float64(b.N)
	b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
	if c1, ok := cputime.Now(); ok && c1 > c0 {
		b.ReportMetric(bytes/(c1-c0).Seconds()/1e9, "GB/cpu-s")
	}
}

// BenchmarkRowOps times the row-wise ops in each dtype, bytes counted as
// golf bench counts them (each CD operand read or written once).
func BenchmarkRowOps(b *testing.B) {
	ops := []struct {
		name  string
		bytes float64
		op    func(*Backend, rowTensors)
	}{
		{"rmsnorm_fwd", 2, func(be *Backend, t rowTensors) { be.RMSNormForward(t.out, t.rstd, t.x) }},
		{"rmsnorm_bwd", 4, func(be *Backend, t rowTensors) { be.RMSNormBackward(t.out, t.y, t.x, t.rstd, nil) }},
		{"scaled_add_fwd", 3, func(be *Backend, t rowTensors) { be.ScaledAddForward(t.out, t.x, t.y, t.s) }},
		{"scaled_add_bwd", 3, func(be *Backend, t rowTensors) { be.ScaledAddBackward(t.out, t.ds, t.y, t.x, t.s) }},
		{"relu_sq_fwd", 2, func(be *Backend, t rowTensors) { be.ReluSqForward(t.out, t.x) }},
		{"relu_sq_bwd", 3, func(be *Backend, t rowTensors) { be.ReluSqBackward(t.out, t.y, t.x) }},
	}
	for _, o := range ops {
		for _, dt := range []backend.DType{backend.BF16, backend.F16, backend.F32} {
			b.Run(o.name+"/"+dt.String(), func(b *testing.B) { benchRows(b, dt, o.bytes, o.op) })
		}
	}
}

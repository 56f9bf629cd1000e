package cpu

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/cputime"
)

// benchQKNormRope runs QKNormRopeForward or QKNormRopeBackward (with the
// gain gradient, as the queries take it) at the baseline's query shapes
// (N = 8192 rows, 8 heads of 64, seqLen 1024) and reports the bytes it
// must move per wall and per CPU second: x and out forward, x, dout and dx
// backward.
func benchQKNormRope(b *testing.B, dt backend.DType, backward bool) {
	const N, H, D, T = 8192, 8, 64, 1024
	be, r := New(), rand.New(rand.NewPCG(3, 4))
	x := upload(be, dt, randVals(r, N*H*D, 1), N, H, D)
	dout := upload(be, dt, randVals(r, N*H*D, 1), N, H, D)
	gain := upload(be, backend.F32, randVals(r, H, 1), H)
	out, rstd := be.New(dt, N, H, D), be.New(backend.F32, N, H)
	dgain := be.New(backend.F32, H)
	be.QKNormRopeForward(out, rstd, x, gain, T, 10000)
	streams := 2.0
	if backward {
		streams = 3
	}
	bytes := streams * N * H * D * float64(dt.Size())
	b.ResetTimer()
	c0, _ := cputime.Now()
	for range b.N {
		if backward {
			be.QKNormRopeBackward(out, dgain, dout, x, rstd, gain, T, 10000)
		} else {
			be.QKNormRopeForward(out, rstd, x, gain, T, 10000)
		}
	}
	reportQKBytes(b, bytes, c0)
}

// reportQKBytes reports GB/s for bytes moved per iteration, per wall second
// and per CPU second of the process since c0.
func reportQKBytes(b *testing.B, bytes float64, c0 time.Duration) {
	b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	if c1, ok := cputime.Now(); ok && c1 > c0 {
		b.ReportMetric(bytes*float64(b.N)/(c1-c0).Seconds()/1e9, "GB/cpu-s")
	}
}

func BenchmarkQKNormRopeForward(b *testing.B)  { perDType(b, benchQKNormRope, false) }
func BenchmarkQKNormRopeBackward(b *testing.B) { perDType(b, benchQKNormRope, true) }

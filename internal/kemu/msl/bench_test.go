//go:build cgo

package msl

import (
	"math/rand"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// BenchmarkReluSqFwd: 1M elements, 256 threads per threadgroup (no
// barriers: one fiber start and finish per thread).
func BenchmarkReluSqFwd(b *testing.B) {
	const n, threads = 1 << 20, 256
	x := encode(backend.F32, randomInputs(rand.New(rand.NewSource(1)), backend.F32, n, 1, false))
	out := make([]byte, 4*n)
	args := shaders.EltwiseArgs{N: n}
	bufs := [][]byte{x, out, structBytes(&args)}
	b.SetBytes(8 * n)
	for i := 0; i < b.N; i++ {
		if err := Dispatch("relu_sq_fwd_simd_float", [3]int{n / threads, 1, 1}, [3]int{threads, 1, 1}, bufs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/thread")
}

// BenchmarkRMSNormFwd: 1024 rows of 512, 256 threads per threadgroup, in
// both flavours (the portable one passes nine barriers per row).
func BenchmarkRMSNormFwd(b *testing.B) {
	const rows, cols, threads = 1024, 512, 256
	x := encode(backend.BF16, randomInputs(rand.New(rand.NewSource(1)), backend.BF16, rows*cols, 1, false))
	out, rstd := make([]byte, 2*rows*cols), make([]byte, 4*rows)
	args := shaders.RMSNormArgs{Rows: rows, Cols: cols, Eps: backend.RMSNormEps}
	bufs := [][]byte{x, out, rstd, structBytes(&args)}
	for _, fl := range flavours {
		b.Run(fl, func(b *testing.B) {
			b.SetBytes(4 * rows * cols)
			for i := 0; i < b.N; i++ {
				if err := Dispatch("rmsnorm_fwd_"+fl+"_bfloat", [3]int{rows, 1, 1}, [3]int{threads, 1, 1}, bufs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(rows*threads), "ns/thread")
		})
	}
}

// BenchmarkDispatchOverhead: an empty-ish dispatch of one threadgroup of
// one thread, the fixed cost per Dispatch call.
func BenchmarkDispatchOverhead(b *testing.B) {
	x, out, args := make([]byte, 4), make([]byte, 4), make([]byte, 4)
	bufs := [][]byte{x, out, args}
	for i := 0; i < b.N; i++ {
		if err := Dispatch("relu_sq_fwd_simd_float", [3]int{1, 1, 1}, [3]int{1, 1, 1}, bufs); err != nil {
			b.Fatal(err)
		}
	}
}

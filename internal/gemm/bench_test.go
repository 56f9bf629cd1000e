package gemm

import (
	"fmt"
	"testing"
	"time"

	"github.com/golf-ml/golf/internal/cputime"
)

// benchShapes are the products of a training step of the baseline model
// (8192 tokens, model width 512, MLP width 1024): the forward projections
// (x·Wᵀ), the input gradient (dy·W), the weight gradient (dyᵀ·x) and a square
// product; then the forward projections of the small configuration (4096
// tokens, width 256, MLP width 512, vocabulary 1024).
var benchShapes = []struct {
	name           string
	transA, transB bool
	m, n, k        int
}{
	{"fwd_8192x512x512", false, true, 8192, 512, 512},
	{"fwd_8192x1024x512", false, true, 8192, 1024, 512},
	{"fwd_8192x512x1024", false, true, 8192, 512, 1024},
	{"dx_8192x512x1024", false, false, 8192, 512, 1024},
	{"dw_1024x512x8192", true, false, 1024, 512, 8192},
	{"sq_512x512x512", false, false, 512, 512, 512},
	{"fwd_4096x256x256", false, true, 4096, 256, 256},
	{"fwd_4096x512x256", false, true, 4096, 512, 256},
	{"fwd_4096x256x512", false, true, 4096, 256, 512},
	{"fwd_4096x1024x256", false, true, 4096, 1024, 256},
}

func BenchmarkSgemm(b *testing.B) {
	for _, k := range kernels() {
		name := k.name
		for _, s := range benchShapes {
			b.Run(fmt.Sprintf("%s/%s", name, s.name), func(b *testing.B) {
				benchSgemm(b, k, s.transA, s.transB, s.m, s.n, s.k)
			})
		}
	}
}

func benchSgemm(b *testing.B, k microKernel, transA, transB bool, m, n, kk int) {
	lda, ldb := kk, n
	if transA {
		lda = m
	}
	if transB {
		ldb = kk
	}
	a := make([]float32, m*kk)
	bm := make([]float32, n*kk)
	c := make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range bm {
		bm[i] = float32(i%5) - 2
	}
	withKernel(k, func() {
		b.ResetTimer()
		c0, _ := cputime.Now()
		for b.Loop() {
			Sgemm(transA, transB, m, n, kk, 1, a, lda, bm, ldb, 0, c, n)
		}
		reportFlops(b, 2*float64(m)*float64(n)*float64(kk), c0)
	})
}

// reportFlops reports GFLOP/s per wall second and per CPU second (the
// process's CPU time since c0): on a machine shared with other work the
// second is the repeatable one (with GOMAXPROCS=1, the rate of one core).
func reportFlops(b *testing.B, flops float64, c0 time.Duration) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if c1, ok := cputime.Now(); ok && c1 > c0 {
		b.ReportMetric(flops*float64(b.N)/(c1-c0).Seconds()/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkKernel runs each assembly micro-kernel alone on hot panels
// (kc = 256), with A packed (rs = 1, qs = mr) and read in place along rows
// (rs = kc, qs = 1): its peak, against which BenchmarkSgemm is to be read.
func BenchmarkKernel(b *testing.B) {
	const kc = 256
	for _, k := range asmKernels() {
		for _, packed := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/packedA=%v", k.name, packed), func(b *testing.B) {
				rs, qs := 1, k.mr
				if !packed {
					rs, qs = kc, 1
				}
				a, bp, c := make([]float32, k.mr*kc), make([]float32, k.nr*kc), make([]float32, k.mr*k.nr)
				c0, _ := cputime.Now()
				for b.Loop() {
					k.fn(kc, a, rs, qs, bp, c, k.nr, 1, 0, false)
				}
				reportFlops(b, 2*float64(k.mr*k.nr*kc), c0)
			})
		}
	}
}

package gemm

import (
	"fmt"
	"testing"
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
	for _, nk := range kernels() {
		name, k := nk.name, nk.fn
		for _, s := range benchShapes {
			b.Run(fmt.Sprintf("%s/%s", name, s.name), func(b *testing.B) {
				benchSgemm(b, k, s.transA, s.transB, s.m, s.n, s.k)
			})
		}
	}
}

func benchSgemm(b *testing.B, k kernelFunc, transA, transB bool, m, n, kk int) {
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
		for b.Loop() {
			Sgemm(transA, transB, m, n, kk, 1, a, lda, bm, ldb, 0, c, n)
		}
	})
	b.ReportMetric(2*float64(m)*float64(n)*float64(kk)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

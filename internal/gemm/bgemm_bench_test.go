package gemm

import (
	"fmt"
	"testing"

	"github.com/golf-ml/golf/internal/cputime"
)

// BenchmarkBgemm runs benchShapes on every Bgemm path (compare with
// BenchmarkSgemm at the same shapes).
func BenchmarkBgemm(b *testing.B) {
	for _, nk := range bkernels() {
		for _, s := range benchShapes {
			b.Run(fmt.Sprintf("%s/%s", nk.name, s.name), func(b *testing.B) {
				if nk.name == "go" || nk.name == "asm-gopack" {
					b.Skip("a test path, not a production one")
				}
				benchBgemm(b, nk, s.transA, s.transB, s.m, s.n, s.k)
			})
		}
	}
}

func benchBgemm(b *testing.B, k namedBKernel, transA, transB bool, m, n, kk int) {
	lda, ldb := kk, n
	if transA {
		lda = m
	}
	if transB {
		ldb = kk
	}
	a := make([]uint16, m*kk)
	bm := make([]uint16, n*kk)
	c := make([]float32, m*n)
	for i := range a {
		a[i] = toBF16(float32(i%7) - 3)
	}
	for i := range bm {
		bm[i] = toBF16(float32(i%5) - 2)
	}
	withBKernel(k, func() {
		b.ResetTimer()
		c0, _ := cputime.Now()
		for b.Loop() {
			Bgemm(transA, transB, m, n, kk, 1, a, lda, bm, ldb, 0, c, n)
		}
		reportFlops(b, 2*float64(m)*float64(n)*float64(kk), c0)
	})
}

// BenchmarkBgemmKernel runs the assembly micro-kernel alone on hot packed
// panels, for both A layouts: its peak, against which BenchmarkBgemm's
// GFLOP/s are to be read.
func BenchmarkBgemmKernel(b *testing.B) {
	if !hasBF16Kernel {
		b.Skip("no AVX512-BF16 on this CPU")
	}
	const kq = 128
	for _, transA := range []bool{false, true} {
		b.Run(fmt.Sprintf("transA=%v", transA), func(b *testing.B) {
			rs, qs := kq, 1
			if transA {
				rs, qs = 1, BMR
			}
			a, bp, c := make([]uint32, BMR*kq), make([]uint32, BNR*kq), make([]float32, BMR*BNR)
			for b.Loop() {
				kernelBAsm(kq, a, bp, c, BNR, rs, qs, 1, 0, false)
			}
			b.ReportMetric(4*BMR*BNR*kq*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkBgemmPack packs the A block and B panel of one K block of the
// baseline's forward and weight-gradient products (every transpose), and
// reports nanoseconds per packed element.
func BenchmarkBgemmPack(b *testing.B) {
	const m, n, kc = 1024, 512, 256
	src := make([]uint16, m*kc)
	dst := make([]uint32, m*kc/2)
	for _, trans := range []bool{false, true} {
		b.Run(fmt.Sprintf("A/transA=%v", trans), func(b *testing.B) {
			lda := kc
			if trans {
				lda = m
			}
			for b.Loop() {
				for ic := 0; ic < m; ic += bblocking.MC {
					packAPairs(dst, src, lda, trans, ic, min(bblocking.MC, m-ic), 0, kc)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(m*kc), "ns/elem")
		})
		b.Run(fmt.Sprintf("B/transB=%v", trans), func(b *testing.B) {
			ldb := n
			if trans {
				ldb = kc
			}
			for b.Loop() {
				packBPairs(dst, src, ldb, trans, 0, kc, 0, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(n*kc), "ns/elem")
		})
	}
}

package vmath

import (
	"math/rand/v2"
	"testing"

	"github.com/golf-ml/golf/internal/cputime"
)

// Benchmarks of the fused query/key kernels over 16 rows of the
// baseline's 8 query heads of 64 (32 KiB per tensor, cache-resident: the
// kernels' compute, not memory), per implementation, in elements per
// wall and per CPU second of the process (the repeatable one on a shared
// machine, with GOMAXPROCS=1 the rate of one core):
//
//	GOMAXPROCS=1 go test -run NONE -bench QKNormRope ./internal/vmath/
func benchQK(b *testing.B, f func(q qkData, out, rstd []float32, dgain []float64)) {
	saved, saved512 := useAsm, use512
	defer func() { useAsm, use512 = saved, saved512 }()
	q := newQKData(rand.New(rand.NewPCG(5, 5)), qkShape{rows: 16, hx: 8, d: 64}, false)
	out, rstd, dgain := make([]float32, len(q.x)), make([]float32, q.rows*q.hx), make([]float64, q.hx)
	QKNormRope(out, rstd, q.x, q.cs, q.sn, q.gain, q.d, 1e-6)
	for _, im := range []struct {
		name        string
		asm, avx512 bool
	}{{"go", false, false}, {"avx2", true, false}, {"avx512", true, true}} {
		if im.asm && !saved || im.avx512 && !saved512 {
			continue
		}
		useAsm, use512 = im.asm, im.avx512
		b.Run(im.name, func(b *testing.B) {
			c0, _ := cputime.Now()
			for b.Loop() {
				f(q, out, rstd, dgain)
			}
			elems := float64(len(q.x)) * float64(b.N)
			b.ReportMetric(elems/b.Elapsed().Seconds()/1e6, "Melem/s")
			if c1, ok := cputime.Now(); ok && c1 > c0 {
				b.ReportMetric(elems/(c1-c0).Seconds()/1e6, "Melem/cpu-s")
			}
		})
	}
}

func BenchmarkQKNormRope(b *testing.B) {
	benchQK(b, func(q qkData, out, rstd []float32, _ []float64) {
		QKNormRope(out, rstd, q.x, q.cs, q.sn, q.gain, q.d, 1e-6)
	})
}

func BenchmarkQKNormRopeGrad(b *testing.B) {
	benchQK(b, func(q qkData, out, rstd []float32, dgain []float64) {
		QKNormRopeGrad(out, dgain, q.dout, q.x, rstd, q.cs, q.sn, q.gain, q.d)
	})
}

func BenchmarkQKNormRopeGradNoGain(b *testing.B) {
	benchQK(b, func(q qkData, out, rstd []float32, _ []float64) {
		QKNormRopeGrad(out, nil, q.dout, q.x, rstd, q.cs, q.sn, q.gain, q.d)
	})
}

// benchQK16 runs f on k's rows of the baseline's 16 rows of 8 heads of
// 64, in elements per wall and per CPU second.
func benchQK16(b *testing.B, k qk16, f func(q qkData, x16, dout16, out []uint16, rstd []float32, dgain []float64)) {
	if !k.has(64) {
		b.Skipf("no %s kernels on this build or CPU (AVX-512)", k.name)
	}
	q := newQKData(rand.New(rand.NewPCG(5, 5)), qkShape{rows: 16, hx: 8, d: 64}, false)
	x16, dout16, out := k.rows(q.x), k.rows(q.dout), make([]uint16, len(q.x))
	rstd, dgain := make([]float32, q.rows*q.hx), make([]float64, q.hx)
	k.fwd(out, rstd, x16, q.cs, q.sn, q.gain, q.d, 1e-6)
	c0, _ := cputime.Now()
	for b.Loop() {
		f(q, x16, dout16, out, rstd, dgain)
	}
	elems := float64(len(q.x)) * float64(b.N)
	b.ReportMetric(elems/b.Elapsed().Seconds()/1e6, "Melem/s")
	if c1, ok := cputime.Now(); ok && c1 > c0 {
		b.ReportMetric(elems/(c1-c0).Seconds()/1e6, "Melem/cpu-s")
	}
}

func BenchmarkQKNormRopeBF16(b *testing.B) {
	benchQK16(b, qkBF16, func(q qkData, x16, _, out []uint16, rstd []float32, _ []float64) {
		QKNormRopeBF16(out, rstd, x16, q.cs, q.sn, q.gain, q.d, 1e-6)
	})
}

func BenchmarkQKNormRopeGradBF16(b *testing.B) {
	benchQK16(b, qkBF16, func(q qkData, x16, dout16, out []uint16, rstd []float32, dgain []float64) {
		QKNormRopeGradBF16(out, dgain, dout16, x16, rstd, q.cs, q.sn, q.gain, q.d)
	})
}

func BenchmarkQKNormRopeF16(b *testing.B) {
	benchQK16(b, qkF16, func(q qkData, x16, _, out []uint16, rstd []float32, _ []float64) {
		QKNormRopeF16(out, rstd, x16, q.cs, q.sn, q.gain, q.d, 1e-6)
	})
}

func BenchmarkQKNormRopeGradF16(b *testing.B) {
	benchQK16(b, qkF16, func(q qkData, x16, dout16, out []uint16, rstd []float32, dgain []float64) {
		QKNormRopeGradF16(out, dgain, dout16, x16, rstd, q.cs, q.sn, q.gain, q.d)
	})
}

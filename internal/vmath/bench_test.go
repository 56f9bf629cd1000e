package vmath

import (
	"math/rand/v2"
	"testing"
)

// Benchmarks over one row of the baseline's logits or attention scores
// (1024 elements), per implementation:
//
//	go test -run NONE -bench . ./internal/vmath/

func benchImpls(b *testing.B, f func(b *testing.B)) {
	saved, saved512 := useAsm, use512
	defer func() { useAsm, use512 = saved, saved512 }()
	type impl struct {
		name        string
		asm, avx512 bool
	}
	impls := []impl{{"go", false, false}}
	if saved {
		// "asm" is the kernel set the CPU gets; "asm-avx2" the same
		// assembly with the AVX-512 forms off, where they exist.
		impls = append(impls, impl{"asm", true, saved512})
		if saved512 {
			impls = append(impls, impl{"asm-avx2", true, false})
		}
	}
	for _, im := range impls {
		useAsm, use512 = im.asm, im.avx512
		b.Run(im.name, func(b *testing.B) {
			f(b)
			b.ReportMetric(float64(benchN)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
		})
	}
}

const benchN = 1024

func benchRow(lo, hi float32) []float32 {
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, benchN)
	for i := range x {
		x[i] = lo + (hi-lo)*r.Float32()
	}
	return x
}

func BenchmarkExpSub(b *testing.B) {
	src, dst := benchRow(-20, 0), make([]float32, benchN)
	benchImpls(b, func(b *testing.B) {
		for range b.N {
			ExpSub(dst, src, 1)
		}
	})
}

func BenchmarkMax(b *testing.B) {
	x := benchRow(-20, 0)
	benchImpls(b, func(b *testing.B) {
		for range b.N {
			Max(x)
		}
	})
}

func BenchmarkSoftcap(b *testing.B) {
	x, th, z := benchRow(-60, 60), make([]float32, benchN), make([]float32, benchN)
	benchImpls(b, func(b *testing.B) {
		for range b.N {
			Softcap(th, z, x, 30)
		}
	})
}

func BenchmarkSoftmaxGrad(b *testing.B) {
	s0, dp0 := benchRow(-20, 0), benchRow(-1, 1)
	s, dp := make([]float32, benchN), make([]float32, benchN)
	benchImpls(b, func(b *testing.B) {
		for range b.N {
			copy(s, s0)
			copy(dp, dp0)
			SoftmaxGrad(s, dp, 1, 0.5)
		}
	})
}

func BenchmarkToBF16(b *testing.B) {
	x, dst := benchRow(-20, 20), make([]uint16, benchN)
	benchImpls(b, func(b *testing.B) {
		for range b.N {
			ToBF16(dst, x)
		}
	})
}

func BenchmarkFromBF16(b *testing.B) {
	src, dst := make([]uint16, benchN), make([]float32, benchN)
	ToBF16(src, benchRow(-20, 20))
	benchImpls(b, func(b *testing.B) {
		for range b.N {
			FromBF16(dst, src)
		}
	})
}

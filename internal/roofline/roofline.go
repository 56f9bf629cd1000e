// Package roofline measures the two ceilings of the CPU backend's ops on
// the machine at hand: the float32 multiply-add throughput of the widest
// vector FMA the CPU has (and the bfloat16 dot product's, where it has
// one), from register-only micro-kernels, and the copy bandwidth, from
// copies of buffers larger than the caches. Every measurement runs on
// GOMAXPROCS goroutines at once, so the numbers are those of the cores the
// process may use; on a machine shared with other work they are what this
// process got, and the CPU-time variants (per CPU second × participants)
// what it would get alone.
package roofline

import (
	"runtime"
	"sync"
	"time"

	"github.com/golf-ml/golf/internal/cputime"
	"github.com/golf-ml/golf/internal/gemm"
)

// Rate is a measured throughput: per wall second over all participants,
// and per CPU second of the process times the participants (the rate
// the cores reach when the process has them to itself).
type Rate struct {
	Wall, CPU float64
}

// Peak is the machine's measured roofline.
type Peak struct {
	Threads  int
	FMA      Rate   // float32 FLOP/s of the widest FMA (2 per lane per instruction)
	FMAKind  string // "avx512", "avx2", "neon" or "go" (scalar fused multiply-adds)
	BF16     Rate   // bfloat16 dot-product FLOP/s (VDPBF16PS), zero where there is none
	AMX      Rate   // bfloat16 FLOP/s of AMX's TDPBF16PS on gemm's tile shapes, zero where Bgemm does not use AMX
	CopyRate Rate   // bytes/s read plus written by copies of large buffers
}

// Measure runs each micro-benchmark for about d on GOMAXPROCS goroutines.
func Measure(d time.Duration) Peak {
	nw := runtime.GOMAXPROCS(0)
	p := Peak{Threads: nw, FMAKind: fmaKind()}
	p.FMA = measure(nw, d, 1<<10, func(w, n int) float64 { return fmaLoop(n) })
	if hasDotBF16() {
		p.BF16 = measure(nw, d, 1<<10, func(w, n int) float64 { return dotBF16Loop(n) })
	}
	if gemm.AMX() {
		p.AMX = measure(nw, d, 1<<8, func(w, n int) float64 { return gemm.AMXPeakLoop(n) })
	}
	p.CopyRate = copyRate(nw, d)
	return p
}

// measure runs f(w, n) on nw goroutines (w the goroutine's index), with
// n doubled from n0 until one call takes d/40, then times rounds for
// about d: the wall rate is the best round's, the CPU rate all rounds'
// work over all rounds' CPU time; f returns the work it did.
func measure(nw int, d time.Duration, n0 int, f func(w, n int) float64) Rate {
	n := n0
	for {
		t0 := time.Now()
		f(0, n)
		if time.Since(t0) > d/40 || n >= 1<<30 {
			break
		}
		n *= 2
	}
	var best Rate
	var sumWork, sumCPU float64 // over all rounds: the CPU rate's numerator and denominator
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) || best.Wall == 0 {
		c0, _ := cputime.Now()
		t0 := time.Now()
		var wg sync.WaitGroup
		work := make([]float64, nw)
		for w := range nw {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work[w] = f(w, n)
			}()
		}
		wg.Wait()
		wall := time.Since(t0).Seconds()
		c1, ok := cputime.Now()
		total := 0.0
		for _, v := range work {
			total += v
		}
		best.Wall = max(best.Wall, total/wall)
		if ok && c1 > c0 {
			sumWork += total
			sumCPU += (c1 - c0).Seconds()
		}
	}
	// The CPU rate pools every round: the process's CPU time comes from
	// the scheduler's accounting, coarse against one short round, and the
	// best of several such ratios picked an outlier (a copy rate per CPU
	// second twice the wall rate on an idle machine). Other work on the
	// machine does not bias it the way it does the wall rate.
	if sumCPU > 0 {
		best.CPU = sumWork / sumCPU * float64(nw)
	}
	return best
}

// copyRate times copies of buffers larger than a server's L2 and its
// share of L3 (64 MiB in all, at least 16 MiB per participant), one pair
// per participant, counting the bytes read and written.
func copyRate(nw int, d time.Duration) Rate {
	size := max(16<<20, (64<<20)/nw)
	src, dst := make([][]byte, nw), make([][]byte, nw)
	for w := range nw {
		src[w], dst[w] = make([]byte, size), make([]byte, size)
		for i := range src[w] {
			src[w][i] = byte(i)
		}
		copy(dst[w], src[w]) // fault the pages in
	}
	return measure(nw, d, 1, func(w, n int) float64 {
		for range n {
			copy(dst[w], src[w])
		}
		return 2 * float64(size) * float64(n)
	})
}

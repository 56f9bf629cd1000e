package cpu

import (
	"fmt"
	"sync"
	"time"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
	"github.com/golf-ml/golf/internal/roofline"
)

var (
	peakOnce sync.Once
	peak     roofline.Peak
)

// Roofline measures (once per process, about a second) the machine's
// roofline for ops in dtype dt: the FLOP/s of the multiply-add the
// backend's products run on in dt (float32 FMA, or the bfloat16 dot
// product where Bgemm uses it) and the copy bandwidth, on GOMAXPROCS
// threads, with a line describing both. golf bench divides each op's
// GFLOP/s and GB/s by them.
func (b *Backend) Roofline(dt backend.DType) (flops, bytesPerSec float64, desc string) {
	peakOnce.Do(func() { peak = roofline.Measure(300 * time.Millisecond) })
	p := peak
	flops, kind := p.FMA.Wall, fmt.Sprintf("fp32 FMA (%s)", p.FMAKind)
	cpuFlops := p.FMA.CPU
	if dt == backend.BF16 && gemm.NativeBF16() {
		flops, kind, cpuFlops = p.BF16.Wall, "bf16 dot product (VDPBF16PS)", p.BF16.CPU
	}
	desc = fmt.Sprintf("%s %.0f GFLOP/s on %d threads (%.0f per core; %.0f per CPU second × threads), copy %.1f GB/s read+write (%.1f per CPU second × threads)",
		kind, flops/1e9, p.Threads, flops/1e9/float64(p.Threads), cpuFlops/1e9, p.CopyRate.Wall/1e9, p.CopyRate.CPU/1e9)
	if p.BF16.Wall > 0 && !(dt == backend.BF16 && gemm.NativeBF16()) {
		desc += fmt.Sprintf("; bf16 dot product (VDPBF16PS, not used here) %.0f GFLOP/s", p.BF16.Wall/1e9)
	}
	return flops, p.CopyRate.Wall, desc
}

// RooflineCPU is Roofline per CPU second: the same micro-benchmarks' work
// divided by the process's CPU time and multiplied by the threads (the
// rates the cores reach when the process has them to itself), and the
// thread count. On a machine shared with other work an op's rate per CPU
// second against these is the repeatable fraction of the bound.
func (b *Backend) RooflineCPU(dt backend.DType) (flops, bytesPerSec float64, threads int) {
	peakOnce.Do(func() { peak = roofline.Measure(300 * time.Millisecond) })
	p := peak
	flops = p.FMA.CPU
	if dt == backend.BF16 && gemm.NativeBF16() {
		flops = p.BF16.CPU
	}
	return flops, p.CopyRate.CPU, p.Threads
}

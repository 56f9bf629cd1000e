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
// backend's products run on in dt (float32 FMA, or AMX's tiles or the
// bfloat16 dot product where Bgemm uses them) and the copy bandwidth, on GOMAXPROCS
// threads, with a line describing both. golf bench divides each op's
// GFLOP/s and GB/s by them.
func (b *Backend) Roofline(dt backend.DType) (flops, bytesPerSec float64, desc string) {
	peakOnce.Do(func() { peak = roofline.Measure(300 * time.Millisecond) })
	p := peak
	r, kind := productRate(p, dt)
	desc = fmt.Sprintf("%s %.0f GFLOP/s on %d threads (%.0f per core; %.0f per CPU second × threads), copy %.1f GB/s read+write (%.1f per CPU second × threads)",
		kind, r.Wall/1e9, p.Threads, r.Wall/1e9/float64(p.Threads), r.CPU/1e9, p.CopyRate.Wall/1e9, p.CopyRate.CPU/1e9)
	if p.FMA != r {
		desc += fmt.Sprintf("; fp32 FMA (%s) %.0f GFLOP/s", p.FMAKind, p.FMA.Wall/1e9)
	}
	if p.BF16.Wall > 0 && p.BF16 != r {
		desc += fmt.Sprintf("; bf16 dot product (VDPBF16PS, not used here) %.0f GFLOP/s", p.BF16.Wall/1e9)
	}
	return r.Wall, p.CopyRate.Wall, desc
}

// productRate is the multiply-add rate that bounds the backend's matrix
// products in dt, and its name: AMX's tiles (a quarter of their rate for
// f16, whose products take four bf16 ones) or the bfloat16 dot product
// where the products run on them, else the float32 FMA.
func productRate(p roofline.Peak, dt backend.DType) (roofline.Rate, string) {
	switch {
	case dt == backend.BF16 && gemm.AMX():
		return p.AMX, "bf16 AMX tiles (TDPBF16PS, the matrix products and attention)"
	case dt == backend.F16 && gemm.AMX():
		return roofline.Rate{Wall: p.AMX.Wall / 4, CPU: p.AMX.CPU / 4}, "AMX tiles at a quarter rate (an f16 product is four bf16 ones: the linear layers; attention runs on fp32 FMA)"
	case dt == backend.BF16 && gemm.NativeBF16():
		return p.BF16, "bf16 dot product (VDPBF16PS)"
	}
	return p.FMA, fmt.Sprintf("fp32 FMA (%s)", p.FMAKind)
}

// RooflineCPU is Roofline per CPU second: the same micro-benchmarks' work
// divided by the process's CPU time and multiplied by the threads (the
// rates the cores reach when the process has them to itself), and the
// thread count. On a machine shared with other work an op's rate per CPU
// second against these is the repeatable fraction of the bound.
func (b *Backend) RooflineCPU(dt backend.DType) (flops, bytesPerSec float64, threads int) {
	peakOnce.Do(func() { peak = roofline.Measure(300 * time.Millisecond) })
	p := peak
	r, _ := productRate(p, dt)
	return r.CPU, p.CopyRate.CPU, p.Threads
}

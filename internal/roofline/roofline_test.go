package roofline

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/internal/gemm"
)

// TestMeasure: the roofline's numbers are positive and plausible: a core
// retires at most a few hundred GFLOP/s of float32 FMAs (16 lanes × 2
// flops × 2 ports at ~5 GHz is 320). The lower bounds, 1 MFLOP/s and
// 1 MB/s, are far below any machine or emulator (qemu-user on a loaded
// 2-core machine measured 1e8 FMA/s per core), so that no load fails them,
// while a unit error (per millisecond for per second) still does.
func TestMeasure(t *testing.T) {
	p := Measure(20 * time.Millisecond)
	assert.Equal(t, runtime.GOMAXPROCS(0), p.Threads)
	perCore := p.FMA.Wall / float64(p.Threads)
	assert.Greater(t, perCore, 1e6, "FMA rate per core")
	assert.Less(t, perCore, 4e11, "FMA rate per core")
	assert.GreaterOrEqual(t, p.FMA.CPU, 0.0)
	assert.Greater(t, p.CopyRate.Wall, 1e6)
	if hasDotBF16() {
		assert.Greater(t, p.BF16.Wall, 1e6)
	} else {
		assert.Zero(t, p.BF16.Wall)
	}
	if gemm.AMX() {
		// A core's tile unit: 1,024 bfloat16 multiply-adds a cycle at most,
		// some 10 TFLOP/s at 5 GHz; more than the float32 FMAs.
		perCore := p.AMX.Wall / float64(p.Threads)
		assert.Greater(t, perCore, p.FMA.Wall/float64(p.Threads), "AMX rate per core against the FMA's")
		assert.Less(t, perCore, 1.1e13, "AMX rate per core")
	} else {
		assert.Zero(t, p.AMX.Wall)
	}
	assert.Contains(t, []string{"avx512", "avx2", "neon", "go"}, p.FMAKind)
}

// TestFMAGoCounts: the Go loop reports 16 FLOPs per step.
func TestFMAGoCounts(t *testing.T) {
	assert.Equal(t, 16.0*100, fmaGo(100))
}

package roofline

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestMeasure: the roofline's numbers are positive and plausible: a core
// retires at most a few hundred GFLOP/s of float32 FMAs (16 lanes × 2
// flops × 2 ports at ~5 GHz is 320), and copies move at least 100 MB/s.
func TestMeasure(t *testing.T) {
	p := Measure(20 * time.Millisecond)
	assert.Equal(t, runtime.GOMAXPROCS(0), p.Threads)
	perCore := p.FMA.Wall / float64(p.Threads)
	assert.Greater(t, perCore, 1e8, "FMA rate per core")
	assert.Less(t, perCore, 4e11, "FMA rate per core")
	assert.GreaterOrEqual(t, p.FMA.CPU, 0.0)
	assert.Greater(t, p.CopyRate.Wall, 1e8)
	if hasDotBF16() {
		assert.Greater(t, p.BF16.Wall, 1e8)
	} else {
		assert.Zero(t, p.BF16.Wall)
	}
	assert.Contains(t, []string{"avx512", "avx2", "go"}, p.FMAKind)
}

// TestFMAGoCounts: the Go loop reports 16 FLOPs per step.
func TestFMAGoCounts(t *testing.T) {
	assert.Equal(t, 16.0*100, fmaGo(100))
}

package optim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLRMul(t *testing.T) {
	cases := []struct {
		name                string
		step                int
		elapsedMs           float64
		iterations, wd      int
		maxWallclockSeconds float64
		want                float64
	}{
		// Iteration branch: warm-down over the last 20 of 100 iterations.
		{"iter before", 0, 0, 100, 20, 0, 1},
		{"iter just before", 79, 0, 100, 20, 0, 1},
		{"iter start", 80, 0, 100, 20, 0, 1},             // 20/20
		{"iter middle", 90, 0, 100, 20, 0, 0.5},          // 10/20
		{"iter last", 99, 0, 100, 20, 0, 0.05},           // 1/20
		{"iter at end", 100, 0, 100, 20, 0, 1},           // step == iterations: outside
		{"iter wd > iters", 0, 0, 10, 20, 0, 0.5},        // start 0, 10/20
		{"iter wd > iters 2", 7, 0, 10, 20, 0, 0.15},     // 3/20
		{"iter negative wall", 95, 0, 100, 20, -1, 0.25}, // 5/20
		{"wd off", 99, 0, 100, 0, 0, 1},
		{"wd off wall", 5000, 599000, 20000, 0, 600, 1},
		// Wall-clock branch: 600 s cap, 1200 warm-down steps.
		{"wall start", 0, 0, 20000, 1200, 600, 1}, // remaining 600000 > 0 = warmdownMs
		{"wall early", 100, 10000, 20000, 1200, 600, 1},
		// step 5000 at 540 s: 108 ms/step, warm-down 129600 ms, 60000 ms left
		{"wall warmdown", 5000, 540000, 20000, 1200, 600, 60000.0 / 129600.0},
		// step 4000 at 480 s: 120 ms/step, warm-down 144000 ms, 120000 left
		{"wall warmdown 2", 4000, 480000, 20000, 1200, 600, 120000.0 / 144000.0},
		{"wall past cap", 6000, 601000, 20000, 1200, 600, 0},
		// step 0 with time already spent: step_ms = elapsed/1
		{"wall step0", 0, 1000, 20000, 1200, 1, 0},
	}
	for _, c := range cases {
		got := LRMul(c.step, c.elapsedMs, c.iterations, c.wd, c.maxWallclockSeconds)
		assert.InDelta(t, c.want, got, 1e-12, "%s: LRMul(%d, %g, %d, %d, %g)",
			c.name, c.step, c.elapsedMs, c.iterations, c.wd, c.maxWallclockSeconds)
	}
}

package cputime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNowCountsWork: 30 ms of a busy loop on one goroutine advances the
// process's CPU time by more than nothing and by no more than the wall
// time it took (plus the runtime's own threads' share).
func TestNowCountsWork(t *testing.T) {
	c0, ok := Now()
	if !ok {
		t.Skip("no CPU time on this platform")
	}
	w0 := time.Now()
	x := 1.0
	for time.Since(w0) < 30*time.Millisecond {
		for range 100_000 {
			x = x*1.0000001 + 1e-9
		}
	}
	c1, _ := Now()
	wall := time.Since(w0)
	require.Greater(t, x, 1.0)
	assert.Greater(t, c1-c0, time.Duration(0))
	assert.LessOrEqual(t, c1-c0, 2*wall+10*time.Millisecond)
}

package main

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchPredict: golf bench --predict prints the predicted-time model of
// the Metal backend on any machine, for MLX's 8,192-token step and for the
// default step, named as a model, with the host's counts; on a backend
// other than metal it is a flag error before any work.
func TestBenchPredict(t *testing.T) {
	code, out := golf(t, nil, "bench", "--backend", "metal", "--predict")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "predicted time (a model, not a measurement): baseline 9×512, seq 1024, one 8192-token step")
	assert.Contains(t, out, "the default step: 524288 tokens")
	assert.Contains(t, out, "1024 ms per 8192-token step")
	// The M3's predicted 8,192-token step, read back from the table, is
	// what the comparison line reports.
	m := regexp.MustCompile(`(?m)^ +M3 +10 +3\.6 +100 +([0-9.]+) `).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	ms, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.Contains(t, out, "predicted here for the M3: "+strconv.Itoa(int(ms+0.5))+" ms")
	assert.Regexp(t, `host per step \(this loop: no per-chunk loss read\): \d+ dispatches, \d+ command buffers, 1 Sync, 1 drains, 0 partial waits`, out)

	code, out = golf(t, nil, "bench", "--backend", "cpu", "--predict")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, out, "--predict models the Metal backend")
}

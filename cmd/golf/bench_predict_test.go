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
	assert.Contains(t, out, "predicted time per kernel family")
	assert.Regexp(t, `(?m)^ *gemm simd, 16-bit operands +\d+ .* 0\.70 +0\.80 `, out)
	// The M3's predicted 8,192-token step, read back from the table, is
	// what the comparison line reports.
	m := regexp.MustCompile(`(?m)^ +M3 +10 +3\.6 +100 +([0-9.]+) `).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	ms, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.Contains(t, out, "predicted here for the M3: "+strconv.Itoa(int(ms+0.5))+" ms")
	assert.Regexp(t, `host per step \(this loop: no per-chunk loss read\): \d+ dispatches, \d+ command buffers, 1 Sync, 1 drains, 0 partial waits`, out)

	fusedLess(t, out)

	code, out = golf(t, nil, "bench", "--backend", "cuda", "--predict")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "compulsory bytes and FLOPs from the CUDA cost model (a model, not a measurement): baseline 9×512, seq 1024, one 8192-token step")
	assert.Regexp(t, `(?m)^H200: at most \d+ tokens/s \(8192 tokens in [0-9.]+ ms\)$`, out)
	// The per-family model on the H200's peaks beside the one step
	// measured there, with the model's error.
	assert.Contains(t, out, "predicted time per kernel family (a model, not a measurement)")
	h := regexp.MustCompile(`(?m)^H200: predicted ([0-9.]+) ms per 524288-token step`).FindStringSubmatch(out)
	require.NotNil(t, h, out)
	e := regexp.MustCompile(`(?m)^H200 measured \(docs/cuda\.md[^)]*\): 745\.4 ms per 524288-token step; predicted here: ([0-9.]+) ms, model error ([-+][0-9.]+)%`).FindStringSubmatch(out)
	require.NotNil(t, e, out)
	assert.Equal(t, h[1], e[1])
	pred, _ := strconv.ParseFloat(e[1], 64)
	pct, _ := strconv.ParseFloat(e[2], 64)
	assert.InDelta(t, 100*(pred/745.4-1), pct, 0.1)
	fusedLess(t, out)

	code, out = golf(t, nil, "bench", "--backend", "cpu", "--predict")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, out, "--predict models the Metal or the CUDA backend")
}

// fusedLess checks each step's line comparing the cost model's bytes with
// the fused ops and with their unfused sequences: fewer with the fused ops,
// by the percentage printed.
func fusedLess(t *testing.T, out string) {
	t.Helper()
	ms := regexp.MustCompile(`(?m)^compulsory bytes: (\d+) MB with the fused ops, (\d+) MB with their unfused sequences \(([-+][0-9.]+)%\)`).FindAllStringSubmatch(out, -1)
	require.Len(t, ms, 2, out)
	for _, m := range ms {
		fused, _ := strconv.ParseFloat(m[1], 64)
		unfused, _ := strconv.ParseFloat(m[2], 64)
		pct, _ := strconv.ParseFloat(m[3], 64)
		assert.Less(t, fused, unfused, m[0])
		assert.InDelta(t, 100*(fused/unfused-1), pct, 0.1, m[0])
	}
}

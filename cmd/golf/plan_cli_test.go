package main

import (
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/racebuild"
)

// firstFloat is the first submatch of re in s as a number.
func firstFloat(t *testing.T, re, s string) float64 {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	require.NotNil(t, m, "no %s in\n%s", re, s)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// TestInfoPlanBoundsTheSmokeRun: golf info --smoke plans at least the peak
// of live tensors that golf train --smoke logs (and not twice it), and its
// total with the host's share at least the run's peak resident set; it
// says how the validation batch follows from VAL_BATCH_SIZE.
func TestInfoPlanBoundsTheSmokeRun(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("the race detector's shadow memory is in the resident set, and a smoke step takes it a minute")
	}
	code, info := golf(t, nil, "info", "--smoke", "--backend", "cpu")
	require.Equal(t, 0, code, info)
	plan := firstFloat(t, `(?m)^\s*peak\b.*?([0-9.]+) MiB\s*$`, info)
	total := -1.0 // the host's share is printed where the memory available is known (Linux)
	if runtime.GOOS == "linux" {
		total = firstFloat(t, `(?m)^\s*total with the plan\b.*?([0-9.]+) MiB\s*$`, info)
	}
	assert.Contains(t, info, "validation batch: 16384 tokens = VAL_BATCH_SIZE 16384 / GRAD_ACCUM_STEPS 1")

	code, run := golf(t, nil, "train", "--smoke", "--backend", "cpu", "--iterations", "1", "--out-dir", filepath.Join(t.TempDir(), "out"), "--run-id", "smoke")
	require.Equal(t, 0, code, run)
	allocated := firstFloat(t, `(?m)^peak memory allocated: (\d+) MiB`, run)
	reserved := firstFloat(t, `(?m)^peak memory allocated: \d+ MiB reserved: (\d+) MiB`, run)
	t.Logf("golf info --smoke: peak %.1f MiB, total %.1f MiB; the run: allocated %.0f MiB, reserved %.0f MiB", plan, total, allocated, reserved)
	assert.GreaterOrEqual(t, plan, allocated, "the plan's peak against the run's")
	assert.LessOrEqual(t, plan, 2*(allocated+1), "the plan's peak against the run's")
	if total >= 0 {
		assert.GreaterOrEqual(t, total, reserved, "the total golf train checks against the run's peak resident set")
	}

	code, info = golf(t, nil, "info", "--backend", "cpu")
	require.Equal(t, 0, code, info)
	assert.Contains(t, info, "validation batch: 65536 tokens = VAL_BATCH_SIZE 524288 / GRAD_ACCUM_STEPS 8 in whole sequences (64 of 1024)")
}

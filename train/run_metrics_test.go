package train

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// readMetrics parses every line of a metrics file as a JSON object
// (failing on a line that is not one) and returns them in order.
func readMetrics(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, len(b) == 0 || b[len(b)-1] == '\n', "the file ends with a whole line")
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "line %d is not a JSON object: %q", i+1, line)
		out = append(out, m)
	}
	return out
}

// trainSteps lists the steps of the lines with a train_loss, in order.
func trainSteps(lines []map[string]any) []int {
	var steps []int
	for _, m := range lines {
		if _, ok := m["train_loss"]; ok {
			steps = append(steps, int(m["step"].(float64)))
		}
	}
	return steps
}

func oneToN(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// logValue finds the value of key in the log's line for step (a train or
// a val line, as kind says).
func logValue(t *testing.T, log string, step int, kind, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^step:` + strconv.Itoa(step) + `/\d+ ` + kind + `_loss:.*$`).FindString(log)
	require.NotEmpty(t, m, "no %s line of step %d", kind, step)
	v := regexp.MustCompile(key + `:(\S+)`).FindStringSubmatch(m)
	require.NotNil(t, v, "%s in %q", key, m)
	return v[1]
}

// TestRunMetricsFile: a run writes OUT_DIR/RUN_ID.metrics.jsonl, one JSON
// line per step with step, train_loss, lr_scale, tok_s and train_time_ms,
// and val_loss and val_bpb on the steps validated (step 0 a line of its
// own); the numbers are the log's.
func TestRunMetricsFile(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Iterations, cfg.ValLossEvery, cfg.TrainLogEvery, cfg.WarmdownIters = 12, 4, 1, 5
	res, err := Run(context.Background(), cfg, cpu.New(), nil)
	require.NoError(t, err)
	path := filepath.Join(cfg.OutDir, "tiny.metrics.jsonl")
	assert.Equal(t, path, res.MetricsPath)
	lines := readMetrics(t, path)
	logB, err := os.ReadFile(res.LogPath)
	require.NoError(t, err)
	log := string(logB)

	require.NotEmpty(t, lines)
	assert.Equal(t, []string{"step", "val_bpb", "val_loss"}, keys(lines[0]), "step 0: the validation before training")
	assert.Equal(t, 0.0, lines[0]["step"])
	assert.Equal(t, logValue(t, log, 0, "val", "val_loss"), fmt.Sprintf("%.4f", lines[0]["val_loss"]))
	assert.Equal(t, logValue(t, log, 0, "val", "val_bpb"), fmt.Sprintf("%.4f", lines[0]["val_bpb"]))

	assert.Equal(t, oneToN(12), trainSteps(lines), "one line per step")
	prevTime := 0.0
	for _, m := range lines[1:] {
		step := int(m["step"].(float64))
		want := []string{"lr_scale", "step", "tok_s", "train_loss", "train_time_ms"}
		if step%4 == 0 {
			want = []string{"lr_scale", "step", "tok_s", "train_loss", "train_time_ms", "val_bpb", "val_loss"}
		}
		assert.Equal(t, want, keys(m), "fields of step %d", step)
		assert.Equal(t, logValue(t, log, step, "train", "train_loss"), fmt.Sprintf("%.4f", m["train_loss"]), "train_loss of step %d", step)
		// The reference's schedule without a wall-clock cap: the step
		// with index s = step−1 is scaled by (N−s)/W in the last W steps.
		s, n, w := step-1, 12, 5
		lr := 1.0
		if s >= n-w {
			lr = float64(n-s) / float64(w)
		}
		assert.InDelta(t, lr, m["lr_scale"], 1e-12, "lr_scale of step %d", step)
		assert.Greater(t, m["tok_s"], 0.0)
		assert.GreaterOrEqual(t, m["train_time_ms"], prevTime, "train_time_ms of step %d", step)
		prevTime = m["train_time_ms"].(float64)
	}
	last := lines[len(lines)-1]
	assert.Equal(t, logValue(t, log, 12, "val", "val_loss"), fmt.Sprintf("%.4f", last["val_loss"]))
	assert.InDelta(t, res.ValBPB, last["val_bpb"], 1e-12)
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestRunResumeMetricsAndConfig: a run interrupted at step 7 (a step that
// validates: its state is saved before the validation) and resumed
// ends with a metrics file of steps 1..14 once each, with the straight
// run's losses, LR scales and validations, even when the file was left
// with lines past the checkpoint and a torn last line (a process killed
// later); the log holds the configuration block once, with the dtype by
// name, and the resumed run logs only the settings it changed.
func TestRunResumeMetricsAndConfig(t *testing.T) {
	cfg := resumeConfig(t, backend.BF16)
	straight, err := Run(context.Background(), cfg, cpu.New(), nil)
	require.NoError(t, err)
	want := readMetrics(t, straight.MetricsPath)

	cut := cfg
	cut.OutDir = filepath.Join(t.TempDir(), "cut")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	_, err = Run(ctx, cut, cpu.New(), &stopAfterLine{prefix: []byte("step:7/"), cancel: cancel})
	var ie *Interrupted
	require.ErrorAs(t, err, &ie)
	require.Equal(t, 7, ie.Step)
	path := filepath.Join(cut.OutDir, "resume.metrics.jsonl")
	assert.Equal(t, oneToN(ie.Step), trainSteps(readMetrics(t, path)), "the interrupted run's file: every step it did, once")

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(f, "{\"step\":%d,\"train_loss\":1,\"lr_scale\":1,\"tok_s\":1,\"train_time_ms\":1}\n{\"step\":%d,\"tra", ie.Step+1, ie.Step+2)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	cut.Checkpoint.Resume = "latest"
	cut.TrainLogEvery = 2
	resumed, err := Run(context.Background(), cut, cpu.New(), nil)
	require.NoError(t, err)
	got := readMetrics(t, resumed.MetricsPath)
	require.Equal(t, len(want), len(got), "lines")
	assert.Equal(t, oneToN(cfg.Iterations), trainSteps(got), "steps 1..14 once each")
	for i := range want {
		for _, k := range []string{"step", "train_loss", "lr_scale", "val_loss", "val_bpb"} {
			assert.Equal(t, want[i][k], got[i][k], "line %d, %s", i+1, k)
		}
	}

	logB, err := os.ReadFile(resumed.LogPath)
	require.NoError(t, err)
	log := string(logB)
	assert.Equal(t, 1, strings.Count(log, "configuration:\n{"), "the configuration block once")
	assert.Contains(t, log, `"DType": "bf16"`)
	assert.NotRegexp(t, `"DType": \d`, log)
	m := regexp.MustCompile(`(?m)^configuration: resumed; changed since the checkpoint \(\S+\):\n((?:  .*\n)+)`).FindStringSubmatch(log)
	require.NotNil(t, m, log)
	assert.Equal(t, "  Checkpoint.Resume: \"\" → \"latest\"\n  TrainLogEvery: 1 → 2\n", m[1])
}

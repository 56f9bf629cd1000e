package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	golfRuns = "../../report/testdata/golf"
	valCalib = "../../report/testdata/public/2026-03-25_ValCalib_GPTQ_XSA_BigramHash3072"
	pr549    = "../../report/testdata/public/2026-03-23_LeakyReLU_LegalTTT_ParallelMuon"
)

func TestReportCLI(t *testing.T) {
	dir := t.TempDir()
	js, img := filepath.Join(dir, "submission.json"), filepath.Join(dir, "runs.png")
	code, out := golf(t, nil, "report", "--against-runs", pr549, "--margin", "0", "--json", js, "--plot", img,
		"--name", "AR self-gen GPTQ", "--author", "a", "--github-id", "b", valCalib)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "t = -11.8338  df = 3.3063  p = 0.0004034  (one-sided, n = 3)")
	assert.Contains(t, out, "verdict: a record at p < 0.01")
	// A record that changed the baseline's shape says what it changed.
	assert.Contains(t, out, "verdict: a record at p < 0.01: the mean val_loss 1.88217853 is 0.00784215 nats below 1.89002068 (margin 0)\n"+
		"caveats: the record verdict is the t-test's alone; a record claim must also answer these:\n"+
		"  - runs: configuration differs from the baseline record's (train_gpt.py's defaults, in brackets): train_batch_tokens 786432 [524288], train_seq_len 2048 [1024], model_params 27067484 [17059912]\n")
	assert.Contains(t, out, "wrote "+js)
	var sub map[string]any
	data, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &sub))
	assert.Equal(t, "AR self-gen GPTQ", sub["name"])
	assert.Equal(t, 1.88217853, sub["mean_val_loss"])
	assert.InDelta(t, 3.3063, sub["welch_df"], 1e-4)
	assert.Len(t, sub["caveats"], 2, "the runs' configuration, the against runs'")
	f, err := os.Open(img)
	require.NoError(t, err)
	defer f.Close()
	_, err = png.DecodeConfig(f)
	assert.NoError(t, err)
}

// Smoke runs on golf's embedded data pass the t-test against smoke runs;
// the report and submission.json say, beside "record", why they are no
// record run, and stderr says the caveats are there.
func TestReportCLICaveats(t *testing.T) {
	js := filepath.Join(t.TempDir(), "submission.json")
	code, out := golf(t, nil, "report", "--against-runs", golfRuns+"/x_seed1.txt,"+golfRuns+"/x_seed2.txt", "--json", js, "../../report/testdata/golf_series")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "verdict: a record at p < 0.01")
	assert.Contains(t, out, "\ncaveats: the record verdict is the t-test's alone; a record claim must also answer these:\n"+
		"  - against runs: only 2 scored runs (seeds 1, 2); a record claim shows at least 3 seeds\n"+
		"  - runs and against runs: validated on brown_sp1024 (golf's embedded sample data, 55808 tokens), not FineWeb's validation split (fineweb10B_sp1024, 62021632 tokens)\n"+
		"  - runs and against runs: configuration differs from the baseline record's (train_gpt.py's defaults, in brackets): iterations 20 [20000],")
	assert.Contains(t, out, `golf report: the record verdict is the t-test's alone: caveats (3) follow it, and --json writes them as "caveats"`)
	var sub map[string]any
	data, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &sub))
	assert.Equal(t, true, sub["significance_test"].(map[string]any)["record"])
	require.Len(t, sub["caveats"], 3)
	assert.Equal(t, "against runs: only 2 scored runs (seeds 1, 2); a record claim shows at least 3 seeds", sub["caveats"].([]any)[0])
}

func TestReportCLIErrors(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one_seed1.txt")
	require.NoError(t, os.WriteFile(one, []byte("seed:1\nfinal_int8_zlib_roundtrip_exact val_loss:2.00000000 val_bpb:1.20000000\n"), 0o644))
	killed := filepath.Join(dir, "killed_seed2.txt")
	require.NoError(t, os.WriteFile(killed, []byte("seed:2\nstep:3/20 train_loss:6.0000 train_time:30ms step_avg:10.00ms\n"), 0o644))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no runs", nil, "golf: no runs: give log files or folders of logs after the flags"},
		{"missing file", []string{filepath.Join(dir, "gone.txt")}, "golf: runs: stat " + filepath.Join(dir, "gone.txt") + ": no such file"},
		{"no scored runs", []string{killed}, "golf: runs: no scored runs among 1:\n  " + killed + ": no score line: the log stops at step 3/20 (killed or unfinished?)"},
		{"one scored baseline run", []string{"--against-runs", one, "--against-runs", killed, golfRuns},
			"golf: --against-runs: Welch's test needs at least 2 scored baseline runs, got 1"},
		{"bad metric", []string{"--metric", "nats", golfRuns}, `golf: --metric must be loss or bpb, got "nats"`},
		{"bad alpha", []string{"--alpha", "1.5", golfRuns}, "golf: --alpha must be between 0 and 1 (exclusive), got 1.5"},
		{"bad margin", []string{"--margin", "-0.005", golfRuns}, "golf: --margin must be a finite number >= 0, got -0.005"},
		{"malformed alpha", []string{"--alpha", "small", golfRuns}, "alpha"},
		{"plot not png", []string{"--plot", filepath.Join(dir, "x.jpg"), golfRuns}, "--plot " + filepath.Join(dir, "x.jpg") + ": the plot is a PNG"},
		{"json folder missing", []string{"--json", filepath.Join(dir, "no", "s.json"), golfRuns}, "--json " + filepath.Join(dir, "no", "s.json") + ": folder " + filepath.Join(dir, "no") + " does not exist"},
		{"flag after runs", []string{golfRuns, "--against", "5.8"}, `golf: report: flags go before the runs: "--against" comes after a RUN`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := golf(t, nil, append([]string{"report"}, c.args...)...)
			assert.NotEqual(t, 0, code, out)
			assert.Contains(t, out, c.want)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no output files from the refused runs")
}

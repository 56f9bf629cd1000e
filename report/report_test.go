package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plainMeanStd is the float64 oracle: mean and the n − 1 standard deviation
// by their definitions.
func plainMeanStd(x []float64) (float64, float64) {
	var sum float64
	for _, v := range x {
		sum += v
	}
	mean := sum / float64(len(x))
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}

func TestBuildGolfRuns(t *testing.T) {
	rep, err := Build([]string{"testdata/golf"}, DefaultOptions())
	require.NoError(t, err)
	assert.Nil(t, rep.Test)
	assert.Empty(t, rep.Warnings)
	assert.Empty(t, rep.Notes)
	s := rep.Runs.Summary
	require.Equal(t, 3, s.N)
	// The three logs' final_int8_zlib_roundtrip_exact lines.
	mean, std := plainMeanStd([]float64{5.75410293, 5.75338560, 5.74332455})
	assert.InDelta(t, mean, s.MeanLoss, 1e-14)
	assert.InEpsilon(t, std, s.StdLoss, 1e-12)
	mean, std = plainMeanStd([]float64{3.19626213, 3.19586367, 3.19027501})
	assert.InDelta(t, mean, s.MeanBPB, 1e-14)
	assert.InEpsilon(t, std, s.StdBPB, 1e-12)

	var out bytes.Buffer
	require.NoError(t, rep.WriteText(&out))
	text := out.String()
	assert.Contains(t, text, "runs: 3 logs, 3 scored (score: the last NAME_exact line)")
	assert.Regexp(t, `testdata/golf/x_seed2.txt +golf +2 +20/20 +774.37ms +15.5s +no +- +2157515 +- +5.75338560 +3.19586367 +final_int8_zlib_roundtrip_exact`, text)
	assert.Contains(t, text, "n=3  val_loss mean 5.75027103 std 0.00602651  val_bpb mean 3.19413360 std 0.00334757")
}

// submission.json of a public record (openai/parameter-golf, see
// testdata/public/README.md).
type publicSubmission struct {
	ValLoss       float64 `json:"val_loss"`
	ValBPB        float64 `json:"val_bpb"`
	ValLossStd    float64 `json:"val_loss_std"`
	ValBPBStd     float64 `json:"val_bpb_std"`
	Seeds         []int   `json:"seeds"`
	TStatistic    float64 `json:"t_statistic"`
	WelchDF       float64 `json:"welch_df"`
	BytesTotal    int64   `json:"bytes_total"`
	ArtifactMax   int64   `json:"artifact_bytes_max"`
	ArtifactBytes int64   `json:"artifact_bytes"`
	BytesCode     int64   `json:"bytes_code"`
	SeedResults   map[string]struct {
		ValLoss       float64 `json:"val_loss"`
		ValBPB        float64 `json:"val_bpb"`
		Steps         int     `json:"steps"`
		StepAvgMs     float64 `json:"step_avg_ms"`
		MsPerStep     float64 `json:"ms_per_step"`
		ArtifactBytes int64   `json:"artifact_bytes"`
	} `json:"seed_results"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v))
}

const (
	valCalib  = "testdata/public/2026-03-25_ValCalib_GPTQ_XSA_BigramHash3072"
	leakyReLU = "testdata/public/2026-03-23_LeakyReLU_LegalTTT_ParallelMuon"
	longCtx   = "testdata/public/2026-03-18_LongContextSeq2048"
)

// The record ValCalib states, in its submission.json, Welch t = -11.8339
// and df = 3.3063 against PR #549 (LeakyReLU) with no margin; golf report
// reproduces them from the two records' logs, and the rest of its
// submission.json from its own logs.
func TestPublicRecordWelch(t *testing.T) {
	opts := DefaultOptions()
	opts.Margin = 0
	opts.AgainstRuns = []string{leakyReLU}
	rep, err := Build([]string{valCalib}, opts)
	require.NoError(t, err)
	var theirs publicSubmission
	readJSON(t, filepath.Join(valCalib, "submission.json"), &theirs)

	require.NotNil(t, rep.Test)
	assert.Equal(t, "Welch", rep.Test.Kind)
	assert.InDelta(t, theirs.TStatistic, rep.Test.T, 1e-4, "stated to 4 decimals (exactly -11.833833)")
	assert.InDelta(t, theirs.WelchDF, rep.Test.DF, 1e-4)
	assert.InDelta(t, 1.89002068, rep.Test.Target, 5e-9, "PR #549's exact 3-seed mean, as its README states")
	assert.True(t, rep.Test.Record)

	dir := t.TempDir()
	path := filepath.Join(dir, "submission.json")
	require.NoError(t, rep.WriteJSON(path, Meta{}))
	var ours publicSubmission
	readJSON(t, path, &ours)
	assert.InDelta(t, theirs.ValLoss, ours.ValLoss, 5e-9)
	assert.InDelta(t, theirs.ValBPB, ours.ValBPB, 5e-9)
	assert.InDelta(t, theirs.ValLossStd, ours.ValLossStd, 5e-9)
	assert.InDelta(t, theirs.ValBPBStd, ours.ValBPBStd, 5e-9)
	assert.Equal(t, theirs.Seeds, ours.Seeds)
	assert.Equal(t, theirs.BytesTotal, ours.BytesTotal)
	assert.Equal(t, theirs.ArtifactMax, ours.ArtifactBytes, "artifact_bytes is the largest")
	require.Len(t, ours.SeedResults, 3)
	for seed, want := range theirs.SeedResults {
		got, ok := ours.SeedResults[seed]
		require.True(t, ok, seed)
		assert.Equal(t, want.ValLoss, got.ValLoss, seed)
		assert.Equal(t, want.ValBPB, got.ValBPB, seed)
		assert.Equal(t, want.Steps, got.Steps, seed)
		assert.Equal(t, want.ArtifactBytes, got.ArtifactBytes, seed)
		assert.InDelta(t, want.StepAvgMs, got.MsPerStep, 0.05, "%s: they round step_avg to 0.1 ms", seed)
	}

	// PR #549's own submission.json gives its mean (to 4 decimals) and
	// largest artifact.
	var base publicSubmission
	readJSON(t, filepath.Join(leakyReLU, "submission.json"), &base)
	assert.InDelta(t, base.ValBPB, rep.Baseline.Summary.MeanBPB, 5e-5)
	var baseMax int64
	for _, r := range rep.Baseline.Runs {
		baseMax = max(baseMax, r.ArtifactBytes)
	}
	assert.Equal(t, base.BytesTotal, baseMax)
}

// The record LongContextSeq2048's README states a one-sided one-sample
// t-test of val_bpb against the baseline's 1.2243657 - 0.005: t = 31.42
// (golf's sign: mean minus target), df = 2, p = 0.00051, mean 1.20636623,
// sample std 0.00071667.
func TestPublicRecordOneSample(t *testing.T) {
	opts := DefaultOptions()
	opts.Metric = MetricBPB
	x := 1.2243657
	opts.Against = &x
	rep, err := Build([]string{longCtx}, opts)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Runs.Summary.N)
	assert.InDelta(t, 1.20636623, rep.Runs.Summary.MeanBPB, 5e-9)
	assert.InDelta(t, 0.00071667, rep.Runs.Summary.StdBPB, 5e-9)
	require.NotNil(t, rep.Test)
	assert.InDelta(t, -31.42, rep.Test.T, 0.005)
	assert.Equal(t, 2.0, rep.Test.DF)
	assert.InDelta(t, 0.00051, rep.Test.P, 5e-6)
	assert.True(t, rep.Test.Record)
	var theirs publicSubmission
	readJSON(t, filepath.Join(longCtx, "submission.json"), &theirs)
	sub := toMap(t, rep.Submission(Meta{}))
	assert.Equal(t, float64(theirs.BytesTotal), sub["bytes_total"])
	assert.Equal(t, float64(47716), sub["bytes_code"], "the README's code size")
}

func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// writeLog writes a minimal golf-format log with one score.
func writeLog(t *testing.T, dir, name string, seed int, loss, bpb float64) string {
	t.Helper()
	path := filepath.Join(dir, name)
	text := fmt.Sprintf("seed:%d\nmodel_params:100 vocab_size:8\nstep:1/1 train_loss:3.0000 train_time:10ms step_avg:10.00ms\n"+
		"step:1/1 val_loss:%.4f val_bpb:%.4f train_time:10ms step_avg:10.00ms\n"+
		"final_int8_zlib_roundtrip_exact val_loss:%.8f val_bpb:%.8f\n", seed, loss, bpb, loss, bpb)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestDuplicateSeeds(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, "a.txt", 1, 2.0, 1.2)
	writeLog(t, dir, "b.txt", 2, 2.01, 1.21)
	writeLog(t, dir, "c.txt", 1, 2.0, 1.2) // the same run again
	rep, err := Build([]string{dir}, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Runs.Summary.N, "the repeat is counted once")
	assert.Empty(t, rep.Warnings)
	require.Len(t, rep.Notes, 1)
	assert.Contains(t, rep.Notes[0], "seed 1: "+filepath.Join(dir, "c.txt")+" repeats "+filepath.Join(dir, "a.txt"))

	writeLog(t, dir, "d.txt", 2, 2.03, 1.22) // seed 2 again, another score
	rep, err = Build([]string{dir}, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Runs.Summary.N)
	require.Len(t, rep.Warnings, 1)
	assert.Contains(t, rep.Warnings[0], "seed 2: "+filepath.Join(dir, "b.txt")+" (val_loss:2.01000000 val_bpb:1.21000000) and "+
		filepath.Join(dir, "d.txt")+" (val_loss:2.03000000 val_bpb:1.22000000) have the same seed and configuration but DIFFERENT SCORES")
	var out bytes.Buffer
	require.NoError(t, rep.WriteText(&out))
	assert.True(t, strings.HasPrefix(out.String(), "WARNING: seed 2:"), "said first:\n%s", out.String())
	assert.Contains(t, out.String(), "not counted: "+filepath.Join(dir, "c.txt")+": same seed, config and score as")

	// Both duplicates keep a key in submission.json.
	sub := toMap(t, rep.Submission(Meta{}))
	results := sub["seed_results"].(map[string]any)
	assert.Len(t, results, 3)
	assert.Contains(t, results, "2 ("+filepath.Join(dir, "d.txt")+")")
}

// The verdicts, on runs whose scores are SciPy's golden one-sample cases.
func TestVerdicts(t *testing.T) {
	g := loadGolden(t)
	build := func(x []float64, against, margin float64) *Test {
		dir := t.TempDir()
		for i, v := range x {
			writeLog(t, dir, fmt.Sprintf("r%d.txt", i), i+1, v, v/2)
		}
		opts := DefaultOptions()
		opts.Against, opts.Margin = &against, margin
		rep, err := Build([]string{dir}, opts)
		require.NoError(t, err)
		return rep.Test
	}
	for _, c := range g.OneSample {
		tt := build(c.X, c.Against, c.Margin)
		assert.InEpsilon(t, c.P, tt.P, tol)
		switch {
		case c.P < 0.01:
			assert.True(t, tt.Record)
			assert.True(t, strings.HasPrefix(tt.Verdict, "a record at p < 0.01"), tt.Verdict)
		case c.SeedsNeeded > 0:
			assert.False(t, tt.Record)
			assert.Contains(t, tt.Verdict, fmt.Sprintf("with %d runs; about %d runs with the same mean and spread would reach it: more seeds", len(c.X), c.SeedsNeeded))
		}
	}
	// Below the target but not by the margin: more seeds cannot help.
	tt := build([]float64{1.8870, 1.8872, 1.8871}, 1.89, 0.005)
	assert.False(t, tt.Record)
	assert.Contains(t, tt.Verdict, "not a record: the gain 0.00290000 nats is not more than the margin 0.005; more seeds will not help, a bigger gain is needed")
	tt = build([]float64{1.8970, 1.8972, 1.8971}, 1.89, 0.005)
	assert.Contains(t, tt.Verdict, "not a record: the mean val_loss 1.89710000 is not below 1.89000000")
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	one := writeLog(t, dir, "one.txt", 1, 2.0, 1.2)
	data, err := os.ReadFile("testdata/golf/x_seed1.txt")
	require.NoError(t, err)
	cut := filepath.Join(dir, "cut_seed5.txt")
	require.NoError(t, os.WriteFile(cut, data[:bytes.Index(data, []byte("step:6/20"))+5], 0o644))
	empty := t.TempDir()
	x := 2.1
	for _, c := range []struct {
		name  string
		paths []string
		opts  func(*Options)
		want  string
	}{
		{"no runs", nil, nil, "no runs: give log files or folders of logs"},
		{"missing file", []string{filepath.Join(dir, "nope.txt")}, nil, filepath.Join(dir, "nope.txt")},
		{"folder without logs", []string{empty}, nil, empty + ": no training logs in this folder"},
		{"no scored runs", []string{cut}, nil, "runs: no scored runs among 1:\n  " + cut + ": no score line: the log stops at step"},
		{"one run against X", []string{one}, func(o *Options) { o.Against = &x }, "--against: a t-test needs at least 2 scored runs, got 1"},
		{"one scored baseline run", []string{"testdata/golf"}, func(o *Options) { o.AgainstRuns = []string{one, cut} },
			"--against-runs: Welch's test needs at least 2 scored baseline runs, got 1; not counted: " + cut},
		{"missing baseline", []string{"testdata/golf"}, func(o *Options) { o.AgainstRuns = []string{filepath.Join(dir, "gone")} }, "--against-runs: stat " + filepath.Join(dir, "gone")},
		{"bad metric", []string{one}, func(o *Options) { o.Metric = "nats" }, `--metric must be loss or bpb, got "nats"`},
		{"alpha 0", []string{one}, func(o *Options) { o.Alpha = 0 }, "--alpha must be between 0 and 1"},
		{"alpha 1", []string{one}, func(o *Options) { o.Alpha = 1 }, "--alpha must be between 0 and 1"},
		{"negative margin", []string{one}, func(o *Options) { o.Margin = -0.005 }, "--margin must be a finite number >= 0, got -0.005"},
		{"NaN margin", []string{one}, func(o *Options) { o.Margin = math.NaN() }, "--margin must be a finite number >= 0"},
		{"both tests", []string{one}, func(o *Options) { o.Against = &x; o.AgainstRuns = []string{one} }, "give --against or --against-runs, not both"},
		{"score with a colon", []string{one}, func(o *Options) { o.Score = "val_loss:" }, "--score must be a score line's name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := DefaultOptions()
			if c.opts != nil {
				c.opts(&opts)
			}
			rep, err := Build(c.paths, opts)
			assert.Nil(t, rep)
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestSubmissionJSON(t *testing.T) {
	rep, err := Build([]string{"testdata/golf"}, DefaultOptions())
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "submission.json")
	require.NoError(t, rep.WriteJSON(path, Meta{Name: "golf smoke", Author: "A. Golfer", GitHubID: "agolfer"}))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	// Seeds in run order, scores with the logs' 8 decimals.
	assert.Contains(t, string(data), `"seed_results": {
    "1": {
      "val_loss": 5.75410293,
      "val_bpb": 3.19626213,
      "steps": 20,
      "ms_per_step": 726.47
    },
    "2": {`)
	m := toMap(t, rep.Submission(Meta{Name: "golf smoke", Author: "A. Golfer", GitHubID: "agolfer"}))
	assert.Equal(t, "golf smoke", m["name"])
	assert.Equal(t, "A. Golfer", m["author"])
	assert.Equal(t, "agolfer", m["github_id"])
	assert.Equal(t, []any{1.0, 2.0, 3.0}, m["seeds"])
	assert.Equal(t, 5.75027103, m["mean_val_loss"])
	assert.Equal(t, m["mean_val_loss"], m["val_loss"])
	assert.Equal(t, 0.00602651, m["val_loss_std"])
	assert.Equal(t, 2158393.0, m["bytes_model_int8_zlib"], "the largest")
	for _, k := range []string{"p_value", "t_statistic", "welch_df", "artifact_bytes", "bytes_total", "bytes_code"} {
		assert.NotContains(t, m, k, "no test, and golf's log has no code size")
	}

	// A Welch test adds p, t and df; a one-sample test no df.
	opts := DefaultOptions()
	opts.AgainstRuns = []string{"testdata/golf"}
	opts.Margin = 0
	dir := t.TempDir()
	for i, v := range []float64{5.70, 5.71, 5.705} {
		writeLog(t, dir, fmt.Sprintf("n%d.txt", i), i+1, v, v/1.8)
	}
	rep, err = Build([]string{dir}, opts)
	require.NoError(t, err)
	m = toMap(t, rep.Submission(Meta{}))
	assert.Equal(t, rep.Test.P, m["p_value"])
	assert.Equal(t, rep.Test.T, m["t_statistic"])
	assert.Equal(t, rep.Test.DF, m["welch_df"])
	assert.Equal(t, true, m["significance_test"].(map[string]any)["record"])
	assert.NotContains(t, m, "name")
}

func TestWritePlot(t *testing.T) {
	opts := DefaultOptions()
	opts.AgainstRuns = []string{"testdata/reference/mlx_seed7.txt", "testdata/golf/x_seed3.txt"}
	rep, err := Build([]string{"testdata/golf/x_seed1.txt", "testdata/golf/x_seed2.txt"}, opts)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "runs.png")
	require.NoError(t, rep.WritePlot(path))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Equal(t, image.Rect(0, 0, 1632, 480), img.Bounds(), "17 x 5 inches at 96 dpi: the panels and the legend beside them")
	// Each group's colour is drawn.
	for i, c := range GroupColors {
		assert.Greater(t, countColor(img, c.R, c.G, c.B), 200, "group %d", i)
	}

	bare := filepath.Join(t.TempDir(), "score_only.txt")
	require.NoError(t, os.WriteFile(bare, []byte("seed:1\nfinal_int8_zlib_roundtrip_exact val_loss:2.00000000 val_bpb:1.20000000\n"), 0o644))
	rep, err = Build([]string{bare}, DefaultOptions())
	require.NoError(t, err)
	assert.ErrorContains(t, rep.WritePlot(filepath.Join(t.TempDir(), "x.png")), "the logs have no step lines to plot")
}

// countColor counts the pixels within 8 of (r, g, b) in every channel.
func countColor(img image.Image, r, g, b uint8) int {
	n := 0
	bd := img.Bounds()
	near := func(a uint32, b uint8) bool { return math.Abs(float64(a>>8)-float64(b)) <= 8 }
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, r) && near(pg, g) && near(pb, b) {
				n++
			}
		}
	}
	return n
}

package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A golf log with train_gpt.py's peak memory line, and the folder a
// series leaves (golf train --smoke --iterations 20 --seeds 4 --run-id p):
// the expected values are the log's lines.
func TestParseGolfLogPeakMemory(t *testing.T) {
	r := readRun(t, "testdata/golf_peak/p_seed4.txt", "")
	assert.Equal(t, "golf", r.Source)
	assert.Equal(t, "p_seed4", r.RunID)
	assert.Equal(t, 4, r.Seed)
	assert.Equal(t, "log", r.SeedFrom)
	assert.Equal(t, int64(513), r.PeakMemMiB, "peak memory allocated: 513 MiB reserved: 893 MiB")
	assert.Equal(t, 20, r.Steps)
	assert.Equal(t, 2225.97, r.StepAvgMs)
	assert.Equal(t, 44519.0, r.TrainTimeMs)
	assert.Equal(t, int64(2157893), r.ModelBytes)
	assert.Zero(t, r.CodeBytes, "golf logs no code size")
	assert.Zero(t, r.ArtifactBytes)
	require.NotNil(t, r.Score)
	assert.Equal(t, Score{"final_int8_zlib_roundtrip_exact", 5.77574268, 3.20828248}, *r.Score)
	assert.Empty(t, r.Problem)
	assert.Empty(t, r.Notes)
	assert.Equal(t, readRun(t, "testdata/golf/x_seed1.txt", "").Config, r.Config, "the same configuration as the smoke runs of testdata/golf")

	// The series' folder: its report file is golf's own, left out
	// without a "skipped" line.
	rep, err := Build([]string{"testdata/golf_peak"}, DefaultOptions())
	require.NoError(t, err)
	assert.Empty(t, rep.Runs.Skipped)
	assert.FileExists(t, filepath.Join("testdata/golf_peak", "p_report.txt"))
	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.Regexp(t, `testdata/golf_peak/p_seed4.txt +golf +4 +20/20 +2225.97ms +44.5s +no +513MiB +2157893 +- +5.77574268 +3.20828248 `, text.String())
}

// A golf train --seeds series (README, "Claiming a record") whose second
// seed was stopped by SIGINT at step 6 and resumed, so its log holds two
// attempts. The resumed log describes its run by its last attempt (the
// same configuration lines as the other seeds: no note), keeps the curve
// of steps 1-6 from the first attempt, and scores what the same seed
// trained straight through scored: the README's earlier loop of three
// separate runs gave 5.30699867, 5.34008749 and 5.35971757.
func TestParseGolfSeries(t *testing.T) {
	rep, err := Build([]string{"testdata/golf_series"}, DefaultOptions())
	require.NoError(t, err)
	assert.Empty(t, rep.Notes)
	assert.Empty(t, rep.Warnings)
	assert.Empty(t, rep.Runs.Skipped, "the series' own report is left out silently")
	assert.FileExists(t, filepath.Join("testdata/golf_series", "lr08_report.txt"))
	require.Len(t, rep.Runs.Runs, 3)
	scores := map[int]float64{}
	for _, r := range rep.Runs.Runs {
		require.True(t, r.Scored(), r.Path)
		scores[r.Seed] = r.Score.ValLoss
		assert.Equal(t, rep.Runs.Runs[0].Config, r.Config, r.Path)
		assert.Equal(t, int64(513), r.PeakMemMiB, r.Path)
	}
	assert.Equal(t, map[int]float64{1337: 5.30699867, 42: 5.34008749, 7: 5.35971757}, scores)
	r42 := rep.Runs.Runs[1]
	require.Equal(t, 42, r42.Seed)
	assert.Equal(t, "lr08_seed42", r42.RunID)
	var steps []int
	for _, p := range r42.Train {
		steps = append(steps, p.Step)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20}, steps)
	assert.Equal(t, TrainPoint{Step: 6, Loss: 6.5690, TrainTimeMs: 70086}, r42.Train[5], "the first attempt's step 6")
	assert.Equal(t, TrainPoint{Step: 7, Loss: 6.4041, TrainTimeMs: 79489}, r42.Train[6], "the resumed attempt's step 7")
	assert.Equal(t, 20, r42.Steps)
	assert.Equal(t, 9819.81, r42.StepAvgMs)
	assert.Equal(t, 3, rep.Runs.Summary.N)
	assert.InDelta(t, 5.33560124, rep.Runs.Summary.MeanLoss, 5e-9)
	assert.InDelta(t, 0.02664424, rep.Runs.Summary.StdLoss, 5e-9)
}

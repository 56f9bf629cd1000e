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

	// The series' folder: its report file is not a log.
	rep, err := Build([]string{"testdata/golf_peak"}, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join("testdata/golf_peak", "p_report.txt")}, rep.Runs.Skipped)
	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.Regexp(t, `testdata/golf_peak/p_seed4.txt +golf +4 +20/20 +2225.97ms +44.5s +no +513MiB +2157893 +- +5.77574268 +3.20828248 `, text.String())
}

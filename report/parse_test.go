package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readRun(t *testing.T, path, score string) *Run {
	t.Helper()
	r, err := ReadRun(path, score)
	require.NoError(t, err)
	return r
}

// golf's own logs (golf train --smoke --iterations 20 --seed N); the
// expected values are the logs' lines.
func TestParseGolfLog(t *testing.T) {
	r := readRun(t, "testdata/golf/x_seed1.txt", "")
	assert.Equal(t, "golf", r.Source)
	assert.Equal(t, "x_seed1", r.RunID)
	assert.Equal(t, 1, r.Seed)
	assert.Equal(t, "log", r.SeedFrom)
	assert.Equal(t, 20, r.Steps)
	assert.Equal(t, 20, r.Iterations)
	assert.Equal(t, 726.47, r.StepAvgMs)
	assert.Equal(t, 14529.0, r.TrainTimeMs)
	assert.False(t, r.WallclockCap)
	assert.Zero(t, r.PeakMemMiB, "golf logs no peak memory")
	assert.Equal(t, int64(2157927), r.ModelBytes)
	assert.Equal(t, "int8_zlib", r.ModelFormat)
	assert.Zero(t, r.CodeBytes)
	assert.Zero(t, r.ArtifactBytes, "golf logs no code size, so no code + model total")
	require.NotNil(t, r.Score)
	assert.Equal(t, Score{"final_int8_zlib_roundtrip_exact", 5.75410293, 3.19626213}, *r.Score)
	assert.Equal(t, []Score{{"final_int8_zlib_roundtrip", 5.7541, 3.1963}, {"final_int8_zlib_roundtrip_exact", 5.75410293, 3.19626213}}, r.Scores)
	require.Len(t, r.Train, 11, "steps 1-10 and 20")
	assert.Equal(t, TrainPoint{Step: 2, Loss: 11.8995, TrainTimeMs: 1468}, r.Train[1])
	assert.Equal(t, TrainPoint{Step: 20, Loss: 5.6704, TrainTimeMs: 14529}, r.Train[10])
	assert.Equal(t, []ValPoint{{Step: 20, ValLoss: 5.7543, BPB: 3.1964, TrainTimeMs: 14529}}, r.Val)
	assert.Empty(t, r.Problem)
	assert.Empty(t, r.Notes)
	assert.Contains(t, r.Config, "model_params:2101776 vocab_size:1024 layers:4")
	assert.NotContains(t, r.Config, "seed")
	// Same config, other seed: equal Config.
	assert.Equal(t, r.Config, readRun(t, "testdata/golf/x_seed2.txt", "").Config)
}

// A log as train_gpt.py writes it (report/testdata/gen_reference_logs.py):
// torchrun's warnings, the script's own source code, then its log0 lines.
func TestParseTrainGptLog(t *testing.T) {
	path := "testdata/reference/train_gpt_torchrun.txt"
	r := readRun(t, path, "")
	assert.Equal(t, "train_gpt.py", r.Source)
	assert.Equal(t, 1337, r.Seed)
	assert.Equal(t, "log", r.SeedFrom)
	assert.Equal(t, 13780, r.Steps)
	assert.Equal(t, 20000, r.Iterations)
	assert.Equal(t, 600038.0, r.TrainTimeMs)
	assert.Equal(t, 43.54, r.StepAvgMs)
	assert.True(t, r.WallclockCap)
	assert.Equal(t, int64(10184), r.PeakMemMiB)
	assert.Equal(t, int64(15815847), r.ModelBytes, "the int8+zlib file, not the raw 67224983-byte model")
	assert.Equal(t, "int8_zlib", r.ModelFormat)

	// The code the log starts with is what Code size counts.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	start := strings.Index(string(data), `"""`+"\nThe `train_gpt.py`")
	end := strings.Index(string(data), "\n"+strings.Repeat("=", 100)+"\n")
	require.True(t, start > 0 && end > start)
	assert.Equal(t, int64(end-start), r.CodeBytes)
	assert.Equal(t, r.CodeBytes+r.ModelBytes, r.ArtifactBytes, "Total submission size int8+zlib")
	assert.Equal(t, int64(15863533), r.ArtifactBytes)

	require.NotNil(t, r.Score)
	assert.Equal(t, Score{"final_int8_zlib_roundtrip_exact", 2.07269931, 1.2243657}, *r.Score)
	// The source code holds the same format strings (log0(f"seed:{...}"),
	// f"final_int8_zlib_roundtrip_exact val_loss:{...}"): none counts.
	assert.Len(t, r.Scores, 2)
	assert.Len(t, r.Train, 10+68, "steps 1-10 and every 200 to 13600")
	assert.Len(t, r.Val, 1+13+1, "steps 0, every 1000, and 13780")
	assert.Equal(t, 13780, r.Val[len(r.Val)-1].Step)
	assert.Contains(t, r.Config, "world_size:8 grad_accum_steps:1")
	assert.Empty(t, r.Problem)
}

// A log as train_gpt_mlx.py writes it: no seed line, so the file name's.
func TestParseMLXLog(t *testing.T) {
	r := readRun(t, "testdata/reference/mlx_seed7.txt", "")
	assert.Equal(t, "train_gpt_mlx.py", r.Source)
	assert.Equal(t, "mlx_seed7", r.RunID)
	assert.Equal(t, 7, r.Seed)
	assert.Equal(t, "file name", r.SeedFrom)
	assert.Equal(t, 200, r.Steps)
	assert.Equal(t, 162500.0, r.TrainTimeMs)
	assert.Equal(t, 812.5, r.StepAvgMs)
	assert.Equal(t, int64(15790012), r.ModelBytes)
	assert.Zero(t, r.ArtifactBytes)
	require.NotNil(t, r.Score)
	assert.Equal(t, Score{"final_int8_zlib_roundtrip_exact", 3.01234567, 1.78123456}, *r.Score)
	assert.Len(t, r.Train, 10+4, "steps 1-10, 50, 100, 150 and 200")
	assert.Contains(t, r.Config, "mlx_max_microbatch_tokens:8192")
}

// Lines count only when they start with a known key. Each hazard below is
// a line that a search for the key anywhere in the line would take; the
// control shows each key is read when it does start the line.
func TestParseCountsOnlyLinesThatStartWithAKey(t *testing.T) {
	hazards := []string{
		"    seed:999",
		"W0326 20:30:26.730000 8512 torch/distributed/run.py:803] step:3/10 val_loss:0.1 val_bpb:0.1",
		"  final_int8_zlib_roundtrip_exact val_loss:0.5 val_bpb:0.5",
		`x = "peak memory allocated: 5 MiB"`,
		"# Total submission size int8+zlib: 7 bytes",
	}
	log := strings.Join(hazards, "\n") + "\nseed:42\nstep:10/10 val_loss:2.5 val_bpb:1.5 train_time:100ms step_avg:10.00ms\n" +
		"final_int8_zlib_roundtrip_exact val_loss:2.50000000 val_bpb:1.50000000\n"
	r := ParseLog("a.txt", []byte(log), "")
	assert.Equal(t, 42, r.Seed)
	assert.Len(t, r.Val, 1)
	assert.Len(t, r.Scores, 1)
	assert.Equal(t, 2.5, r.Score.ValLoss)
	assert.Zero(t, r.PeakMemMiB)
	assert.Zero(t, r.ArtifactBytes)

	control := ParseLog("b.txt", []byte(strings.Join([]string{
		"seed:999", "step:3/10 val_loss:0.1 val_bpb:0.1", "final_int8_zlib_roundtrip_exact val_loss:0.5 val_bpb:0.5",
		"peak memory allocated: 5 MiB", "Total submission size int8+zlib: 7 bytes",
	}, "\n")+"\n"), "")
	assert.Equal(t, 999, control.Seed)
	assert.Len(t, control.Val, 1)
	assert.Equal(t, 0.5, control.Score.ValLoss)
	assert.Equal(t, int64(5), control.PeakMemMiB)
	assert.Equal(t, int64(7), control.ArtifactBytes)
}

// Later record scripts write `N/M key: value` and times in minutes.
func TestParseSpacedFormat(t *testing.T) {
	log := "4500/20000 train_loss: 2.2771 train_time: 9.0m tok/s: 6589668\n" +
		"4945/20000 val_loss: 2.3539 val_bpb: 1.0756\n" +
		"stopping_early: wallclock_cap train_time: 599592ms step: 4945/20000\n" +
		"quantized_ttt_phased val_loss:2.31944212 val_bpb:1.05989454 eval_time:508785ms\n"
	r := ParseLog("train_seed42.log", []byte(log), "quantized_ttt_phased")
	assert.Equal(t, 42, r.Seed)
	assert.Equal(t, "file name", r.SeedFrom)
	assert.Equal(t, []TrainPoint{{Step: 4500, Loss: 2.2771, TrainTimeMs: 540000}}, r.Train)
	assert.Equal(t, 4945, r.Steps)
	assert.True(t, r.WallclockCap)
	assert.Equal(t, 599592.0, r.TrainTimeMs)
	assert.InDelta(t, 599592.0/4945, r.StepAvgMs, 1e-12, "no step_avg: train time / steps")
	require.NotNil(t, r.Score)
	assert.Equal(t, 2.31944212, r.Score.ValLoss)
	// Without --score the log has no NAME_exact line, and says which it has.
	r = ParseLog("train_seed42.log", []byte(log), "")
	assert.Nil(t, r.Score)
	assert.Equal(t, "no NAME_exact val_loss:X val_bpb:Y line; its score lines are quantized_ttt_phased (pick one with --score NAME)", r.Problem)
}

func TestParseScoreFlag(t *testing.T) {
	r := readRun(t, "testdata/golf/x_seed1.txt", "final_int8_zlib_roundtrip")
	require.NotNil(t, r.Score)
	assert.Equal(t, Score{"final_int8_zlib_roundtrip", 5.7541, 3.1963}, *r.Score)
}

// A log cut mid-line: the partial line is dropped, never half-read.
func TestParseTruncatedLog(t *testing.T) {
	data, err := os.ReadFile("testdata/golf/x_seed1.txt")
	require.NoError(t, err)
	text := string(data)

	cut := strings.Index(text, "step:10/20 train_loss:6.19") + len("step:10/20 train_lo")
	r := ParseLog("cut.txt", data[:cut], "")
	assert.Nil(t, r.Score)
	assert.Equal(t, 9, r.Steps)
	assert.Equal(t, "no score line: the log stops at step 9/20 (killed or unfinished?)", r.Problem)
	require.Len(t, r.Notes, 1)
	assert.Contains(t, r.Notes[0], `the last line is incomplete ("step:10/20 train_lo")`)

	// Cut inside the score line's last number: 3.19 is not 3.19626213.
	cut = strings.Index(text, "final_int8_zlib_roundtrip_exact") + len("final_int8_zlib_roundtrip_exact val_loss:5.75410293 val_bpb:3.19")
	r = ParseLog("cut.txt", data[:cut], "")
	assert.Nil(t, r.Score)
	assert.Contains(t, r.Problem, "its score lines are final_int8_zlib_roundtrip (pick one")
	assert.Len(t, r.Notes, 1)
}

func TestParseLogWithoutScore(t *testing.T) {
	data, err := os.ReadFile("testdata/golf/x_seed2.txt")
	require.NoError(t, err)
	text := string(data)
	killed := text[:strings.Index(text, "serialized_model_int8_zlib")]
	r := ParseLog("killed.txt", []byte(killed), "")
	assert.False(t, r.Scored())
	assert.Equal(t, "no score line: the log stops at step 20/20 (killed or unfinished?)", r.Problem)
	assert.Empty(t, r.Notes, "the file ends with a whole line")

	failed := text[:strings.Index(text, "step:6/20")] + "error: step 6: non-finite loss\n"
	r = ParseLog("failed.txt", []byte(failed), "")
	assert.Equal(t, "no score line: the run ended at step 5/20 (error: step 6: non-finite loss)", r.Problem)

	r = ParseLog("notes.txt", []byte("pip install numpy\ntorch==2.8\n"), "")
	assert.Equal(t, "not a training log (no line golf knows)", r.Problem)
}

// golf train resumed from a checkpoint appends to the same log: the steps
// the interrupted attempt logged past the checkpoint are superseded.
func TestParseResumedLog(t *testing.T) {
	log := "seed:1\n" +
		"step:1/4 train_loss:6.0000 train_time:10ms step_avg:10.00ms\n" +
		"step:2/4 train_loss:5.0000 train_time:20ms step_avg:10.00ms\n" +
		"step:3/4 train_loss:4.0000 train_time:30ms step_avg:10.00ms\n" +
		"interrupted: signal interrupt at step:3/4 state:x.state\n"
	r := ParseLog("a.txt", []byte(log), "")
	assert.Equal(t, "no score line: the run ended at step 3/4 (interrupted: signal interrupt at step:3/4 state:x.state)", r.Problem)

	log += "resumed_from:ckpt step:2/4 train_time:20ms\n" +
		"step:3/4 train_loss:4.5000 train_time:31ms step_avg:10.33ms\n" +
		"step:4/4 train_loss:3.5000 train_time:41ms step_avg:10.25ms\n" +
		"step:4/4 val_loss:3.6000 val_bpb:2.0000 train_time:41ms step_avg:10.25ms\n" +
		"final_int8_zlib_roundtrip_exact val_loss:3.60000000 val_bpb:2.00000000\n"
	r = ParseLog("a.txt", []byte(log), "")
	assert.True(t, r.Scored())
	assert.Equal(t, []TrainPoint{{1, 6, 10}, {2, 5, 20}, {3, 4.5, 31}, {4, 3.5, 41}}, r.Train)
	assert.Equal(t, 4, r.Steps)
	assert.Equal(t, 41.0, r.TrainTimeMs)
}

func TestParseSeedFromFileName(t *testing.T) {
	for name, want := range map[string]int{"train_seed42.log": 42, "run_seed_7.txt": 7, "Seed-1337.txt": 1337} {
		r := ParseLog(name, []byte("step:1/1 val_loss:1 val_bpb:1\n"), "")
		assert.Equal(t, want, r.Seed, name)
		assert.Equal(t, "file name", r.SeedFrom, name)
	}
	r := ParseLog("train.log", []byte("step:1/1 val_loss:1 val_bpb:1\n"), "")
	assert.Empty(t, r.SeedFrom)
	assert.Equal(t, "train", r.SeedKey())
	// The log's seed wins over the file name's, with a note.
	r = ParseLog("x_seed3.txt", []byte("seed:4\n"), "")
	assert.Equal(t, 4, r.Seed)
	assert.Equal(t, []string{"the file name says seed 3 but the log says seed:4 (the log wins)"}, r.Notes)
}

func TestExpandFolders(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a_seed1.txt", "b_seed2.log"} {
		copyFile(t, "testdata/golf/x_seed1.txt", filepath.Join(dir, f))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte("numpy\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plot.png"), []byte("\x89PNG"), 0o644))
	runs, skipped, err := expand([]string{dir, filepath.Join(dir, "a_seed1.txt")}, "")
	require.NoError(t, err)
	require.Len(t, runs, 2, "a path named twice counts once; the .png is not read")
	assert.Equal(t, filepath.Join(dir, "a_seed1.txt"), runs[0].Path)
	assert.Equal(t, filepath.Join(dir, "b_seed2.log"), runs[1].Path)
	assert.Equal(t, []string{filepath.Join(dir, "requirements.txt")}, skipped)

	_, _, err = expand([]string{t.TempDir()}, "")
	assert.ErrorContains(t, err, "no training logs in this folder")
	_, _, err = expand([]string{filepath.Join(dir, "missing.txt")}, "")
	assert.ErrorContains(t, err, filepath.Join(dir, "missing.txt"))
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o644))
}

// TestExpandIgnoresGolfsOwnReport: a folder holding the report a --seeds
// series wrote beside its logs reads as its logs alone: the report is
// neither a run nor "skipped"; another non-log .txt still is.
func TestExpandIgnoresGolfsOwnReport(t *testing.T) {
	dir := t.TempDir()
	log, err := os.ReadFile("testdata/golf/x_seed1.txt")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s_seed1.txt"), log, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s_report.txt"),
		[]byte("runs: 1 logs, 1 scored (score: the last NAME_exact line)\nrun  source  seed\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("a note\n"), 0o644))
	runs, skipped, err := expand([]string{dir}, "")
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, filepath.Join(dir, "s_seed1.txt"), runs[0].Path)
	assert.Equal(t, []string{filepath.Join(dir, "notes.txt")}, skipped)
}

package train

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// tinyConfig trains a 2-layer, width-96 model on the embedded data set.
// Width 96 makes tok_emb (1024×96 = 98,304 elements) large enough for the
// int8 per-row path of the quantized artifact.
func tinyConfig(t *testing.T) Config {
	c := Defaults()
	c.DataPath = filepath.Join(t.TempDir(), "absent") // unset by the user and absent: embedded data
	c.OutDir = filepath.Join(t.TempDir(), "out")
	c.RunID = "tiny"
	c.Seed = 7
	c.Iterations = 30
	c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 2, 96, 4, 2
	c.TrainSeqLen = 64
	c.TrainBatchTokens = 2048
	c.GradAccumSteps = 1
	c.MaxMicrobatchTokens = 1024 // two chunks per microbatch
	c.ValBatchSize = 16384
	c.WarmupSteps = 1
	c.WarmdownIters = 10
	c.MaxWallclockSeconds = 0
	c.TrainLogEvery = 10
	c.DType = backend.BF16
	return c
}

func TestEndToEndEmbedded(t *testing.T) {
	cfg := tinyConfig(t)
	res, err := Run(context.Background(), cfg, cpu.New(), nil)
	require.NoError(t, err)
	require.True(t, res.Embedded, "the run falls back to the embedded data set")
	require.Equal(t, cfg.Iterations, res.Steps, "steps")
	require.Equal(t, cfg.Iterations, len(res.TrainLosses), "train losses")
	lnV := math.Log(float64(cfg.Model.VocabSize))
	first, last := meanLoss(res.TrainLosses[:5]), meanLoss(res.TrainLosses[len(res.TrainLosses)-5:])
	t.Logf("ln V %.3f, first-5 mean %.4f, last-5 mean %.4f, val_loss %.4f val_bpb %.4f, int8 round trip val_bpb %.4f",
		lnV, first, last, res.ValLoss, res.ValBPB, res.QValBPB)
	assert.InDelta(t, lnV, res.TrainLosses[0].Loss, 0.1, "first loss near ln V (near-uniform initial logits)")
	assert.LessOrEqual(t, last, lnV-1, "last-5 mean train loss, well below ln V = %.4f", lnV)
	assert.Less(t, last, first-0.5, "last-5 mean train loss, below the first-5 mean %.4f less 0.5", first)
	assert.Greater(t, res.ValLoss, 0.0, "val_loss")
	assert.Less(t, res.ValLoss, lnV-0.8, "val_loss, below ln V = %.4f less 0.8", lnV)
	assert.Greater(t, res.ValBPB, 0.0, "val_bpb")
	// bits per byte = loss/ln2 · tokens/bytes; the embedded tokenizer
	// averages between 2 and 6 bytes per token on English prose.
	r := res.ValBPB / (res.ValLoss / math.Ln2)
	assert.GreaterOrEqual(t, r, 1.0/6, "val_bpb/bits-per-token = tokens/bytes")
	assert.LessOrEqual(t, r, 1.0/2, "val_bpb/bits-per-token = tokens/bytes")
	assert.InEpsilon(t, res.ValBPB, res.QValBPB, 0.01, "int8 round trip val_bpb against val_bpb")
	for _, p := range []string{res.LogPath, res.ModelPath, res.QuantPath, res.SummaryPath, res.PlotPath} {
		if st, err := os.Stat(p); assert.NoError(t, err, "artifact %s", p) {
			assert.NotZero(t, st.Size(), "artifact %s is empty", p)
		}
	}
	assertNoTempFiles(t, cfg.OutDir)
	checkWithNumpy(t, res)
	checkLogFormats(t, res.LogPath)
}

func meanLoss(pts []Point) float64 {
	s := 0.0
	for _, p := range pts {
		s += p.Loss
	}
	return s / float64(len(pts))
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".tmp", "temporary file left behind")
	}
}

// checkWithNumpy loads both artifacts with zlib + numpy alone
// (scripts/check_artifacts.py) and compares them with the summary golf
// wrote. It needs Debian's python3-numpy; CI installs it.
func checkWithNumpy(t *testing.T, res *Result) {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Logf("SKIPPED numpy artifact check: %s with numpy not available (apt-get install python3-numpy)", py)
		return
	}
	out, err := exec.Command(py, "../scripts/check_artifacts.py", res.ModelPath, res.QuantPath, res.SummaryPath).CombinedOutput()
	require.NoError(t, err, "check_artifacts.py:\n%s", out)
	t.Logf("%s", strings.TrimSpace(string(out)))
}

func TestDeterministic(t *testing.T) {
	run := func() *Result {
		cfg := tinyConfig(t)
		cfg.Iterations = 4
		cfg.WarmupSteps = 0
		res, err := Run(context.Background(), cfg, cpu.New(), nil)
		require.NoError(t, err)
		return res
	}
	// Exact equality: the same seed gives the same bits.
	a, b := run(), run()
	require.Equal(t, a.TrainLosses, b.TrainLosses, "train losses of two runs with the same seed")
	require.Equal(t, a.ValLoss, b.ValLoss, "val_loss of two runs with the same seed")
	require.Equal(t, a.QValLoss, b.QValLoss, "round trip val_loss of two runs with the same seed")
	ma, err := os.ReadFile(a.ModelPath)
	require.NoError(t, err)
	mb, err := os.ReadFile(b.ModelPath)
	require.NoError(t, err)
	require.True(t, bytes.Equal(ma, mb), "the saved models differ between two runs with the same seed")
}

func TestWallclockCap(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Iterations = 1000
	cfg.WarmupSteps = 0
	cfg.MaxWallclockSeconds = 1e-6 // reached after the first step
	res, err := Run(context.Background(), cfg, cpu.New(), nil)
	require.NoError(t, err)
	require.Equal(t, 1, res.Steps, "steps before the wallclock cap")
	log, err := os.ReadFile(res.LogPath)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^stopping_early: wallclock_cap train_time:\d+ms step:1/1000$`, string(log), "the log's stopping_early line")
}

// Log line formats of train_gpt_mlx.py (and train_gpt.py's peak memory
// line), one regular expression per kind, written from the reference's
// f-strings.
var logFormats = map[string]*regexp.Regexp{
	"train":        regexp.MustCompile(`^step:\d+/\d+ train_loss:\d+\.\d{4} train_time:\d+ms step_avg:\d+\.\d{2}ms tok_s:\d+$`),
	"val":          regexp.MustCompile(`^step:\d+/\d+ val_loss:\d+\.\d{4} val_bpb:\d+\.\d{4} train_time:\d+ms step_avg:\d+\.\d{2}ms$`),
	"warmup":       regexp.MustCompile(`^warmup_step:\d+/\d+$`),
	"val_progress": regexp.MustCompile(`^val_progress:\d+/\d+$`),
	"saved":        regexp.MustCompile(`^saved_model:\S+ bytes:\d+$`),
	"int8":         regexp.MustCompile(`^serialized_model_int8_zlib:\d+ bytes \(payload:\d+ raw_pickle:\d+ payload_ratio:\d+\.\d{2}x\)$`),
	"roundtrip":    regexp.MustCompile(`^final_int8_zlib_roundtrip val_loss:\d+\.\d{4} val_bpb:\d+\.\d{4} eval_time:\d+ms$`),
	"exact":        regexp.MustCompile(`^final_int8_zlib_roundtrip_exact val_loss:\d+\.\d{8} val_bpb:\d+\.\d{8}$`),
	"model":        regexp.MustCompile(`^model_params:\d+ vocab_size:\d+ layers:\d+ dim:\d+ heads:\d+ kv_heads:\d+ seq_len:\d+ tie_embeddings:(True|False)$`),
	"iterations":   regexp.MustCompile(`^iterations:\d+ train_batch_tokens:\d+ grad_accum_steps:\d+ microbatch_tokens:\d+ microbatch_batch_size:\d+ val_batch_size:\d+ warmup_steps:\d+ max_wallclock_seconds:\d+\.\d{3}$`),
	"peak_memory":  regexp.MustCompile(`^peak memory allocated: \d+ MiB reserved: \d+ MiB$`), // train_gpt.py's
}

// referenceLines are lines as train_gpt_mlx.py prints them.
var referenceLines = map[string]string{
	"train":        "step:200/20000 train_loss:3.1234 train_time:123457ms step_avg:617.28ms tok_s:849382",
	"val":          "step:0/20000 val_loss:6.9357 val_bpb:4.1077 train_time:0ms step_avg:0.00ms",
	"warmup":       "warmup_step:20/20",
	"val_progress": "val_progress:25/119",
	"saved":        "saved_model:logs/x_mlx_model.npz bytes:68239876",
	"int8":         "serialized_model_int8_zlib:15862107 bytes (payload:17178912 raw_pickle:17201131 payload_ratio:3.91x)",
	"roundtrip":    "final_int8_zlib_roundtrip val_loss:2.0727 val_bpb:1.2276 eval_time:41234ms",
	"exact":        "final_int8_zlib_roundtrip_exact val_loss:2.07270000 val_bpb:1.22760000",
	"model":        "model_params:17059912 vocab_size:1024 layers:9 dim:512 heads:8 kv_heads:4 seq_len:1024 tie_embeddings:True",
	"iterations":   "iterations:20000 train_batch_tokens:524288 grad_accum_steps:8 microbatch_tokens:65536 microbatch_batch_size:64 val_batch_size:524288 warmup_steps:20 max_wallclock_seconds:600.000",
	"peak_memory":  "peak memory allocated: 22847 MiB reserved: 22894 MiB", // a public record's train_gpt.py log
}

// checkLogFormats checks the regular expressions against the reference's
// lines, then that our log has a line of each kind and every line of a known
// prefix parses.
func checkLogFormats(t *testing.T, path string) {
	t.Helper()
	for kind, re := range logFormats {
		assert.Regexp(t, re, referenceLines[kind], "format %q against the reference line", kind)
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		for kind, re := range logFormats {
			if re.MatchString(line) {
				seen[kind] = true
			}
		}
		for _, prefix := range []string{"step:", "final_int8", "serialized_model", "saved_model:", "warmup_step:", "val_progress:", "peak memory"} {
			if strings.HasPrefix(line, prefix) {
				assert.True(t, matchesAny(line), "log line does not parse with the reference formats: %q", line)
			}
		}
	}
	for kind := range logFormats {
		assert.True(t, seen[kind], "the log has no %q line", kind)
	}
}

func matchesAny(line string) bool {
	for _, re := range logFormats {
		if re.MatchString(line) {
			return true
		}
	}
	return false
}

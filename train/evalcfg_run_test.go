package train

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// logBlock is a configuration block as a run writes it into its log.
func logBlock(seqLen int) string {
	return fmt.Sprintf(`configuration:
{
  "DataPath": "/d/datasets/x",
  "TokenizerPath": "/d/tokenizers/x.model",
  "ValBatchSize": 2048,
  "GradAccumSteps": 2,
  "TrainSeqLen": %d,
  "Model": {
    "LogitSoftcap": 15,
    "RopeBase": 500,
    "LogitChunkTokens": 64
  },
  "DType": 0,
  "Backend": "cpu"
}
====================================================================================================
`, seqLen)
}

// writeArtifact writes a file of n bytes that starts like an int8
// container (zlib) or a raw .npz (zip).
func writeArtifact(t *testing.T, path string, n int, quantized bool) {
	b := make([]byte, n)
	if quantized {
		copy(b, "\x78\xda")
	} else {
		copy(b, "PK\x03\x04")
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// TestFindRunConfigFromLog: of a log's configuration blocks (one a
// process: a run, its resumptions, a later run of the same RUN_ID), the
// one whose logged artifact has the file's size is the artifact's; its
// score line is the run's score of those weights. A log whose sizes do not
// match still gives its last configuration, with a warning.
func TestFindRunConfigFromLog(t *testing.T) {
	dir := t.TempDir()
	ptz, npz := filepath.Join(dir, "r_model.int8.ptz"), filepath.Join(dir, "r_model.npz")
	writeArtifact(t, ptz, 700, true)
	writeArtifact(t, npz, 900, false)
	log := logBlock(128) + `step:4/4 val_loss:5.1000 val_bpb:3.0000 train_time:1ms step_avg:1.00ms
saved_model:` + npz + ` bytes:900
serialized_model_int8_zlib:700 bytes (payload:1 raw_pickle:2 payload_ratio:1.00x)
final_int8_zlib_roundtrip_exact val_loss:5.11111111 val_bpb:3.01111111
` + logBlock(256) + `data:embedded DATA_PATH unset and ./x absent: training on the embedded x dataset (/y)
step:2/2 val_loss:6.2000 val_bpb:3.5000 train_time:1ms step_avg:1.00ms
saved_model:` + npz + ` bytes:901
serialized_model_int8_zlib:800 bytes (payload:1 raw_pickle:2 payload_ratio:1.00x)
final_int8_zlib_roundtrip_exact val_loss:6.22222222 val_bpb:3.52222222
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "r.txt"), []byte(log), 0o644))

	rc, found, _, err := FindRunConfig(ptz)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, filepath.Join(dir, "r.txt"), rc.Source)
	assert.Equal(t, 128, rc.Config.TrainSeqLen, "the block whose int8 artifact had 700 bytes")
	assert.Equal(t, 2048, rc.Config.ValBatchSize)
	assert.Equal(t, 2, rc.Config.GradAccumSteps)
	assert.Equal(t, 15.0, rc.Config.Model.LogitSoftcap)
	assert.Equal(t, 500.0, rc.Config.Model.RopeBase)
	assert.Equal(t, 64, rc.Config.Model.LogitChunkTokens)
	assert.Equal(t, "fp32", rc.Config.DType.String())
	assert.Equal(t, "/d/datasets/x", rc.Config.DataPath)
	assert.Equal(t, "final_int8_zlib_roundtrip_exact val_loss:5.11111111 val_bpb:3.01111111", rc.Score)
	assert.False(t, rc.Embedded)
	assert.Empty(t, rc.Notes)
	assert.Contains(t, rc.CompareScore(5.11111111, 3.01111111), ": the same as this evaluation")
	assert.Contains(t, rc.CompareScore(5.11111112, 3.01111111), "NOT the same")

	rc, found, _, err = FindRunConfig(npz)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, 128, rc.Config.TrainSeqLen, "the block whose .npz had 900 bytes")
	assert.Equal(t, "step:4/4 val_loss:5.1000 val_bpb:3.0000 train_time:1ms step_avg:1.00ms", rc.Score)
	assert.Contains(t, rc.CompareScore(5.10004, 2.99996), ": the same")

	writeArtifact(t, ptz, 800, true)
	rc, _, _, err = FindRunConfig(ptz)
	require.NoError(t, err)
	assert.Equal(t, 256, rc.Config.TrainSeqLen)
	assert.True(t, rc.Embedded, "the block's data:embedded line")
	assert.Equal(t, "final_int8_zlib_roundtrip_exact val_loss:6.22222222 val_bpb:3.52222222", rc.Score)

	writeArtifact(t, ptz, 555, true)
	rc, found, _, err = FindRunConfig(ptz)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, 256, rc.Config.TrainSeqLen, "no size matches: the last block")
	require.Len(t, rc.Notes, 1)
	assert.Contains(t, rc.Notes[0], "800 bytes")
	assert.Contains(t, rc.Notes[0], "555")
}

// TestFindRunConfigSources: an artifact without its run's log, or not
// named after its run, is not found, saying why; an interrupted run's
// artifact has no score; a finished one's score comes from the log; a
// block that lacks what evaluation needs is an error naming the log.
func TestFindRunConfigSources(t *testing.T) {
	dir := t.TempDir()
	ptz := filepath.Join(dir, "s_model.int8.ptz")
	writeArtifact(t, ptz, 100, true)
	_, found, looked, err := FindRunConfig(ptz)
	require.NoError(t, err)
	assert.False(t, found)
	assert.Contains(t, looked, "s.txt: absent")

	other := filepath.Join(dir, "weights.bin")
	writeArtifact(t, other, 100, true)
	_, found, looked, err = FindRunConfig(other)
	require.NoError(t, err)
	assert.False(t, found)
	assert.Contains(t, looked, "weights.bin is not named <run>_model.npz or <run>_model.int8.ptz")

	log := filepath.Join(dir, "s.txt")
	require.NoError(t, os.WriteFile(log, []byte(logBlock(96)+
		"serialized_model_int8_zlib:100 bytes (x)\ninterrupted: SIGINT at step:3/9 state:x\n"), 0o644))
	rc, found, _, err := FindRunConfig(ptz)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, log, rc.Source)
	assert.Equal(t, 96, rc.Config.TrainSeqLen)
	assert.Empty(t, rc.Score, "an interrupted run's artifacts were not validated")

	require.NoError(t, os.WriteFile(log, []byte(logBlock(96)+
		"serialized_model_int8_zlib:100 bytes (x)\nfinal_int8_zlib_roundtrip_exact val_loss:1.00000000 val_bpb:2.00000000\n"), 0o644))
	rc, _, _, err = FindRunConfig(ptz)
	require.NoError(t, err)
	assert.Equal(t, "final_int8_zlib_roundtrip_exact val_loss:1.00000000 val_bpb:2.00000000", rc.Score, "the score from the log")

	require.NoError(t, os.WriteFile(log, []byte("configuration:\n{\n  \"TrainSeqLen\": 64\n}\nserialized_model_int8_zlib:100 bytes (x)\n"), 0o644))
	_, _, _, err = FindRunConfig(ptz)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "s.txt")
	assert.Contains(t, err.Error(), "ValBatchSize")

	require.NoError(t, os.WriteFile(log, []byte(logBlock(96)+"serialized_model_int8_zlib:100 bytes (x)\n"), 0o644))
	_, err = ReadRunConfig(filepath.Join(dir, "s.txt"), ptz)
	require.NoError(t, err, "--run-config names the log")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello\n"), 0o644))
	_, err = ReadRunConfig(filepath.Join(dir, "notes.txt"), ptz)
	assert.ErrorContains(t, err, "notes.txt holds no run configuration")
}

// TestUseRunData: eval reads the data the run recorded, as given (a path
// that is gone is an error naming the path and the file it came from, not
// a silent switch to the embedded data set), except for a run on the
// embedded data set, which gets it extracted again.
func TestUseRunData(t *testing.T) {
	dp, tp := embeddedData(t)
	rc := RunConfig{Source: "runs/r.txt", Config: Defaults()}
	rc.Config.DataPath, rc.Config.TokenizerPath = dp, tp
	cfg := rc.Config
	note, err := UseRunData(&cfg, rc, false, false)
	require.NoError(t, err)
	assert.Empty(t, note)
	assert.True(t, cfg.DataPathSet && cfg.TokenizerPathSet, "taken as given")

	cfg = rc.Config
	cfg.DataPath = "data/datasets/fineweb10B_sp1024"
	_, err = UseRunData(&cfg, rc, false, false)
	require.Error(t, err)
	for _, w := range []string{"DATA_PATH data/datasets/fineweb10B_sp1024", "runs/r.txt", "relative", "--data-path"} {
		assert.Contains(t, err.Error(), w)
	}
	_, err = UseRunData(&cfg, rc, true, false)
	assert.NoError(t, err, "a --data-path given is the user's to check")

	rc.Embedded = true
	cfg = rc.Config
	cfg.DataPath = filepath.Join(t.TempDir(), "embedded-0123456789abcdef", "datasets", "brown_sp1024")
	cfg.TokenizerPath = filepath.Join(filepath.Dir(filepath.Dir(cfg.DataPath)), "tokenizers", "brown_1024_bpe.model")
	note, err = UseRunData(&cfg, rc, false, false)
	require.NoError(t, err)
	assert.Contains(t, note, "is gone")
	assert.DirExists(t, cfg.DataPath)
	assert.FileExists(t, cfg.TokenizerPath)
}

// TestEvaluateReproducesTheRun: a run at TRAIN_SEQ_LEN 64 (not the
// default 1024) and its own validation batches; the configuration found
// beside its int8 artifact evaluates it to the run's final round-trip
// loss and bits per byte, bit for bit.
func TestEvaluateReproducesTheRun(t *testing.T) {
	dp, tp := embeddedData(t)
	cfg := planConfigs(dp, tp)["tiny"]
	cfg.TrainSeqLen, cfg.ValBatchSize, cfg.TrainBatchTokens, cfg.MaxMicrobatchTokens = 64, 3*640, 1280, 640
	cfg.Iterations, cfg.WarmupSteps = 2, 0
	cfg.DataPathSet, cfg.TokenizerPathSet = false, false // as a run on the embedded set logs its paths
	cfg.OutDir = t.TempDir()
	res, err := Run(context.Background(), cfg, cpu.New(), nil)
	require.NoError(t, err)

	rc, found, _, err := FindRunConfig(res.QuantPath)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, res.LogPath, rc.Source)
	assert.Equal(t, 64, rc.Config.TrainSeqLen)
	assert.Equal(t, fmt.Sprintf("final_int8_zlib_roundtrip_exact val_loss:%.8f val_bpb:%.8f", res.QValLoss, res.QValBPB), rc.Score)
	ev := rc.Config
	_, err = UseRunData(&ev, rc, false, false)
	require.NoError(t, err)
	loss, bpb, err := Evaluate(context.Background(), ev, ShapeFlags{}, cpu.New(), res.QuantPath, nil)
	require.NoError(t, err)
	assert.Equal(t, math.Float64bits(res.QValLoss), math.Float64bits(loss), "val_loss %v against the run's %v", loss, res.QValLoss)
	assert.Equal(t, math.Float64bits(res.QValBPB), math.Float64bits(bpb), "val_bpb %v against the run's %v", bpb, res.QValBPB)
}

// TestNotAModelFile: a file that is neither a zip archive nor zlib data is
// refused by its content, saying which files golf eval reads (and, for a
// run's log, which artifact is its run's), whatever its name.
func TestNotAModelFile(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "run.txt")
	require.NoError(t, os.WriteFile(log, []byte("step:1/2 train_loss:6.9\n"), 0o644))
	for _, p := range []string{log, filepath.Join(dir, "fake.int8.ptz"), filepath.Join(dir, "fake.npz")} {
		if p != log {
			require.NoError(t, os.WriteFile(p, []byte("step:1/2 train_loss:6.9\n"), 0o644))
		}
		for _, f := range []func() error{
			func() error { _, err := ArtifactShapes(p); return err },
			func() error { _, err := LoadArtifact(p); return err },
			func() error { return CheckModelFile(p) },
		} {
			err := f()
			require.Error(t, err, p)
			for _, w := range []string{p + " is not a model file", "not a zip archive", `starts with "step:1/2 train_`, "_model.npz", "_model.int8.ptz"} {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "invalid header")
		}
	}
	writeArtifact(t, filepath.Join(dir, "run_model.int8.ptz"), 10, true)
	assert.ErrorContains(t, CheckModelFile(log), "for the run this log belongs to, evaluate "+filepath.Join(dir, "run_model.int8.ptz"))
	empty := filepath.Join(dir, "empty.npz")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	assert.ErrorContains(t, CheckModelFile(empty), "empty.npz is not a model file: not zlib data (an int8 container) and not a zip archive (a raw .npz); it is empty")
	assert.ErrorContains(t, CheckModelFile(dir), "is not a model file but a directory")
	assert.NoError(t, CheckModelFile(filepath.Join(dir, "run_model.int8.ptz")))
}

// TestFindRunConfigResumed: a resumed process logs the changes to the
// checkpoint's configuration instead of a whole block (and the dtype by
// name); the artifact it published is evaluated with the changed values.
func TestFindRunConfigResumed(t *testing.T) {
	dir := t.TempDir()
	ptz := filepath.Join(dir, "r_model.int8.ptz")
	writeArtifact(t, ptz, 800, true)
	block := strings.Replace(logBlock(128), `"DType": 0`, `"DType": "bf16"`, 1)
	log := block + `step:6/9 train_loss:6.1 train_time:1ms step_avg:1.00ms
serialized_model_int8_zlib:700 bytes (payload:1 raw_pickle:2 payload_ratio:1.00x)
interrupted: test signal at step:6/9 state:x
configuration: resumed; changed since the checkpoint (x):
  Checkpoint.Resume: "" → "latest"
  Model.LogitChunkTokens: 64 → 0
  ValBatchSize: 2048 → 4096
====================================================================================================
serialized_model_int8_zlib:800 bytes (payload:1 raw_pickle:2 payload_ratio:1.00x)
final_int8_zlib_roundtrip_exact val_loss:6.22222222 val_bpb:3.52222222
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "r.txt"), []byte(log), 0o644))
	rc, found, _, err := FindRunConfig(ptz)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, 128, rc.Config.TrainSeqLen)
	assert.Equal(t, 4096, rc.Config.ValBatchSize, "as changed on resuming")
	assert.Equal(t, 0, rc.Config.Model.LogitChunkTokens, "as changed on resuming")
	assert.Equal(t, 15.0, rc.Config.Model.LogitSoftcap, "kept from the first block")
	assert.Equal(t, "bf16", rc.Config.DType.String())
	assert.Equal(t, "final_int8_zlib_roundtrip_exact val_loss:6.22222222 val_bpb:3.52222222", rc.Score)

	writeArtifact(t, ptz, 700, true)
	rc, _, _, err = FindRunConfig(ptz)
	require.NoError(t, err)
	assert.Equal(t, 2048, rc.Config.ValBatchSize, "the interrupted process's artifact")
	assert.Empty(t, rc.Score, "not validated")
}

// TestEvaluateReproducesResumedRun: a run interrupted and resumed with
// another VAL_BATCH_SIZE (which a resume may change) is evaluated, from
// its log alone, with the batches its final validation used: the same
// numbers bit for bit.
func TestEvaluateReproducesResumedRun(t *testing.T) {
	cfg := resumeConfig(t, backend.F32)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	_, err := Run(ctx, cfg, cpu.New(), &stopAfterLine{prefix: []byte("step:6/"), cancel: cancel})
	var ie *Interrupted
	require.ErrorAs(t, err, &ie)
	cfg.Checkpoint.Resume = "latest"
	cfg.ValBatchSize = 2 * 1024 // 32 sequences a batch instead of 128: the split's 1,743 end in a shorter batch
	res, err := Run(context.Background(), cfg, cpu.New(), nil)
	require.NoError(t, err)

	rc, found, _, err := FindRunConfig(res.QuantPath)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, 2048, rc.Config.ValBatchSize)
	ev := rc.Config
	_, err = UseRunData(&ev, rc, false, false)
	require.NoError(t, err)
	loss, bpb, err := Evaluate(context.Background(), ev, ShapeFlags{}, cpu.New(), res.QuantPath, nil)
	require.NoError(t, err)
	assert.Equal(t, math.Float64bits(res.QValLoss), math.Float64bits(loss), "val_loss %v against the run's %v", loss, res.QValLoss)
	assert.Equal(t, math.Float64bits(res.QValBPB), math.Float64bits(bpb), "val_bpb %v against the run's %v", bpb, res.QValBPB)
}

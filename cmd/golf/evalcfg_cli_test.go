package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEvalTakesTheRunsConfiguration: golf eval of a run's artifact, with
// no flags, evaluates with the run's configuration (here TRAIN_SEQ_LEN 64
// and VAL_BATCH_SIZE 1536, not the defaults 1024 and 524288), says which
// file it came from, and prints the run's final score bit for bit. A flag
// given overrides the run's value with a note; an artifact away from its
// run's files is evaluated with the defaults under a warning.
func TestEvalTakesTheRunsConfiguration(t *testing.T) {
	dp, tp := dataset(t)
	out := filepath.Join(t.TempDir(), "runs")
	code, train := golf(t, nil, "train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", out, "--backend", "cpu",
		"--run-id", "tm1", "--num-layers", "1", "--model-dim", "32", "--num-heads", "2", "--num-kv-heads", "1",
		"--train-seq-len", "64", "--train-batch-tokens", "512", "--grad-accum-steps", "1", "--val-batch-size", "1536",
		"--iterations", "2", "--warmup-steps", "0")
	require.Equal(t, 0, code, train)
	final := strings.TrimPrefix(lineWith(train, "final_int8_zlib_roundtrip_exact "), "final_int8_zlib_roundtrip_exact ")
	require.NotEmpty(t, final, train)
	want := "val_loss_exact:" + strings.Replace(strings.TrimPrefix(final, "val_loss:"), " val_bpb:", " val_bpb_exact:", 1)
	ptz := filepath.Join(out, "tm1_model.int8.ptz")

	code, ev := golf(t, nil, "eval", ptz)
	require.Equal(t, 0, code, ev)
	assert.Equal(t, want, lineWith(ev, "val_loss_exact:"), "golf eval with no flags against the run's final line\n%s", ev)
	cfgLine := lineWith(ev, "config: ")
	for _, w := range []string{filepath.Join(out, "tm1.txt"), "TRAIN_SEQ_LEN=64 ", "VAL_BATCH_SIZE=1536 ", "GRAD_ACCUM_STEPS=1 ",
		"(validation batches of 1536 tokens)", "COMPUTE_DTYPE=bf16", "GOLF_BACKEND=cpu", "DATA_PATH=" + dp, "TOKENIZER_PATH=" + tp} {
		assert.Contains(t, cfgLine, w)
	}
	assert.Contains(t, ev, "run_score: final_int8_zlib_roundtrip_exact "+final)
	assert.Contains(t, ev, ": the same as this evaluation")
	assert.NotContains(t, ev, "WARNING")

	code, ev = golf(t, []string{"TRAIN_SEQ_LEN=32"}, "eval", ptz)
	require.Equal(t, 0, code, ev)
	assert.Contains(t, ev, "config: --train-seq-len (TRAIN_SEQ_LEN) 32 overrides the run's 64: the score is not the run's")
	assert.NotEqual(t, want, lineWith(ev, "val_loss_exact:"))
	assert.Contains(t, ev, "NOT the same as this evaluation")

	away := filepath.Join(t.TempDir(), "model.int8.ptz")
	raw, err := os.ReadFile(ptz)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(away, raw, 0o644))
	code, ev = golf(t, nil, "eval", "--data-path", dp, "--tokenizer-path", tp, "--backend", "cpu", away)
	require.Equal(t, 0, code, ev)
	assert.Contains(t, ev, "WARNING: no configuration of the run that wrote "+away)
	assert.Contains(t, lineWith(ev, "config: "), "the reference's defaults and the flags given: TRAIN_SEQ_LEN=1024 ")
	code, ev = golf(t, nil, "eval", "--run-config", filepath.Join(out, "tm1.txt"), away)
	require.Equal(t, 0, code, ev)
	assert.Equal(t, want, lineWith(ev, "val_loss_exact:"), "--run-config names the run's log")
}

// TestEvalHelpAndFlags: golf eval --help lists the flags an evaluation
// uses and none that only training does; a training flag given to eval is
// refused, saying why.
func TestEvalHelpAndFlags(t *testing.T) {
	code, help := golf(t, nil, "eval", "--help")
	require.Equal(t, 0, code, help)
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(--[a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		listed = append(listed, m[1])
	}
	t.Logf("golf eval --help lists %v", listed)
	for _, f := range []string{"--iterations", "--matrix-lr", "--warmup-steps", "--seed", "--train-batch-tokens", "--max-microbatch-tokens",
		"--out-dir", "--run-id", "--smoke", "--loss-scale", "--qk-gain-init", "--beta1", "--grad-clip-norm", "--checkpoint-every", "--seeds"} {
		assert.NotContains(t, listed, f, "eval --help lists the training flag %s", f)
	}
	for _, f := range []string{"--data-path", "--tokenizer-path", "--train-seq-len", "--val-batch-size", "--grad-accum-steps",
		"--logit-chunk-tokens", "--logit-softcap", "--rope-base", "--dtype", "--backend", "--num-layers", "--run-config"} {
		assert.Contains(t, listed, f, "eval --help lacks %s", f)
	}
	assert.Contains(t, help, "(default: the run's)")

	code, out := golf(t, nil, "eval", "--iterations", "5", "model.npz")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "--iterations is a training flag, which golf eval does not take")
}

// TestEvalNotAModelFile: golf eval of a log (or any file that is neither
// an .npz nor an int8 container) says that it is not a model file and
// which files are, not a zlib error.
func TestEvalNotAModelFile(t *testing.T) {
	dir := t.TempDir()
	x := filepath.Join(dir, "x.txt")
	require.NoError(t, os.WriteFile(x, []byte("step:1/2 train_loss:6.9351\n"), 0o644))
	code, out := golf(t, nil, "eval", x)
	assert.Equal(t, 1, code, out)
	for _, w := range []string{x + " is not a model file", "_model.npz", "_model.int8.ptz"} {
		assert.Contains(t, out, w)
	}
	assert.NotContains(t, out, "invalid header")
	assert.NotContains(t, out, "WARNING", "the file is refused before any configuration is looked for")
}

package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golf-ml/golf/data"
)

// TestMain lets the tests run this binary as the golf command, so exit
// codes and messages are checked exactly as a user sees them.
func TestMain(m *testing.M) {
	if os.Getenv("GOLF_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// golf runs the command with args and returns its exit code and output.
func golf(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "GOLF_TEST_MAIN=1"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

var tinyFlags = []string{
	"--num-layers", "1", "--model-dim", "32", "--num-heads", "2", "--num-kv-heads", "1",
	"--train-seq-len", "32", "--train-batch-tokens", "256", "--grad-accum-steps", "1",
	"--val-batch-size", "1024", "--iterations", "1", "--warmup-steps", "0",
}

// dataset copies the embedded data set into a fresh directory and returns
// its DATA_PATH and TOKENIZER_PATH.
func dataset(t *testing.T) (string, string) {
	t.Helper()
	src, tok, err := data.ExtractEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	srcRoot := filepath.Dir(filepath.Dir(src))
	err = filepath.Walk(srcRoot, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(srcRoot, p)
		dst := filepath.Join(root, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	relTok, _ := filepath.Rel(srcRoot, tok)
	return filepath.Join(root, "datasets", data.EmbeddedDataset), filepath.Join(root, relTok)
}

func TestBadInput(t *testing.T) {
	type tc struct {
		name  string
		setup func(t *testing.T, dataPath, tokPath, outDir string) []string // extra args
		env   []string
		want  string // substring of the error
	}
	trainShard := func(dp string) string { return filepath.Join(dp, "fineweb_train_000000.bin") }
	valShard := func(dp string) string { return filepath.Join(dp, "fineweb_val_000000.bin") }
	none := func(t *testing.T, dp, tp, out string) []string { return nil }
	flag := func(args ...string) func(*testing.T, string, string, string) []string {
		return func(*testing.T, string, string, string) []string { return args }
	}
	cases := []tc{
		{"truncated shard", func(t *testing.T, dp, tp, out string) []string {
			must(t, os.Truncate(trainShard(dp), 1000))
			return nil
		}, nil, "fineweb_train_000000.bin"},
		{"truncated header", func(t *testing.T, dp, tp, out string) []string {
			must(t, os.Truncate(valShard(dp), 100))
			return nil
		}, nil, "fineweb_val_000000.bin"},
		{"wrong magic", func(t *testing.T, dp, tp, out string) []string {
			patch(t, valShard(dp), 0, 20240521)
			return nil
		}, nil, "fineweb_val_000000.bin: unexpected shard header"},
		{"wrong version", func(t *testing.T, dp, tp, out string) []string {
			patch(t, trainShard(dp), 4, 2)
			return nil
		}, nil, "fineweb_train_000000.bin: unexpected shard header"},
		{"size mismatch", func(t *testing.T, dp, tp, out string) []string {
			f, err := os.OpenFile(trainShard(dp), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = f.Write([]byte{1, 2})
			must(t, err)
			must(t, f.Close())
			return nil
		}, nil, "size mismatch"},
		{"missing val files", func(t *testing.T, dp, tp, out string) []string {
			must(t, os.Remove(valShard(dp)))
			return nil
		}, nil, "fineweb_val_*.bin"},
		{"missing train files", func(t *testing.T, dp, tp, out string) []string {
			must(t, os.Remove(trainShard(dp)))
			return nil
		}, nil, "fineweb_train_*.bin"},
		{"missing tokenizer", func(t *testing.T, dp, tp, out string) []string {
			must(t, os.Remove(tp))
			return nil
		}, nil, "brown_1024_bpe.model"},
		{"tokenizer not a .model", flag("--tokenizer-path", "tok.vocab"), nil, "TOKENIZER_PATH must point to a SentencePiece .model file: tok.vocab"},
		{"tokenizer vocab mismatch", flag("--vocab-size", "512"), nil, "VOCAB_SIZE=512 does not match tokenizer vocab_size=1024"},
		{"wrong tokenizer for the shards", func(t *testing.T, dp, tp, out string) []string {
			other := filepath.Join(filepath.Dir(tp), "other.model")
			b, err := os.ReadFile(tp)
			must(t, err)
			must(t, os.WriteFile(other, b, 0o644))
			return []string{"--tokenizer-path", other}
		}, nil, "brown_sp1024 expects tokenizer brown_1024_bpe.model, got other.model"},
		{"manifest: more shards than listed", func(t *testing.T, dp, tp, out string) []string {
			b, err := os.ReadFile(trainShard(dp))
			must(t, err)
			must(t, os.WriteFile(filepath.Join(dp, "fineweb_train_000001.bin"), b, 0o644))
			return nil
		}, nil, "has more train shards than expected: found 2, manifest says 1"},
		{"unwritable OUT_DIR", func(t *testing.T, dp, tp, out string) []string {
			blocker := filepath.Join(filepath.Dir(out), "file")
			must(t, os.WriteFile(blocker, nil, 0o644))
			return []string{"--out-dir", filepath.Join(blocker, "sub")}
		}, nil, "OUT_DIR"},
		{"dim not divisible by heads", flag("--model-dim", "34", "--num-heads", "4"), nil, "MODEL_DIM=34 must be divisible by NUM_HEADS=4"},
		{"odd head dim", flag("--model-dim", "36", "--num-heads", "4", "--num-kv-heads", "2"), nil, "must be even for RoPE"},
		{"heads not divisible by kv heads", flag("--num-heads", "4", "--num-kv-heads", "3"), nil, "NUM_HEADS=4 must be divisible by NUM_KV_HEADS=3"},
		{"softcap not positive", flag("--logit-softcap", "0"), nil, "LOGIT_SOFTCAP must be positive"},
		{"batch smaller than a sequence", flag("--train-batch-tokens", "16"), nil, "smaller than one sequence (TRAIN_SEQ_LEN=32)"},
		{"val batch smaller than a sequence", flag("--val-batch-size", "16"), nil, "VAL_BATCH_SIZE must provide at least one sequence"},
		{"unknown dtype", flag("--dtype", "fp8"), nil, `--dtype (COMPUTE_DTYPE): unknown dtype "fp8"`},
		{"unknown dtype from env", none, []string{"COMPUTE_DTYPE=int4"}, `unknown dtype "int4"`},
		{"unknown backend", flag("--backend", "tpu"), nil, "--backend must be auto, cpu, metal or cuda"},
		{"backend not built", flag("--backend", "metal"), nil, "--backend metal: not built into this binary"},
		{"negative loss scale", flag("--loss-scale", "-1"), nil, "LOSS_SCALE must be a finite number >= 0, got -1"},
		{"malformed integer", flag("--iterations", "ten"), nil, "iterations"},
		{"malformed env integer", none, []string{"ITERATIONS=1e3x"}, "ITERATIONS"},
		{"invalid value from an env alias", none, []string{"MLX_MAX_MICROBATCH_TOKENS=0"}, "MAX_MICROBATCH_TOKENS must be in [1, 2147483647], got 0"},
		{"untied embeddings", flag("--tie-embeddings=false"), nil, "only tied embeddings are supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dp, tp := dataset(t)
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", out, "--backend", "cpu"}, tinyFlags...)
			args = append(args, c.setup(t, dp, tp, out)...)
			code, output := golf(t, c.env, args...)
			if code == 0 {
				t.Fatalf("exit code 0, want non-zero; output:\n%s", output)
			}
			if !strings.Contains(output, c.want) {
				t.Fatalf("output does not name %q:\n%s", c.want, output)
			}
			if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
				t.Fatalf("OUT_DIR has files after a rejected run: %v", entries)
			}
		})
	}
}

// patch overwrites the little-endian int32 at byte offset off of path.
func patch(t *testing.T, path string, off int64, v int32) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(v))
	_, err = f.WriteAt(b[:], off)
	must(t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestTrainAndEvalCLI(t *testing.T) {
	dp, tp := dataset(t)
	out := filepath.Join(t.TempDir(), "out")
	args := append([]string{"train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", out,
		"--backend", "cpu", "--run-id", "cli"}, tinyFlags...)
	code, output := golf(t, nil, args...)
	if code != 0 {
		t.Fatalf("train exit %d:\n%s", code, output)
	}
	final := lineWith(output, "final_int8_zlib_roundtrip_exact ")
	if final == "" {
		t.Fatalf("no final_int8_zlib_roundtrip_exact line:\n%s", output)
	}
	// golf eval of the int8 artifact reproduces the run's round-trip numbers.
	evalArgs := append([]string{"eval", "--data-path", dp, "--tokenizer-path", tp, "--backend", "cpu"}, tinyFlags...)
	evalArgs = append(evalArgs, filepath.Join(out, "cli_model.int8.ptz"))
	code, evalOut := golf(t, nil, evalArgs...)
	if code != 0 {
		t.Fatalf("eval exit %d:\n%s", code, evalOut)
	}
	got := strings.TrimPrefix(lineWith(evalOut, "val_loss_exact:"), "val_loss_exact:")
	want := strings.TrimPrefix(final, "final_int8_zlib_roundtrip_exact val_loss:")
	want = strings.Replace(want, " val_bpb:", " val_bpb_exact:", 1)
	if got != want {
		t.Fatalf("golf eval: %q, training run: %q", got, want)
	}
}

func lineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestInfo(t *testing.T) {
	code, out := golf(t, nil, "info", "--dtype", "fp16")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"precision policy for --dtype fp16", "dynamic: 2^16", "17059912 parameters", "peak"} {
		if !strings.Contains(out, want) {
			t.Errorf("info output lacks %q:\n%s", want, out)
		}
	}
}

package main

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/artifact"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/internal/racebuild"
)

// TestMain lets the tests run this binary as the golf command, so exit
// codes and messages are checked exactly as a user sees them.
// With GOLF_TEST_MAX_DATA=n the command runs under an RLIMIT_DATA of n
// bytes, so a check that failed to refuse an absurd size ends in the Go
// runtime's out-of-memory error instead of exhausting the machine. The
// modes of rss_test.go (a wrapper measuring a child's own peak memory,
// a child of known size) come first.
func TestMain(m *testing.M) {
	if code, ok := rssMode(); ok {
		os.Exit(code)
	}
	if os.Getenv("GOLF_TEST_MAIN") == "1" {
		if v := os.Getenv("GOLF_TEST_MAX_DATA"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err == nil {
				err = syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: n, Max: n})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "GOLF_TEST_MAX_DATA:", err)
				os.Exit(3)
			}
		}
		main()
		os.Exit(0)
	}
	code := m.Run()
	if path := os.Getenv("GOLF_RELIABILITY_DOC"); path != "" && code == 0 {
		if err := writeReliabilityDoc(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// golf runs the command with args and returns its exit code and output.
func golf(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	code, out, _ := golfRSS(t, env, args...)
	return code, out
}

// golfRSS is golf that also returns the command's own peak resident
// memory in bytes, so a test can show that a refused input allocated
// nothing of the size it asked for. The command runs under the wrapper of
// rss_test.go, so the figure is its own ru_maxrss, not the test process's
// peak that the kernel folds into a directly started child's.
func golfRSS(t *testing.T, env []string, args ...string) (int, string, int64) {
	t.Helper()
	r := runRSS(t, append([]string{"GOLF_TEST_MAIN=1"}, env...), args...)
	return r.code, r.out, r.maxrss
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
	require.NoError(t, err)
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
	require.NoError(t, err)
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
			require.NoError(t, os.Truncate(trainShard(dp), 1000))
			return nil
		}, nil, "fineweb_train_000000.bin"},
		{"truncated header", func(t *testing.T, dp, tp, out string) []string {
			require.NoError(t, os.Truncate(valShard(dp), 100))
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
			require.NoError(t, err)
			_, err = f.Write([]byte{1, 2})
			require.NoError(t, err)
			require.NoError(t, f.Close())
			return nil
		}, nil, "size mismatch"},
		{"missing val files", func(t *testing.T, dp, tp, out string) []string {
			require.NoError(t, os.Remove(valShard(dp)))
			return nil
		}, nil, "fineweb_val_*.bin"},
		{"missing train files", func(t *testing.T, dp, tp, out string) []string {
			require.NoError(t, os.Remove(trainShard(dp)))
			return nil
		}, nil, "fineweb_train_*.bin"},
		{"missing tokenizer", func(t *testing.T, dp, tp, out string) []string {
			require.NoError(t, os.Remove(tp))
			return nil
		}, nil, "brown_1024_bpe.model"},
		{"tokenizer not a .model", flag("--tokenizer-path", "tok.vocab"), nil, "TOKENIZER_PATH must point to a SentencePiece .model file: tok.vocab"},
		{"tokenizer vocab mismatch", flag("--vocab-size", "512"), nil, "VOCAB_SIZE=512 does not match tokenizer vocab_size=1024"},
		{"wrong tokenizer for the shards", func(t *testing.T, dp, tp, out string) []string {
			other := filepath.Join(filepath.Dir(tp), "other.model")
			b, err := os.ReadFile(tp)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(other, b, 0o644))
			return []string{"--tokenizer-path", other}
		}, nil, "brown_sp1024 expects tokenizer brown_1024_bpe.model, got other.model"},
		{"manifest: more shards than listed", func(t *testing.T, dp, tp, out string) []string {
			b, err := os.ReadFile(trainShard(dp))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dp, "fineweb_train_000001.bin"), b, 0o644))
			return nil
		}, nil, "has more train shards than expected: found 2, manifest says 1"},
		{"unwritable OUT_DIR", func(t *testing.T, dp, tp, out string) []string {
			blocker := filepath.Join(filepath.Dir(out), "file")
			require.NoError(t, os.WriteFile(blocker, nil, 0o644))
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

		// Non-finite and out-of-range numbers, one of each kind of variable
		// (learning rates, betas, epsilon, momenta, clip norm, wall clock,
		// loss scale, softcap, RoPE base, initialisation), by flag and by env.
		{"NaN learning rate", flag("--matrix-lr", "NaN"), nil, "MATRIX_LR must be a finite number >= 0, got NaN"},
		{"infinite learning rate from env", none, []string{"TIED_EMBED_LR=Inf"}, "TIED_EMBED_LR must be a finite number >= 0, got +Inf"},
		{"negative learning rate", flag("--scalar-lr", "-0.01"), nil, "SCALAR_LR must be a finite number >= 0, got -0.01"},
		{"learning rate over float32", flag("--matrix-lr", "1e39"), nil, "MATRIX_LR must be a finite number >= 0 (as float32), got 1e+39 (float32: +Inf)"},
		{"beta1 of one", flag("--beta1", "1"), nil, "BETA1 must be in [0, 1), got 1"},
		{"negative beta2 from env", none, []string{"BETA2=-0.5"}, "BETA2 must be in [0, 1), got -0.5"},
		{"beta2 one in float32", flag("--beta2", "0.99999999999"), nil, "BETA2 must be in [0, 1) (as float32), got 0.99999999999 (float32: 1)"},
		{"NaN beta1", flag("--beta1", "nan"), nil, "BETA1 must be in [0, 1), got NaN"},
		{"zero epsilon", flag("--adam-eps", "0"), nil, "ADAM_EPS must be a finite number > 0, got 0"},
		{"epsilon zero in float32", none, []string{"ADAM_EPS=1e-50"}, "ADAM_EPS must be a finite number > 0 (as float32), got 1e-50 (float32: 0)"},
		{"momentum above one", flag("--muon-momentum", "1.5"), nil, "MUON_MOMENTUM must be in [0, 1), got 1.5"},
		{"NaN momentum warm-up start", none, []string{"MUON_MOMENTUM_WARMUP_START=NaN"}, "MUON_MOMENTUM_WARMUP_START must be in [0, 1), got NaN"},
		{"negative clip norm", flag("--grad-clip-norm", "-1"), nil, "GRAD_CLIP_NORM must be a finite number >= 0, got -1"},
		{"infinite clip norm", flag("--grad-clip-norm", "+Inf"), nil, "GRAD_CLIP_NORM must be a finite number >= 0, got +Inf"},
		{"negative wall clock", flag("--max-wallclock-seconds", "-5"), nil, "MAX_WALLCLOCK_SECONDS must be a finite number >= 0, got -5"},
		{"NaN wall clock from env", none, []string{"MAX_WALLCLOCK_SECONDS=NaN"}, "MAX_WALLCLOCK_SECONDS must be a finite number >= 0, got NaN"},
		{"infinite wall clock", flag("--max-wallclock-seconds", "Inf"), nil, "MAX_WALLCLOCK_SECONDS must be a finite number >= 0, got +Inf"},
		{"infinite loss scale", flag("--loss-scale", "inf"), nil, "LOSS_SCALE must be a finite number >= 0, got +Inf"},
		{"NaN softcap", flag("--logit-softcap", "NaN"), nil, "LOGIT_SOFTCAP must be a finite number (as float32), got NaN"},
		{"negative RoPE base", flag("--rope-base", "-10000"), nil, "ROPE_BASE must be positive, got -10000"},
		{"RoPE base over float32", none, []string{"ROPE_BASE=1e39"}, "ROPE_BASE must be a finite number (as float32), got 1e+39"},
		{"infinite q gain", flag("--qk-gain-init", "-Inf"), nil, "QK_GAIN_INIT must be a finite number (as float32), got -Inf"},
		{"negative init std", flag("--tied-embed-init-std", "-0.005"), nil, "TIED_EMBED_INIT_STD must be >= 0, got -0.005"},

		// Integers below and above their ranges.
		{"negative iterations", flag("--iterations", "-1"), nil, "ITERATIONS must be in [0, 2147483647], got -1"},
		{"negative seed", flag("--seed", "-7"), nil, "SEED must be in [0, 9223372036854775807], got -7"},
		{"negative warm-down", none, []string{"WARMDOWN_ITERS=-1"}, "WARMDOWN_ITERS must be in [0, 2147483647], got -1"},
		{"negative muon steps", flag("--muon-backend-steps", "-1"), nil, "MUON_BACKEND_STEPS must be in [0, 2147483647], got -1"},
		{"zero grad accumulation", flag("--grad-accum-steps", "0"), nil, "GRAD_ACCUM_STEPS must be in [1, 2147483647], got 0"},
		{"zero sequence length", flag("--train-seq-len", "0"), nil, "TRAIN_SEQ_LEN must be in [1, 16777216], got 0"},
		{"sequence past RoPE's float32 positions", flag("--train-seq-len", "33554432"), nil, "TRAIN_SEQ_LEN must be in [1, 16777216], got 33554432"},
		{"vocab past uint16 tokens", flag("--vocab-size", "70000"), nil, "VOCAB_SIZE must be at most 65536 (shards store token ids as uint16), got 70000"},
		{"zero layers", flag("--num-layers", "0"), nil, "NUM_LAYERS must be positive and at most 2147483647, got 0"},
		{"negative logit chunk", flag("--logit-chunk-tokens", "-1"), nil, "LOGIT_CHUNK_TOKENS must be in [0, 2147483647], got -1"},
		{"2^40 batch tokens", flag("--train-batch-tokens", "1099511627776"), nil, "TRAIN_BATCH_TOKENS must be in [1, 2147483647], got 1099511627776"},
		{"2^40 microbatch cap from env", none, []string{"MAX_MICROBATCH_TOKENS=1099511627776"}, "MAX_MICROBATCH_TOKENS must be in [1, 2147483647], got 1099511627776"},
		{"logits over 2^31 elements", flag("--train-batch-tokens", "4194304", "--max-microbatch-tokens", "4194304"), nil,
			"needs a (4194304, 1024) logits tensor of 4294967296 elements, more than 2147483647: set LOGIT_CHUNK_TOKENS"},

		// Sizes no machine holds: refused from the shapes before anything is
		// allocated, with the numbers.
		{"absurd activations", flag("--num-layers", "1000", "--model-dim", "512", "--num-heads", "8", "--num-kv-heads", "4",
			"--train-seq-len", "1024", "--train-batch-tokens", "1048576", "--max-microbatch-tokens", "1048576", "--val-batch-size", "1048576"), nil,
			"training activations 15.1 TiB"}, // 2 bytes · 1000 layers · 2^20 tokens · (10·512 + 3·256 + 2·1024)
		{"absurd layer count", flag("--num-layers", "100000000", "--model-dim", "4", "--num-heads", "2", "--num-kv-heads", "1"), nil,
			"tensor bookkeeping 476.8 GiB"},

		// Set but empty.
		{"empty integer env", none, []string{"ITERATIONS="}, "ITERATIONS is set but empty"},
		{"empty float env", none, []string{"MATRIX_LR="}, "MATRIX_LR is set but empty"},
		{"blank env", none, []string{"OUT_DIR=  "}, "OUT_DIR is set but empty"},
		{"blank integer env", none, []string{"TRAIN_SEQ_LEN=  "}, `as int value from environment variable "TRAIN_SEQ_LEN"`},
		{"empty RUN_ID env", none, []string{"RUN_ID="}, "RUN_ID is set but empty"},
		{"empty pattern list env", none, []string{"CONTROL_TENSOR_NAME_PATTERNS="}, `CONTROL_TENSOR_NAME_PATTERNS is set but empty: unset it for the default of --control-tensor-name-patterns, or give a value; write "," for no patterns`},
		{"empty run id flag", flag("--run-id", ""), nil, "--run-id (RUN_ID) must not be empty"},

		// Names that would write outside OUT_DIR.
		{"RUN_ID climbing out", flag("--run-id", "../x"), nil, `RUN_ID="../x" is not a plain file name`},
		{"RUN_ID with a separator", flag("--run-id", "a/b"), nil, `RUN_ID="a/b" is not a plain file name`},
		{"hidden RUN_ID from env", none, []string{"RUN_ID=.x"}, `RUN_ID=".x" is not a plain file name`},
		{"absolute RUN_ID", flag("--run-id", "/tmp/x"), nil, `RUN_ID="/tmp/x" is not a plain file name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dp, tp := dataset(t)
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", out, "--backend", "cpu"}, tinyFlags...)
			args = append(args, c.setup(t, dp, tp, out)...)
			code, output, rss := golfRSS(t, append(c.env, refusalLimit), args...)
			recordRefusal(t, "train", c.name, elide(args, len(tinyFlags)+9), c.env, code, output,
				map[string]string{dp: "$DATA", tp: "$TOK", out: "$OUT", filepath.Dir(filepath.Dir(dp)): "$DATA/.."}, describeDir(out))
			assert.Equal(t, 1, code, "exit code; output:\n%s", output)
			assert.Contains(t, output, c.want)
			assertRefusalRSS(t, rss)
			assertNothingWritten(t, out)
		})
	}
}

// maxRefusalRSS bounds the peak memory of a command that refuses its
// input: the Go runtime, the embedded data and the tokenizer, never what
// the input asks for (terabytes for the absurd sizes above).
const maxRefusalRSS = 256 << 20

// assertRefusalRSS checks a refused run's peak memory against
// maxRefusalRSS; under the race detector, whose shadow memory alone takes
// several times that, it only logs it.
func assertRefusalRSS(t *testing.T, rss int64) {
	t.Helper()
	if racebuild.Enabled {
		t.Logf("peak memory %d bytes, not bounded under the race detector", rss)
		return
	}
	assert.Less(t, rss, int64(maxRefusalRSS), "peak memory of a refused run")
}

// refusalLimit runs a command expected to refuse its input under a 1 GiB
// data limit (see TestMain).
const refusalLimit = "GOLF_TEST_MAX_DATA=1073741824"

// assertNothingWritten checks that a rejected command left OUT_DIR absent
// or empty.
func assertNothingWritten(t *testing.T, out string) {
	t.Helper()
	entries, err := os.ReadDir(out)
	if err == nil {
		assert.Empty(t, entries, "OUT_DIR has files after a rejected run")
	}
}

// patch overwrites the little-endian int32 at byte offset off of path.
func patch(t *testing.T, path string, off int64, v int32) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(v))
	_, err = f.WriteAt(b[:], off)
	require.NoError(t, err)
}

func TestTrainAndEvalCLI(t *testing.T) {
	dp, tp := dataset(t)
	out := filepath.Join(t.TempDir(), "out")
	args := append([]string{"train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", out,
		"--backend", "cpu", "--run-id", "cli"}, tinyFlags...)
	code, output := golf(t, nil, args...)
	require.Equal(t, 0, code, "train exit status; output:\n%s", output)
	final := lineWith(output, "final_int8_zlib_roundtrip_exact ")
	require.NotEmpty(t, final, "no final_int8_zlib_roundtrip_exact line:\n%s", output)
	// golf eval of the int8 artifact, with no flags (the configuration is
	// the run's, from its log), reproduces the run's round-trip numbers.
	code, evalOut := golf(t, nil, "eval", filepath.Join(out, "cli_model.int8.ptz"))
	require.Equal(t, 0, code, "eval exit status; output:\n%s", evalOut)
	got := strings.TrimPrefix(lineWith(evalOut, "val_loss_exact:"), "val_loss_exact:")
	want := strings.TrimPrefix(final, "final_int8_zlib_roundtrip_exact val_loss:")
	want = strings.Replace(want, " val_bpb:", " val_bpb_exact:", 1)
	assert.Equal(t, want, got, "golf eval's numbers against the training run's")
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
	require.Equal(t, 0, code, "exit status; output:\n%s", out)
	for _, want := range []string{"precision policy for --dtype fp16", "dynamic: 2^16", "17059912 parameters", "peak"} {
		assert.Contains(t, out, want, "info output")
	}
}

// TestInfoRefusesAbsurdSizes: golf info prints the plan (or, for sizes too
// large to plan, the lower bound) and a clear refusal, exit 1, without
// allocating what the sizes ask for.
func TestInfoRefusesAbsurdSizes(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"absurd activations", []string{"--num-layers", "1000", "--train-batch-tokens", "1048576", "--max-microbatch-tokens", "1048576",
			"--val-batch-size", "1048576", "--backend", "cpu"},
			[]string{"memory lower bound (from the shapes; too large to plan)", "training activations", "golf: the run needs at least", "to fit, lower MAX_MICROBATCH_TOKENS"}},
		{"absurd layer count", []string{"--num-layers", "100000000", "--model-dim", "4", "--num-heads", "2", "--num-kv-heads", "1", "--backend", "cpu"},
			[]string{"memory lower bound", "tensor bookkeeping", "golf: the run needs at least"}},
		{"2^40 tokens", []string{"--train-batch-tokens", "1099511627776"},
			[]string{"golf: TRAIN_BATCH_TOKENS must be in [1, 2147483647], got 1099511627776"}},
		{"NaN from env", []string{"--backend", "cpu"}, []string{"golf: BETA1 must be in [0, 1), got NaN"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := []string{refusalLimit}
			if c.name == "NaN from env" {
				env = append(env, "BETA1=NaN")
			}
			code, out, rss := golfRSS(t, env, append([]string{"info"}, c.args...)...)
			recordRefusal(t, "info", c.name, append([]string{"info"}, c.args...), env, code, out, nil, "nothing")
			assert.Equal(t, 1, code, out)
			for _, w := range c.want {
				assert.Contains(t, out, w)
			}
			assert.NotContains(t, out, "goroutine", "a Go runtime trace")
			assertRefusalRSS(t, rss)
		})
	}
}

// TestBadEvalInput: broken, oversized and non-finite artifacts, and flags
// that contradict the file, are refused naming the file (and the tensor or
// flag), exit 1, within little memory, writing nothing.
func TestBadEvalInput(t *testing.T) {
	dp, tp := dataset(t)
	runDir := filepath.Join(t.TempDir(), "run")
	code, out := golf(t, nil, "train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", runDir, "--backend", "cpu",
		"--run-id", "m", "--num-layers", "2", "--model-dim", "8", "--num-heads", "2", "--num-kv-heads", "1",
		"--train-seq-len", "32", "--train-batch-tokens", "256", "--grad-accum-steps", "1", "--val-batch-size", "1024",
		"--iterations", "2", "--warmup-steps", "0")
	require.Equal(t, 0, code, out)
	npz, ptz := filepath.Join(runDir, "m_model.npz"), filepath.Join(runDir, "m_model.int8.ptz")
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	zl := func(raw []byte) []byte {
		var b bytes.Buffer
		zw, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
		_, err := zw.Write(raw)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		return b.Bytes()
	}
	blob, err := os.ReadFile(ptz)
	require.NoError(t, err)
	raw, err := os.ReadFile(npz)
	require.NoError(t, err)
	q, err := artifact.LoadQuantized(ptz)
	require.NoError(t, err)

	// tok_emb inflated to (1024, 32768): 32 MiB of int8 zeros in a file of
	// a few dozen KiB.
	bombQ := *q
	bombQ.Quantized = map[string]artifact.Array{"tok_emb.weight": artifact.I8Array([]int{1024, 32768}, make([]int8, 1024*32768))}
	bombQ.Scales = map[string]artifact.Array{"tok_emb.weight": artifact.F16Array([]int{1024}, make([]float32, 1024))}
	bombQ.DTypes = map[string]string{"tok_emb.weight": "float32"}
	bombQ.QMeta = map[string]artifact.QMeta{"tok_emb.weight": {Scheme: artifact.SchemePerRow}}
	bombQ.Passthrough = map[string]artifact.Array{}
	bombQ.PassthroughOrigDTypes = map[string]string{}
	for k, v := range q.Passthrough {
		if k != "tok_emb.weight" {
			bombQ.Passthrough[k] = v
		}
	}
	for k, v := range q.PassthroughOrigDTypes {
		if k != "tok_emb.weight" {
			bombQ.PassthroughOrigDTypes[k] = v
		}
	}
	encoded, err := artifact.EncodeQuantized(&bombQ)
	require.NoError(t, err)
	shapeBomb := write("shape_bomb.int8.ptz", zl(encoded))

	// The real model plus an 8 MiB member: more than the largest artifact
	// the model's shape allows (about 1 MiB here).
	junkQ := *q
	junkQ.Order = append(append([]string{}, q.Order...), "junk")
	junkQ.Passthrough = map[string]artifact.Array{"junk": artifact.F32Array([]int{2 << 20}, make([]float32, 2<<20))}
	for k, v := range q.Passthrough {
		junkQ.Passthrough[k] = v
	}
	encoded, err = artifact.EncodeQuantized(&junkQ)
	require.NoError(t, err)
	overCap := write("over_cap.int8.ptz", zl(encoded))

	ts, err := artifact.ReadNPZ(npz)
	require.NoError(t, err)
	for i := range ts {
		if ts[i].Name == "blocks.1.attn.c_q.weight" {
			ts[i].Data[3] = float32(math.NaN())
		}
	}
	nanNPZ := filepath.Join(dir, "nan.npz")
	require.NoError(t, artifact.SaveNPZ(nanNPZ, ts))

	for _, c := range []struct {
		name, file string
		flags      []string
		want       []string
	}{
		{"truncated int8 container", write("truncated.int8.ptz", blob[:len(blob)/2]), nil, []string{"truncated.int8.ptz", "unexpected EOF"}},
		{"zeros inflating to 64 MiB", write("zeros.int8.ptz", zl(make([]byte, 64<<20))), nil, []string{"zeros.int8.ptz", "unexpected record signature"}},
		{"not zlib", write("plain.int8.ptz", []byte("not a container")), nil, []string{"plain.int8.ptz", "not zlib data"}},
		{"a 32 MiB tensor in a small file", shapeBomb, nil, []string{"shape_bomb.int8.ptz", "cannot read the model's shape", "head dim 16384"}},
		{"a member past the model's cap", overCap, nil, []string{"over_cap.int8.ptz", "inflates to more than"}},
		{"NaN weights", nanNPZ, nil, []string{"nan.npz", "tensor blocks.1.attn.c_q.weight [8 8] holds a non-finite value (NaN at flat index 3)"}},
		{"truncated npz", write("truncated.npz", raw[:len(raw)-100]), nil, []string{"truncated.npz", "not an npz (zip) archive"}},
		{"flag contradicting the file", npz, []string{"--num-layers", "3"}, []string{"NUM_LAYERS=3 was given but", "m_model.npz holds a model with NUM_LAYERS=2"}},
		{"a second flag contradicting the int8 file", ptz, []string{"--mlp-mult", "4"}, []string{"MLP_MULT=4 was given but", "MLP_MULT=2"}},
		{"missing file", filepath.Join(dir, "absent.npz"), nil, []string{"absent.npz", "no such file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := dirEntries(t, dir)
			args := append([]string{"eval", "--data-path", dp, "--tokenizer-path", tp, "--backend", "cpu", "--train-seq-len", "32", "--val-batch-size", "1024"}, c.flags...)
			code, out, rss := golfRSS(t, []string{refusalLimit}, append(args, c.file)...)
			recordRefusal(t, "eval", c.name, append(append([]string{"eval", "…"}, c.flags...), c.file), nil, code, out,
				map[string]string{dp: "$DATA", tp: "$TOK", dir: "$DIR", runDir: "$RUN"}, describeDirDiff(dir, before))
			assert.Equal(t, 1, code, out)
			for _, w := range c.want {
				assert.Contains(t, out, w)
			}
			assertRefusalRSS(t, rss)
			assert.Equal(t, before, dirEntries(t, dir), "eval wrote files")
		})
	}
}

func dirEntries(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

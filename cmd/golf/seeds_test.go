package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/data"
)

// seriesFlags is a small run of 12 steps with a checkpoint every 3.
var seriesFlags = []string{
	"train", "--backend", "cpu",
	"--num-layers", "2", "--model-dim", "64", "--num-heads", "4", "--num-kv-heads", "2",
	"--train-seq-len", "32", "--train-batch-tokens", "1024", "--grad-accum-steps", "1", "--max-microbatch-tokens", "512",
	"--val-batch-size", "4096", "--iterations", "12", "--warmup-steps", "1", "--warmdown-iters", "4",
	"--max-wallclock-seconds", "0", "--train-log-every", "1", "--checkpoint-every", "3",
}

// smallDataset cuts the embedded data set down to 4,097 validation and
// 30,000 training tokens, so that validation costs little.
func smallDataset(t *testing.T) (dataPath, tokPath string) {
	t.Helper()
	src, tok, err := data.ExtractEmbedded(t.TempDir())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "small")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, n := range map[string]int{"fineweb_val_000000.bin": 4097, "fineweb_train_000000.bin": 30000} {
		toks, err := data.ReadShard(filepath.Join(src, name))
		require.NoError(t, err)
		require.NoError(t, data.WriteShard(filepath.Join(dir, name), toks[:n]))
	}
	return dir, tok
}

// waitLong polls out until re matches, or fails after five minutes (a
// busy machine trains a whole seed before the line comes).
func waitLong(t *testing.T, out *syncBuffer, re *regexp.Regexp) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if re.MatchString(out.String()) {
			return
		}
	}
	t.Fatalf("no match for %v in:\n%s", re, out.String())
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestSeedsSeries trains three seeds as one series, stops it with SIGTERM
// in the middle of the second, and runs the command the interruption
// prints: the first seed is not trained again (its log and artifacts are
// untouched), the second resumes from its checkpoint and ends with the
// artifacts of a run of that seed that was never interrupted, the third
// runs, and the report lists three scored runs. The same command once
// more trains nothing; a changed configuration is refused.
func TestSeedsSeries(t *testing.T) {
	dp, tp := smallDataset(t)
	dir := t.TempDir()
	args := append(append([]string{}, seriesFlags...), "--data-path", dp, "--tokenizer-path", tp, "--out-dir", dir,
		"--run-id", "s", "--seeds", "11,22,33")
	log := func(seed string) string { return filepath.Join(dir, "s_seed"+seed+".txt") }

	cmd, out := startGolf(t, args...)
	waitLong(t, out, regexp.MustCompile(`(?s)series s: seed 22 \(2/3\): starting\n.*\nstep:7/12 `))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	code := exitCode(t, cmd)
	require.Equal(t, 143, code, out.String())
	m := regexp.MustCompile(`(?m)^golf: interrupted by SIGTERM at step (\d+)/12 of run s_seed22; state saved to \S+; the series continues with: (.*)$`).FindStringSubmatch(out.String())
	require.NotNil(t, m, "one line saying how to continue:\n%s", out.String())
	assert.NotContains(t, m[2], "--resume")
	assert.NoFileExists(t, log("33"), "the series stopped in seed 22")
	seed1Log := readFile(t, log("11"))
	require.Regexp(t, `(?m)\nfinal_int8_zlib_roundtrip_exact val_loss:\S+ val_bpb:\S+\n$`, seed1Log)
	seed1Model := readFile(t, filepath.Join(dir, "s_seed11_model.int8.ptz"))

	// The printed command, as a user would paste it into a shell.
	sh := exec.Command("/bin/sh", "-c", m[2])
	sh.Env = append(os.Environ(), "GOLF_TEST_MAIN=1")
	b, err := sh.CombinedOutput()
	out2 := string(b)
	require.NoError(t, err, out2)
	assert.Contains(t, out2, "series s: seed 11 (1/3): finished earlier ("+log("11")+"): not rerun")
	assert.Regexp(t, `series s: seed 22 \(2/3\): resuming from step `+m[1]+` `, out2)
	assert.Contains(t, out2, "series s: seed 33 (3/3): starting")
	assert.Equal(t, seed1Log, readFile(t, log("11")), "seed 11's log is not appended")
	assert.Equal(t, seed1Model, readFile(t, filepath.Join(dir, "s_seed11_model.int8.ptz")))
	assert.Contains(t, readFile(t, log("22")), "\nresumed_from:")
	assert.NotContains(t, readFile(t, log("33")), "resumed_from:")
	for _, s := range []string{"11", "22", "33"} {
		assert.NoDirExists(t, filepath.Join(dir, "checkpoints", "s_seed"+s), "a finished seed keeps no checkpoints")
	}

	// The report: printed, and written beside the logs.
	assert.Contains(t, out2, "runs: 3 logs, 3 scored (score: the last NAME_exact line)")
	for _, s := range []string{"11", "22", "33"} {
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(log(s))+` +golf +`+s+` +12/12 `, out2)
	}
	rep := readFile(t, filepath.Join(dir, "s_report.txt"))
	assert.Contains(t, out2, rep)
	assert.Contains(t, rep, "n=3  val_loss mean ")

	// Seed 22 ends where a run of seed 22 that was never stopped ends.
	straight := t.TempDir()
	code, o := golf(t, nil, append(append([]string{}, seriesFlags...), "--data-path", dp, "--tokenizer-path", tp,
		"--out-dir", straight, "--run-id", "s_seed22", "--seed", "22")...)
	require.Equal(t, 0, code, o)
	for _, a := range []string{"_model.npz", "_model.int8.ptz", "_model.summary.json"} {
		assert.Equal(t, readFile(t, filepath.Join(straight, "s_seed22"+a)), readFile(t, filepath.Join(dir, "s_seed22"+a)), a)
	}
	exact := regexp.MustCompile(`(?m)^final_int8_zlib_roundtrip_exact .*$`)
	assert.Equal(t, exact.FindString(o), exact.FindString(out2[strings.Index(out2, "seed 22 (2/3)"):]))

	// Once more: nothing is trained, the report is printed again.
	logs := map[string]string{}
	for _, s := range []string{"11", "22", "33"} {
		logs[s] = readFile(t, log(s))
	}
	code, out3 := golf(t, nil, args...)
	require.Equal(t, 0, code, out3)
	assert.Equal(t, 3, strings.Count(out3, "finished earlier"), out3)
	assert.Contains(t, out3, rep)
	for _, s := range []string{"11", "22", "33"} {
		assert.Equal(t, logs[s], readFile(t, log(s)))
	}

	// Another configuration under the same RUN_ID is refused before any work.
	code, out4 := golf(t, nil, append(append([]string{}, args...), "--iterations", "13", "--matrix-lr", "0.05")...)
	assert.Equal(t, 1, code, out4)
	assert.Contains(t, out4, "series s in "+dir+" was started with another configuration; it differs in:\n  Iterations: 12 then, 13 now\n  Optim.MatrixLR: 0.04 then, 0.05 now\n")
	// What a resumed run may change, a series may too.
	code, out5 := golf(t, nil, append(append([]string{}, args...), "--train-log-every", "5", "--checkpoint-every", "0", "--max-microbatch-tokens", "256")...)
	assert.Equal(t, 0, code, out5)
	assert.Equal(t, 3, strings.Count(out5, "finished earlier"), out5)
}

// TestSeedsBadInput: every mistake in --seeds and what goes with it is an
// error naming the flag, before any work, leaving no files.
func TestSeedsBadInput(t *testing.T) {
	dp, tp := smallDataset(t)
	cases := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"empty element", []string{"--seeds", "1,,2"}, nil, `--seeds (SEEDS) "1,,2": element 2 is empty`},
		{"trailing comma", []string{"--seeds", "1,2,"}, nil, `--seeds (SEEDS) "1,2,": element 3 is empty`},
		{"not a number", []string{"--seeds", "1,x"}, nil, `--seeds (SEEDS) "1,x": element 2 ("x") is not a whole number`},
		{"separated by spaces", []string{"--seeds", "1 2"}, nil, `--seeds (SEEDS) "1 2": element 1 ("1 2") is not a whole number`},
		{"bad list from env", nil, []string{"SEEDS=7;8"}, `--seeds (SEEDS) "7;8": element 1 ("7;8") is not a whole number`},
		{"negative", []string{"--seeds", "3,-1"}, nil, `--seeds (SEEDS) "3,-1": seed -1 is negative`},
		{"duplicate", []string{"--seeds", "1337,42,1337"}, nil, `--seeds (SEEDS) "1337,42,1337": seed 1337 is listed twice`},
		{"duplicate with spaces", []string{"--seeds", "7, 07"}, nil, `seed 7 is listed twice`},
		{"empty", []string{"--seeds", ""}, nil, "--seeds (SEEDS) must not be empty"},
		{"empty env", nil, []string{"SEEDS="}, "SEEDS is set but empty"},
		{"with --seed", []string{"--seeds", "1,2", "--seed", "3"}, nil, "--seeds and --seed (SEED) are both set"},
		{"with SEED", []string{"--seeds", "1,2"}, []string{"SEED=3"}, "--seeds and --seed (SEED) are both set"},
		{"SEEDS with --seed", []string{"--seed", "3"}, []string{"SEEDS=1,2"}, "--seeds and --seed (SEED) are both set"},
		{"resume from a path", []string{"--seeds", "1,2", "--resume", "x/step_00000003.golfstate"}, nil, `--resume (RESUME) "x/step_00000003.golfstate": with --seeds only 'latest' is allowed`},
		{"resume latest without a series", []string{"--seeds", "1,2", "--resume", "latest"}, nil, "--resume latest with --seeds: no series in"},
		{"run id too long with its suffix", []string{"--seeds", "1", "--run-id", strings.Repeat("r", 125)}, nil, "--seeds: seed 1: RUN_ID="},
		{"bad data path", []string{"--seeds", "1,2", "--data-path", "/nonexistent/golf-data"}, nil, "/nonexistent/golf-data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", out, "--backend", "cpu"}, tinyFlags...)
			code, output := golf(t, c.env, append(args, c.args...)...)
			assert.Equal(t, 1, code, "exit code; output:\n%s", output)
			assert.Contains(t, output, c.want)
			assert.NoDirExists(t, out, "nothing is written")
		})
	}

	// A run of that name that no series started is not taken for one.
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "u_seed5.txt"), []byte("run_id:u_seed5\n"), 0o644))
	args := append([]string{"train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", out, "--backend", "cpu"}, tinyFlags...)
	code, output := golf(t, nil, append(args, "--seeds", "4,5", "--run-id", "u")...)
	assert.Equal(t, 1, code, output)
	assert.Contains(t, output, "RUN_ID u_seed5 already has a log in "+out+" but no series file "+filepath.Join(out, "u_series.json"))
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the log that was there")
}

// TestSeedsSeriesWithoutRunID: a series without RUN_ID is named by a
// random UUID; the interruption prints it in the command that continues
// the series, and --resume latest finds it too.
func TestSeedsSeriesWithoutRunID(t *testing.T) {
	dp, tp := smallDataset(t)
	dir := t.TempDir()
	args := append(append([]string{}, seriesFlags...), "--data-path", dp, "--tokenizer-path", tp, "--out-dir", dir, "--seeds", "5")
	cmd, out := startGolf(t, args...)
	waitLong(t, out, regexp.MustCompile(`(?m)^step:4/12 `))
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 130, exitCode(t, cmd), out.String())
	uuid := `[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`
	m := regexp.MustCompile(`(?m)^golf: interrupted by SIGINT at step \d+/12 of run (` + uuid + `)_seed5; .*; the series continues with: .* --run-id (` + uuid + `)$`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	assert.Equal(t, m[1], m[2])

	code, out2 := golf(t, nil, append(args, "--resume", "latest")...)
	require.Equal(t, 0, code, out2)
	assert.Contains(t, out2, "series "+m[1]+": seed 5 (1/1): resuming from step ")
	assert.Contains(t, readFile(t, filepath.Join(dir, m[1]+"_seed5.txt")), "\nresumed_from:")
	assert.Contains(t, out2, "runs: 1 logs, 1 scored")
	assert.FileExists(t, filepath.Join(dir, m[1]+"_report.txt"))
}

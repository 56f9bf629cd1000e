package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resumeFlags is a run of 40 small steps with a checkpoint every 5.
var resumeFlags = []string{
	"train", "--backend", "cpu", "--run-id", "r",
	"--num-layers", "2", "--model-dim", "64", "--num-heads", "4", "--num-kv-heads", "2",
	"--train-seq-len", "32", "--train-batch-tokens", "1024", "--grad-accum-steps", "1", "--max-microbatch-tokens", "512",
	"--val-batch-size", "8192", "--iterations", "40", "--warmup-steps", "1", "--warmdown-iters", "10",
	"--max-wallclock-seconds", "0", "--train-log-every", "1", "--checkpoint-every", "5",
}

// startGolf starts the golf command (this test binary) with args; its
// combined output goes to the returned buffer.
func startGolf(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GOLF_TEST_MAIN=1")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	return cmd, out
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls out until re matches, or fails after a minute.
func waitFor(t *testing.T, out *syncBuffer, re *regexp.Regexp) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if re.MatchString(out.String()) {
			return
		}
	}
	require.Failf(t, "no matching line within five minutes", "no line matching %v in:\n%s", re, out.String())
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

var lossLine = regexp.MustCompile(`(?m)^step:(\d+)/40 train_loss:(\S+) `)

// losses maps step → logged train loss.
func losses(log string) map[string]string {
	out := map[string]string{}
	for _, m := range lossLine.FindAllStringSubmatch(log, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// artifactsOf reads the published artifacts of run r in dir.
func artifactsOf(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, s := range []string{"_model.npz", "_model.int8.ptz", "_model.summary.json", "_loss.png"} {
		b, err := os.ReadFile(filepath.Join(dir, "r"+s))
		require.NoError(t, err)
		out[s] = b
	}
	return out
}

// metricsOf reads run r's metrics file in dir, failing on a line that is
// not a whole JSON object, and maps each step's line to its train_loss
// (as written), failing on a step written twice.
func metricsOf(t *testing.T, dir string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "r.metrics.jsonl"))
	require.NoError(t, err)
	require.True(t, len(b) == 0 || b[len(b)-1] == '\n', "a torn last line")
	out := map[int]string{}
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(line), &m), "line %d is not a JSON object: %q", i+1, line)
		loss, ok := m["train_loss"]
		if !ok {
			continue
		}
		var step int
		require.NoError(t, json.Unmarshal(m["step"], &step))
		_, dup := out[step]
		require.False(t, dup, "step %d written twice", step)
		out[step] = string(loss)
	}
	return out
}

// noPartialFiles fails if dir holds a temporary or staging file.
func noPartialFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		assert.NotContains(t, d.Name(), ".tmp-", "partial file left: %s", p)
		return nil
	})
}

// TestSignalsAndKill runs the real command three ways with the same
// configuration: straight; stopped by SIGTERM and resumed; killed with
// SIGKILL between checkpoints and resumed. Every way ends with the same
// artifacts, and the resumed runs log the straight run's losses step for
// step.
func TestSignalsAndKill(t *testing.T) {
	dp, tp := dataset(t)
	data := []string{"--data-path", dp, "--tokenizer-path", tp}
	run := func(dir string, extra ...string) []string {
		return append(append(append(append([]string{}, resumeFlags...), data...), "--out-dir", dir), extra...)
	}

	straightDir := t.TempDir()
	code, out := golf(t, nil, run(straightDir)...)
	require.Equal(t, 0, code, out)
	want, wantLosses, wantMetrics := artifactsOf(t, straightDir), losses(out), metricsOf(t, straightDir)
	require.Len(t, wantLosses, 40)
	require.Len(t, wantMetrics, 40, "a metrics line per step")
	_, err := os.Stat(filepath.Join(straightDir, "checkpoints"))
	assert.True(t, os.IsNotExist(err), "a finished run keeps no checkpoints")

	t.Run("SIGTERM", func(t *testing.T) {
		dir := t.TempDir()
		cmd, out := startGolf(t, run(dir)...)
		waitFor(t, out, regexp.MustCompile(`(?m)^step:12/40 `))
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		code := exitCode(t, cmd)
		assert.Equal(t, 143, code, out.String())
		m := regexp.MustCompile(`(?m)^golf: interrupted by SIGTERM at step (\d+)/40 of run r; state saved to (\S+); resume with: .* --resume (\S+)$`).FindStringSubmatch(out.String())
		require.NotNil(t, m, "one line saying where and how to resume:\n%s", out.String())
		assert.Equal(t, m[2], m[3])
		assert.FileExists(t, m[2])
		assert.FileExists(t, filepath.Join(dir, "r_model.npz"), "the artifacts of the weights so far")
		noPartialFiles(t, dir)

		code, out2 := golf(t, nil, run(dir, "--resume", "latest")...)
		require.Equal(t, 0, code, out2)
		assert.Contains(t, out2, "resumed_from:"+m[2])
		got := losses(out.String() + out2)
		assert.Equal(t, wantLosses, got)
		assert.Equal(t, want, artifactsOf(t, dir))
		assert.Equal(t, wantMetrics, metricsOf(t, dir), "steps 1..40 once each, with the straight run's losses")
	})

	t.Run("SIGKILL", func(t *testing.T) {
		dir := t.TempDir()
		cmd, out := startGolf(t, run(dir)...)
		waitFor(t, out, regexp.MustCompile(`(?m)^step:23/40 `)) // checkpoints at 5..20 written, 21–23 lost
		require.NoError(t, cmd.Process.Kill())
		cmd.Wait()
		killed := metricsOf(t, dir) // whole lines only
		assert.GreaterOrEqual(t, len(killed), 20, "the steps before the kill")
		code, out2 := golf(t, nil, run(dir, "--resume", "latest")...)
		require.Equal(t, 0, code, out2)
		resumedAt := regexp.MustCompile(`(?m)^resumed_from:\S+ step:(\d+)/40`).FindStringSubmatch(out2)
		require.NotNil(t, resumedAt, out2)
		assert.Contains(t, []string{"20", "25"}, resumedAt[1])
		assert.Equal(t, wantLosses, merge(losses(out.String()), losses(out2)), "the resumed run repeats the lost steps with the same losses")
		assert.Equal(t, want, artifactsOf(t, dir))
		assert.Equal(t, wantMetrics, metricsOf(t, dir), "steps 1..40 once each, the lost ones redone")
		noPartialFiles(t, dir)
	})

	t.Run("second signal", func(t *testing.T) {
		dir := t.TempDir()
		cmd, out := startGolf(t, run(dir, "--checkpoint-every", "1")...)
		waitFor(t, out, regexp.MustCompile(`(?m)^step:3/40 `))
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		time.Sleep(time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
		code := exitCode(t, cmd)
		assert.Contains(t, []int{129, 130}, code, out.String()) // 129: the second signal came first to the handler's exit
		noPartialFiles(t, dir)
	})
}

// merge is a's entries overwritten by b's, checking that where both hold a
// step they agree.
func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if old, ok := out[k]; ok && old != v {
			out[k] = "conflict: " + old + " vs " + v
			continue
		}
		out[k] = v
	}
	return out
}

// TestBadResumeInput: what cannot be resumed is refused before any work,
// naming the file or the differing setting, exit 1, leaving OUT_DIR as it
// was.
func TestBadResumeInput(t *testing.T) {
	dp, tp := dataset(t)
	dir := t.TempDir()
	base := append(append(append([]string{}, resumeFlags...), "--data-path", dp, "--tokenizer-path", tp), "--out-dir", dir)
	cmd, out := startGolf(t, base...)
	waitFor(t, out, regexp.MustCompile(`(?m)^step:6/40 `))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, exitCode(t, cmd), out.String())
	cps, err := filepath.Glob(filepath.Join(dir, "checkpoints", "r", "step_*.state"))
	require.NoError(t, err)
	require.NotEmpty(t, cps)
	state := cps[len(cps)-1]
	files := t.TempDir()
	b, err := os.ReadFile(state)
	require.NoError(t, err)
	flipped := filepath.Join(files, "flipped.state")
	c := bytes.Clone(b)
	c[len(c)/2] ^= 1
	require.NoError(t, os.WriteFile(flipped, c, 0o644))
	truncated := filepath.Join(files, "truncated.state")
	require.NoError(t, os.WriteFile(truncated, b[:len(b)/3], 0o644))
	notState := filepath.Join(dir, "r_model.npz")

	for _, tc := range []struct {
		name  string
		extra []string
		want  []string
	}{
		{"a state file that does not exist", []string{"--resume", filepath.Join(files, "absent.state")}, []string{"RESUME:", "absent.state", "no such file"}},
		{"one flipped bit", []string{"--resume", flipped}, []string{"flipped.state", "checksum mismatch"}},
		{"a truncated state file", []string{"--resume", truncated}, []string{"truncated.state", "checksum mismatch"}},
		{"an artifact, not a state file", []string{"--resume", notState}, []string{"r_model.npz", "wrong magic"}},
		{"a different model width", []string{"--resume", state, "--model-dim", "96"}, []string{"was saved by a different run", "model.ModelDim: 64 in the checkpoint, 96 now"}},
		{"a different dtype and learning rate", []string{"--resume", state, "--dtype", "fp32", "--matrix-lr", "0.01"}, []string{"dtype: \"bf16\" in the checkpoint, \"fp32\" now", "optim.MatrixLR"}},
		{"another run's state", []string{"--resume", state, "--run-id", "other"}, []string{"belongs to RUN_ID=r, not RUN_ID=other"}},
		{"latest with no state", []string{"--resume", "latest", "--run-id", "nothing"}, []string{"RESUME=latest: no checkpoint of RUN_ID=nothing"}},
		{"a fresh run over unfinished state", nil, []string{"RUN_ID=r has unfinished training state", "--resume latest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := listing(t, dir)
			args := append(append([]string{}, base...), tc.extra...)
			code, output := golf(t, []string{refusalLimit}, args...)
			recordRefusal(t, "resume", tc.name, append([]string{"train", "…"}, tc.extra...), nil, code, output,
				map[string]string{dp: "$DATA", tp: "$TOK", dir: "$OUT", files: "$DIR"}, unchanged(before, listing(t, dir)))
			assert.Equal(t, 1, code, output)
			for _, w := range tc.want {
				assert.Contains(t, output, w)
			}
			assert.Equal(t, before, listing(t, dir), "OUT_DIR changed")
		})
	}
}

// listing maps every file under dir to its size and modification time.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprint(info.Size(), info.ModTime().UnixNano())
		return nil
	}))
	return out
}

// unchanged says whether an OUT_DIR listing stayed the same.
func unchanged(before, after map[string]string) string {
	if len(before) == len(after) {
		same := true
		for k, v := range before {
			same = same && after[k] == v
		}
		if same {
			return "nothing (OUT_DIR unchanged)"
		}
	}
	return "OUT_DIR CHANGED"
}

//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockRun are the flags of a tiny run that trains until it is stopped
// (100,000 steps of a few milliseconds), logging every step.
func lockRun(dp, tp, dir, id string, extra ...string) []string {
	args := []string{"train", "--backend", "cpu", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", dir, "--run-id", id,
		"--num-layers", "1", "--model-dim", "32", "--num-heads", "2", "--num-kv-heads", "1",
		"--train-seq-len", "32", "--train-batch-tokens", "256", "--grad-accum-steps", "1",
		"--val-batch-size", "1024", "--iterations", "100000", "--warmup-steps", "0", "--train-log-every", "1",
		"--max-wallclock-seconds", "0"}
	return append(args, extra...)
}

// stopRun stops a live run with SIGINT and waits for it (it saves its
// state and exits 130).
func stopRun(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 130, exitCode(t, cmd))
}

var heldBy = regexp.MustCompile(`is being written by process (\d+) on `)

// TestTwoRunsOneRunID starts two golf train processes with one RUN_ID and
// OUT_DIR at the same moment, with and without checkpoints: one trains,
// the other is refused at once (exit 1) naming the run id and the pid of
// the one that trains, and writes nothing.
func TestTwoRunsOneRunID(t *testing.T) {
	dp, tp := smallDataset(t)
	for _, c := range []struct {
		name  string
		extra []string
	}{
		{"no checkpoints", []string{"--checkpoint-every", "0", "--checkpoint-every-seconds", "0"}},
		{"checkpoints", []string{"--checkpoint-every", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a, outA := startGolf(t, lockRun(dp, tp, dir, "twin", c.extra...)...)
			b, outB := startGolf(t, lockRun(dp, tp, dir, "twin", c.extra...)...)
			// The loser is refused before any step, the winner trains on:
			// whichever exits first lost.
			done := make(chan *exec.Cmd, 2)
			go func() { a.Wait(); done <- a }()
			go func() { b.Wait(); done <- b }()
			loser := <-done
			winner, winOut, loseOut := b, outB, outA
			if loser == b {
				winner, winOut, loseOut = a, outA, outB
			}
			assert.Equal(t, 1, loser.ProcessState.ExitCode(), loseOut.String())
			m := heldBy.FindStringSubmatch(loseOut.String())
			require.NotNil(t, m, "the refusal:\n%s", loseOut.String())
			assert.Equal(t, strconv.Itoa(winner.Process.Pid), m[1], "the refusal names the process that holds the run")
			assert.Contains(t, loseOut.String(), "RUN_ID=twin is being written by process")
			assert.NotRegexp(t, `(?m)^step:\d+/`, loseOut.String(), "the refused process trained")
			waitLong(t, winOut, regexp.MustCompile(`(?m)^step:3/100000 train_loss:`))
			// Stop the winner: SIGINT, saves, exits 130.
			require.NoError(t, winner.Process.Signal(syscall.SIGINT))
			<-done
			assert.Equal(t, 130, winner.ProcessState.ExitCode(), winOut.String())
			log := readFile(t, filepath.Join(dir, "twin.txt"))
			assert.Len(t, regexp.MustCompile(`(?m)^seed:`).FindAllString(log, -1), 1, "one run's lines in the log:\n%s", log)
			assert.NoFileExists(t, filepath.Join(dir, "twin.lock"), "the lock's file is removed when its run ends")
		})
	}
}

// TestSeriesAgainstALiveSeedRun: a --seeds series one of whose seeds'
// runs is training in another process is refused before it writes
// anything (no series file), naming that seed's run.
func TestSeriesAgainstALiveSeedRun(t *testing.T) {
	dp, tp := smallDataset(t)
	dir := t.TempDir()
	lone, out := startGolf(t, lockRun(dp, tp, dir, "s_seed42")...)
	waitLong(t, out, regexp.MustCompile(`(?m)^step:1/100000 train_loss:`))
	args := lockRun(dp, tp, dir, "s", "--seeds", "1,42", "--iterations", "2")
	code, series := golf(t, nil, args...)
	assert.Equal(t, 1, code, series)
	assert.Contains(t, series, fmt.Sprintf("RUN_ID=s_seed42 is being written by process %d", lone.Process.Pid))
	assert.NoFileExists(t, filepath.Join(dir, "s_series.json"))
	assert.NoFileExists(t, filepath.Join(dir, "s_seed1.txt"), "a seed before the refused one trained")
	stopRun(t, lone)
}

// TestResumeWhileAlive: --resume latest of a run that is still training
// is refused with its pid; once the run is killed outright (SIGKILL, its
// lock's file left behind), the same resume takes the lock and finishes.
func TestResumeWhileAlive(t *testing.T) {
	dp, tp := smallDataset(t)
	dir := t.TempDir()
	run, out := startGolf(t, lockRun(dp, tp, dir, "alive", "--checkpoint-every", "1")...)
	waitLong(t, out, regexp.MustCompile(`(?m)^checkpoint:\S+ step:2/`))
	code, resumed := golf(t, nil, lockRun(dp, tp, dir, "alive", "--resume", "latest")...)
	assert.Equal(t, 1, code, resumed)
	assert.Contains(t, resumed, fmt.Sprintf("RUN_ID=alive is being written by process %d", run.Process.Pid))

	require.NoError(t, run.Process.Signal(syscall.SIGKILL))
	_ = run.Wait()
	require.FileExists(t, filepath.Join(dir, "alive.lock"), "a killed run leaves its lock's file")
	states, err := filepath.Glob(filepath.Join(dir, "checkpoints", "alive", "step_*.state"))
	require.NoError(t, err)
	require.NotEmpty(t, states)
	var last int
	for _, s := range states {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(s), "step_%08d.state", &n); err == nil && n > last {
			last = n
		}
	}
	end := strconv.Itoa(last + 2)
	code, resumed = golf(t, nil, lockRun(dp, tp, dir, "alive", "--resume", "latest", "--iterations", end)...)
	require.Equal(t, 0, code, resumed)
	assert.Regexp(t, `(?m)^resumed_from:\S+ step:`+strconv.Itoa(last)+`/`+end, resumed)
	assert.Contains(t, resumed, "final_int8_zlib_roundtrip_exact")
	_, err = os.Stat(filepath.Join(dir, "alive.lock"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the resumed run removed the lock's file when it ended")
}

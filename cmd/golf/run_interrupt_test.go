package main

import (
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInterruptNotice sends SIGINT to a real child while it trains steps
// of a second or so: the notice comes at once, before the step under way
// ends (its own train_loss line), saying which step and about how long it
// still takes; the run then stops after that step (exit 130) and says so
// once.
func TestInterruptNotice(t *testing.T) {
	dp, tp := smallDataset(t)
	dir := t.TempDir()
	cmd, out := startGolf(t, "train", "--backend", "cpu", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", dir, "--run-id", "n",
		"--num-layers", "4", "--model-dim", "256", "--num-heads", "4", "--num-kv-heads", "2",
		"--train-seq-len", "256", "--train-batch-tokens", "16384", "--grad-accum-steps", "1", "--max-microbatch-tokens", "4096",
		"--val-batch-size", "4096", "--iterations", "30", "--warmup-steps", "0", "--train-log-every", "1", "--max-wallclock-seconds", "0")
	waitLong(t, out, regexp.MustCompile(`(?m)^step:2/30 train_loss:`))
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	code := exitCode(t, cmd)
	output := out.String()
	assert.Equal(t, 130, code, output)

	notice := regexp.MustCompile(`(?m)^stopping after step (\d+) \(about (\d+(?:\.\d)?) s\); Ctrl-C again to stop now without saving this step$`)
	m := notice.FindStringSubmatchIndex(output)
	require.NotNil(t, m, "no notice:\n%s", output)
	assert.Len(t, notice.FindAllString(output, -1), 1, "one notice")
	// The signal goes out once step 2 is logged: the step under way is
	// step 3, or a later one on a machine slow to deliver it.
	step := output[m[2]:m[3]]
	n, err := strconv.Atoi(step)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 3, "the step under way when the signal came")
	stepLine := regexp.MustCompile(`(?m)^step:` + step + `/30 train_loss:`).FindStringIndex(output)
	require.NotNil(t, stepLine, "the step under way finishes:\n%s", output)
	assert.Less(t, m[0], stepLine[0], "the notice comes before the step ends:\n%s", output)

	left, err := strconv.ParseFloat(output[m[4]:m[5]], 64)
	require.NoError(t, err)
	avg := regexp.MustCompile(`(?m)^step:2/30 train_loss:\S+ train_time:\d+ms step_avg:(\S+)ms`).FindStringSubmatch(output)
	require.NotNil(t, avg, output)
	avgMs, err := strconv.ParseFloat(avg[1], 64)
	require.NoError(t, err)
	assert.LessOrEqual(t, left, 1.5*avgMs/1000+0.1, "the time left of a step is at most about a step (%.0fms)", avgMs)

	assert.Regexp(t, `(?m)^golf: interrupted by SIGINT at step `+step+`/30 of run n; state saved to \S+; resume with: .* --resume \S+$`, output)
	assert.NotContains(t, output, "stopping at the next safe point", "golf train's own notice replaces main's")
	assert.Equal(t, 1, strings.Count(output, "interrupted by SIGINT"), "the final message once:\n%s", output)
	assert.NotRegexp(t, `(?m)^(interrupted|error):`, output, "the log's own lines for it stay in the log file")
	log := readFile(t, dir+"/n.txt")
	assert.Regexp(t, `(?m)^interrupted: SIGINT at step:`+step+`/30 state:\S+$`, log)
}

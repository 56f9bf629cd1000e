//go:build cuda

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/trainstate"
)

// Data-parallel training over the stand-in driver and the stand-in NCCL:
// every rank a process of this test binary (golf's main), started by
// golf's own launcher (--nproc-per-node) or, for the rendezvous, alone
// with torchrun's variables; the ranks' all-reduces go through NCCL's C
// API into shared memory, summed in rank order.

// distFlags is a model small enough for the emulator, with four
// microbatches a step so that 1, 2 and 4 ranks take the same global batch.
func distFlags(dp, tp string, iterations int) []string {
	return []string{"--backend", "cuda", "--data-path", dp, "--tokenizer-path", tp,
		"--num-layers", "1", "--model-dim", "32", "--num-heads", "2", "--num-kv-heads", "1",
		"--train-seq-len", "32", "--train-batch-tokens", "256", "--grad-accum-steps", "4",
		"--val-batch-size", "1024", "--iterations", strconv.Itoa(iterations), "--warmup-steps", "0",
		"--train-log-every", "1", "--max-wallclock-seconds", "0", "--warmdown-iters", "0",
		"--dtype", "fp32"}
}

// golfProc is a running golf command whose output lines a test can watch.
type golfProc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   bytes.Buffer
	lines chan string
	done  chan struct{}
	err   error
}

// startRank starts golf's main in a child with env added and the
// stand-in's devices (GOLF_STANDIN_DEVICES) for four ranks.
func startRank(t *testing.T, env []string, args ...string) *golfProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "GOLF_TEST_MAIN=1", "GOLF_STANDIN_DEVICES=4", "GOLF_STANDIN_EAGER_STREAMS=1", "GOLF_EMU_WORKERS=1"), env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(t, cmd.Start())
	p := &golfProc{cmd: cmd, lines: make(chan string, 4096), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.out.WriteString(line + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- line:
			default:
			}
		}
		close(p.lines)
	}()
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	return p
}

// wait waits for the command (at most limit) and returns its exit code and
// output.
func (p *golfProc) wait(t *testing.T, limit time.Duration) (int, string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("golf ran past %v:\n%s", limit, p.output())
	}
	for range p.lines { // the reader has drained the pipe
	}
	code := 0
	if p.err != nil {
		ee, ok := p.err.(*exec.ExitError)
		require.True(t, ok, "%v", p.err)
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	return code, p.output()
}

func (p *golfProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// until returns once a line matching re was written (false: the command
// ended first).
func (p *golfProc) until(re *regexp.Regexp) bool {
	for line := range p.lines {
		if re.MatchString(line) {
			return true
		}
	}
	return false
}

var (
	trainLossRe = regexp.MustCompile(`(?m)^step:(\d+)/\d+ train_loss:(\S+) `)
	valExactRe  = regexp.MustCompile(`(?m)^step:(\d+)/\d+ val_loss:(\S+) val_bpb:(\S+) `)
)

// lossesOf is the train losses a log prints, by step.
func lossesOf(t *testing.T, out string) map[int]float64 {
	t.Helper()
	m := map[int]float64{}
	for _, s := range trainLossRe.FindAllStringSubmatch(out, -1) {
		step, _ := strconv.Atoi(s[1])
		v, err := strconv.ParseFloat(s[2], 64)
		require.NoError(t, err)
		m[step] = v
	}
	return m
}

// finalExact is the int8 round trip's exact line.
func finalExact(t *testing.T, out string) string {
	t.Helper()
	m := finalRe.FindString(out)
	require.NotEmpty(t, m, out)
	return m
}

// TestDistributedMatchesOneRank trains the same global batch on one rank
// and on 2 and 4 ranks. The printed losses (four decimals) and the final
// val_bpb agree: the runs differ only in the order of float32 gradient
// additions (the microbatches summed per rank, then the ranks in rank
// order), which moves the losses by about 1e-7 relative in the in-process
// runs (train's TestParallelMatchesOneDevice); a rank's microbatches
// computed twice or not at all, or gradients not reduced, move them by
// more than 1e-3. Two 2-rank runs are identical, bit for bit.
func TestDistributedMatchesOneRank(t *testing.T) {
	env := standinEnv(t)
	dp, tp := smallData(t)
	outs := map[string]string{}
	for _, n := range []string{"1", "2", "4", "2again"} {
		dir := filepath.Join(t.TempDir(), "out")
		args := append([]string{"train", "--out-dir", dir, "--run-id", "dp"}, distFlags(dp, tp, 3)...)
		if n != "1" {
			args = append(args, "--nproc-per-node", strings.TrimSuffix(n, "again"))
		}
		code, out := startRank(t, env, args...).wait(t, 8*time.Minute)
		skipWithoutLibs(t, code, out)
		require.Equal(t, 0, code, out)
		outs[n] = out
		if n != "1" {
			ranks := strings.TrimSuffix(n, "again")
			r, _ := strconv.Atoi(ranks)
			assert.Contains(t, out, fmt.Sprintf("world_size:%s grad_accum_steps:%d\n", ranks, 4/r))
			assert.Equal(t, 1, strings.Count(out, "\nrun_id:dp"), "rank 0 alone logs")
		}
		log, err := os.ReadFile(filepath.Join(dir, "dp.txt"))
		require.NoError(t, err)
		assert.Contains(t, string(log), "final_int8_zlib_roundtrip_exact")
	}
	one := lossesOf(t, outs["1"])
	require.Len(t, one, 3)
	for _, n := range []string{"2", "4"} {
		got := lossesOf(t, outs[n])
		for step, v := range one {
			assert.InDelta(t, v, got[step], 1e-4, "%s ranks: train loss of step %d", n, step)
		}
		a, b := valExactRe.FindStringSubmatch(outs["1"]), valExactRe.FindStringSubmatch(outs[n])
		require.NotNil(t, a)
		require.NotNil(t, b)
		va, _ := strconv.ParseFloat(a[3], 64)
		vb, _ := strconv.ParseFloat(b[3], 64)
		assert.InDelta(t, va, vb, 1e-4, "%s ranks: val_bpb", n)
	}
	assert.Equal(t, finalExact(t, outs["2"]), finalExact(t, outs["2again"]), "two 2-rank runs")
	assert.Equal(t, lossesOf(t, outs["2"]), lossesOf(t, outs["2again"]))
}

// TestDistributedResume stops a 2-rank run with SIGTERM to the launcher
// after step 2: both ranks stop at one step boundary, rank 0 saves the
// state, and the resumed 2-rank run ends identical to an uninterrupted
// one. A resume on one rank is refused, naming both world sizes.
func TestDistributedResume(t *testing.T) {
	env := standinEnv(t)
	dp, tp := smallData(t)
	flags := distFlags(dp, tp, 4)
	straightDir := filepath.Join(t.TempDir(), "straight")
	code, straight := startRank(t, env, append([]string{"train", "--out-dir", straightDir, "--run-id", "dp", "--nproc-per-node", "2"}, flags...)...).wait(t, 8*time.Minute)
	skipWithoutLibs(t, code, straight)
	require.Equal(t, 0, code, straight)

	dir := filepath.Join(t.TempDir(), "cut")
	p := startRank(t, env, append([]string{"train", "--out-dir", dir, "--run-id", "dp", "--nproc-per-node", "2"}, flags...)...)
	require.True(t, p.until(regexp.MustCompile(`^step:2/4 train_loss:`)), p.output())
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code, out := p.wait(t, 5*time.Minute)
	assert.Equal(t, 143, code, out)
	m := regexp.MustCompile(`(?m)interrupted by (?:SIGTERM|a signal to another rank) at step (\d)/4 of run dp; state saved to (\S+); resume with: \S+ train .*--nproc-per-node 2 .*--resume \S+$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.FileExists(t, m[2])
	assert.NotContains(t, out, "exited with status", "the launcher passes the ranks' status on quietly")
	assert.NotContains(t, out, "rank 1: interrupted by", "rank 1 stopped by agreement, not by a signal of its own")

	code, refused := startRank(t, env, append([]string{"train", "--out-dir", dir, "--run-id", "dp", "--resume", "latest"}, flags...)...).wait(t, 5*time.Minute)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, refused, "was saved by a run of WORLD_SIZE=2; this one has WORLD_SIZE=1")

	code, resumed := startRank(t, env, append([]string{"train", "--out-dir", dir, "--run-id", "dp", "--nproc-per-node", "2", "--resume", "latest"}, flags...)...).wait(t, 8*time.Minute)
	require.Equal(t, 0, code, resumed)
	assert.Equal(t, finalExact(t, straight), finalExact(t, resumed))
	a, b := lossesOf(t, straight), lossesOf(t, resumed)
	for step, v := range b {
		assert.Equal(t, a[step], v, "train loss of step %d", step)
	}
}

// TestDistributedKilledRank SIGKILLs rank 1 of 2 during training: rank 0
// ends within a bounded time (the watchdog aborts the communicator its
// all-reduce waits on) with a message naming rank 1, the launcher exits
// non-zero naming it, and the checkpoint saved before is intact.
func TestDistributedKilledRank(t *testing.T) {
	env := standinEnv(t)
	dp, tp := smallData(t)
	dir := filepath.Join(t.TempDir(), "out")
	p := startRank(t, env, append([]string{"train", "--out-dir", dir, "--run-id", "dp", "--nproc-per-node", "2",
		"--checkpoint-every", "1"}, distFlags(dp, tp, 50)...)...)
	require.True(t, p.until(regexp.MustCompile(`^step:2/50 train_loss:`)), p.output())
	pid := rankPID(t, p.cmd.Process.Pid, 1)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	killed := time.Now()
	code, out := p.wait(t, 2*time.Minute)
	took := time.Since(killed)
	t.Logf("the job ended %v after rank 1 was killed; its last lines:\n%s", took, lastLines(out, 6))
	assert.Less(t, took, 60*time.Second, "every rank ends within a bounded time")
	assert.NotEqual(t, 0, code, out)
	assert.Regexp(t, `golf: rank 0: .*rank 1.*; stopping this rank`, out)
	assert.Regexp(t, `rank 1 .*(killed|signal)`, out)
	cps, err := trainstate.List(trainstate.Dir(dir, "dp"))
	require.NoError(t, err)
	require.NotEmpty(t, cps, out)
	last := cps[len(cps)-1]
	_, err = trainstate.Read(last.Path)
	assert.NoError(t, err, "the last checkpoint (step %d) reads whole", last.Step)
}

// rankPID finds the child of launcher whose RANK is rank.
func rankPID(t *testing.T, launcher, rank int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(launcher) {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(environ, []byte{0}) {
			if string(kv) == "RANK="+strconv.Itoa(rank) {
				return pid
			}
		}
	}
	t.Fatalf("no child of %d with RANK=%d", launcher, rank)
	return 0
}

// TestDistributedRendezvousTimeout: rank 0 of 2 started alone (torchrun's
// variables) waits for the rendezvous timeout, then fails naming the
// address and the missing rank, before any training step and with nothing
// written.
func TestDistributedRendezvousTimeout(t *testing.T) {
	env := standinEnv(t)
	dp, tp := smallData(t)
	dir := filepath.Join(t.TempDir(), "out")
	env = append(env, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29577")
	t0 := time.Now()
	code, out := startRank(t, env, append([]string{"train", "--out-dir", dir, "--run-id", "dp", "--rendezvous-timeout", "2s"}, distFlags(dp, tp, 3)...)...).wait(t, 2*time.Minute)
	skipWithoutLibs(t, code, out)
	assert.NotEqual(t, 0, code)
	assert.Less(t, time.Since(t0), time.Minute)
	assert.Contains(t, out, "127.0.0.1:29577")
	assert.Regexp(t, `rank 1 of 2 did not arrive within 2s`, out)
	assert.NotContains(t, out, "train_loss")
	_, err := os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "nothing written: %v", err)
}

// lastLines is the last n lines of out.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// TestDistributedLaunchRefusals: flags that cannot make a job are refused
// by the launcher before any rank starts, naming the flag.
func TestDistributedLaunchRefusals(t *testing.T) {
	dp, tp := smallData(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nproc-per-node", "3"}, "--grad-accum-steps 4 must be a multiple of the ranks (--nproc-per-node 3 × --nnodes 1 = 3)"},
		{[]string{"--nproc-per-node", "2", "--seeds", "1,2"}, "--seeds runs one training after another on one device"},
		{[]string{"--nproc-per-node", "-1"}, "--nproc-per-node"},
		{[]string{"--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "0"}, "--master-addr"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		code, out := startRank(t, nil, append(append([]string{"train", "--out-dir", dir}, distFlags(dp, tp, 1)...), c.args...)...).wait(t, time.Minute)
		assert.NotEqual(t, 0, code, "%v", c.args)
		assert.Contains(t, out, c.want, "%v", c.args)
		assert.NotContains(t, out, "run_id:", "%v: no rank started", c.args)
		_, err := os.Stat(dir)
		assert.True(t, os.IsNotExist(err), "%v: nothing written", c.args)
	}
}

// TestDistributedOneRankBitwise: one rank through the whole data-parallel
// path (launcher, rendezvous, NCCL communicator, both all-reduces, the
// agreement) trains bitwise as the same run without it, in fp32 and bf16:
// a sum over one rank is exact. (On a GPU, scripts/gpu_check.sh runs the
// same comparison against the real NCCL.)
func TestDistributedOneRankBitwise(t *testing.T) {
	env := standinEnv(t)
	dp, tp := smallData(t)
	for _, dt := range []string{"fp32", "bf16"} {
		outs := map[bool]string{}
		for _, par := range []bool{false, true} {
			dir := filepath.Join(t.TempDir(), "out")
			args := append(append([]string{"train", "--out-dir", dir, "--run-id", "one"}, distFlags(dp, tp, 3)...), "--dtype", dt)
			if par {
				args = append(args, "--nproc-per-node", "1")
			}
			code, out := startRank(t, env, args...).wait(t, 5*time.Minute)
			skipWithoutLibs(t, code, out)
			require.Equal(t, 0, code, out)
			outs[par] = out
		}
		assert.Contains(t, outs[true], map[string]string{"fp32": "compute_dtype:float32", "bf16": "compute_dtype:bfloat16"}[dt])
		assert.Contains(t, outs[true], "\nworld_size:1 grad_accum_steps:4\n", dt)
		assert.NotContains(t, outs[false], "world_size:", dt)
		assert.Equal(t, lossesOf(t, outs[false]), lossesOf(t, outs[true]), dt)
		assert.Equal(t, finalExact(t, outs[false]), finalExact(t, outs[true]), dt)
	}
}

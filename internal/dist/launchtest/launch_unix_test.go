//go:build unix

package launchtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/dist"
)

// TestMain runs the test binary as a launched child where DIST_TEST_CHILD
// says how to behave.
func TestMain(m *testing.M) {
	if mode := os.Getenv("DIST_TEST_CHILD"); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

func child(mode string) int {
	w, err := dist.FromEnv(os.Getenv)
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	switch mode {
	case "env":
		fmt.Printf("rank=%d size=%d local=%d/%d node=%d/%d addr=%s port=%d source=%s job=%s launched=%s base=%s\n",
			w.Rank, w.Size, w.LocalRank, w.LocalSize, w.NodeRank, w.Nodes, w.MasterAddr, w.MasterPort,
			w.Source, w.JobID, os.Getenv(dist.EnvLaunched), os.Getenv("DIST_TEST_BASE"))
		return 0
	case "fail":
		if w.Rank == 1 {
			time.Sleep(100 * time.Millisecond)
			return 3
		}
		fmt.Printf("ready %d\n", w.Rank)
		time.Sleep(20 * time.Second)
		return 0
	case "group":
		g, id, err := dist.Join(context.Background(), w, []byte("nccl-id"), 3*time.Second)
		if err != nil {
			fmt.Printf("rank %d: %v\n", w.Rank, err)
			return 2
		}
		if _, _, err := g.Agree(1, false, float64(w.Rank)); err != nil || string(id) != "nccl-id" {
			fmt.Printf("rank %d: %q %v\n", w.Rank, id, err)
			return 2
		}
		if w.Rank == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		select {
		case err := <-g.Failed():
			fmt.Printf("rank %d: %v\n", w.Rank, err)
			return 7
		case <-time.After(4 * time.Second):
			return 0
		}
	case "signal":
		sigs := make(chan os.Signal, 2)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		fmt.Printf("ready %d\n", w.Rank)
		select {
		case s := <-sigs:
			fmt.Printf("rank %d got %v\n", w.Rank, s)
			return 128 + int(s.(syscall.Signal))
		case <-time.After(20 * time.Second):
			return 0
		}
	}
	return 2
}

// syncBuffer is a buffer the test reads while children write to it.
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

func (s *syncBuffer) lines(prefix string) []string {
	var out []string
	for _, l := range strings.Split(s.String(), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func launchOptions(mode string, n int, out *syncBuffer) dist.LaunchOptions {
	return dist.LaunchOptions{
		NProcPerNode: n,
		Args:         []string{os.Args[0], "-test.run=^$"},
		Env:          append(os.Environ(), "DIST_TEST_CHILD="+mode, "DIST_TEST_BASE=kept", "RANK=99", "GOLF_LAUNCHED=0"),
		Stdout:       out,
		Stderr:       out,
		Grace:        500 * time.Millisecond,
	}
}

func TestLaunchGivesEachChildItsRank(t *testing.T) {
	var out syncBuffer
	require.NoError(t, dist.Launch(context.Background(), launchOptions("env", 3, &out)))
	lines := out.lines("rank=")
	require.Len(t, lines, 3, out.String())
	var port, job string
	for r, l := range lines {
		f := strings.Fields(l)
		require.Len(t, f, 10, l)
		assert.Equal(t, []string{"rank=" + strconv.Itoa(r), "size=3", fmt.Sprintf("local=%d/3", r), "node=0/1", "addr=127.0.0.1"}, f[:5])
		assert.Equal(t, []string{"source=golf"}, f[6:7])
		assert.Equal(t, []string{"launched=1", "base=kept"}, f[8:])
		if r == 0 {
			port, job = f[5], f[7]
		}
		assert.Equal(t, port, f[5], "every rank has one port")
		assert.Equal(t, job, f[7], "every rank has one job id")
	}
	p, err := strconv.Atoi(strings.TrimPrefix(port, "port="))
	require.NoError(t, err)
	assert.True(t, p > 0 && p < 65536, port)
	assert.Len(t, strings.TrimPrefix(job, "job="), 16)
}

func TestLaunchFailingRankEndsTheOthersAfterGrace(t *testing.T) {
	var out syncBuffer
	start := time.Now()
	err := dist.Launch(context.Background(), launchOptions("fail", 3, &out))
	elapsed := time.Since(start)
	var ee *dist.ExitError
	require.ErrorAs(t, err, &ee, out.String())
	assert.Equal(t, 1, ee.Rank)
	assert.Equal(t, 3, ee.Code)
	assert.Equal(t, 3, ee.ExitCode())
	assert.Equal(t, []int{0, 2}, ee.Killed)
	assert.EqualError(t, err, "dist: rank 1 (local rank 1) exited with status 3; ranks 0, 2 killed after 500ms")
	assert.GreaterOrEqual(t, elapsed, 500*time.Millisecond, "the others got their grace")
	assert.Less(t, elapsed, 5*time.Second, "the others were killed, not waited for")
}

func TestLaunchForwardsSIGTERMToEveryChild(t *testing.T) {
	var out syncBuffer
	errc := make(chan error, 1)
	go func() { errc <- dist.Launch(context.Background(), launchOptions("signal", 3, &out)) }()
	require.Eventually(t, func() bool { return len(out.lines("ready")) == 3 }, 4*time.Second, 10*time.Millisecond, out.String())
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	var err error
	select {
	case err = <-errc:
	case <-time.After(4 * time.Second):
		t.Fatal("Launch did not return after SIGTERM")
	}
	assert.Equal(t, []string{"rank 0 got terminated", "rank 1 got terminated", "rank 2 got terminated"}, out.lines("rank "))
	var ee *dist.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 143, ee.ExitCode())
	assert.Empty(t, ee.Killed)
}

func TestLaunchCancelSendsSIGTERMOnce(t *testing.T) {
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- dist.Launch(ctx, launchOptions("signal", 2, &out)) }()
	require.Eventually(t, func() bool { return len(out.lines("ready")) == 2 }, 4*time.Second, 10*time.Millisecond, out.String())
	cancel()
	select {
	case err := <-errc:
		var ee *dist.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 143, ee.ExitCode())
	case <-time.After(4 * time.Second):
		t.Fatal("Launch did not return after cancellation")
	}
	assert.Equal(t, []string{"rank 0 got terminated", "rank 1 got terminated"}, out.lines("rank "))
}

func TestLaunchStartFailureNamesTheCommand(t *testing.T) {
	o := launchOptions("env", 2, &syncBuffer{})
	o.Args = []string{"/nonexistent/golf"}
	err := dist.Launch(context.Background(), o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dist: starting rank 0 (/nonexistent/golf)")
}

func TestLaunchKilledRankEndsEveryRankThroughTheGroup(t *testing.T) {
	var out syncBuffer
	o := launchOptions("group", 3, &out)
	o.Grace = 4 * time.Second
	start := time.Now()
	err := dist.Launch(context.Background(), o)
	var ee *dist.ExitError
	require.ErrorAs(t, err, &ee, out.String())
	assert.Equal(t, 1, ee.Rank)
	assert.Equal(t, int(syscall.SIGKILL), ee.Signal)
	assert.Equal(t, 128+9, ee.ExitCode())
	assert.Empty(t, ee.Killed, "the others stopped by themselves: %s", out.String())
	assert.Less(t, time.Since(start), 4*time.Second)
	lines := out.lines("rank ")
	require.Len(t, lines, 2, out.String())
	assert.Contains(t, lines[0], "rank 0: dist: lost rank 1: its connection closed")
	assert.Contains(t, lines[1], "rank 2: dist: lost rank 1 (reported by rank 0): its connection closed")
}

package dist

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freePort is a port on 127.0.0.1 that nothing listens on just now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

func testWorld(rank, size, port int) World {
	return World{Rank: rank, Size: size, LocalRank: rank, LocalSize: size, Nodes: 1,
		MasterAddr: "127.0.0.1", MasterPort: port, Source: "golf", JobID: "job-1"}
}

var quick = Options{Timeout: 3 * time.Second, Heartbeat: 50 * time.Millisecond, PeerTimeout: time.Second}

// joinAll joins size ranks in goroutines, rank 0 offering payload, and
// checks that every rank got it.
func joinAll(t *testing.T, size int, payload []byte, opt Options) []*Group {
	t.Helper()
	port := freePort(t)
	groups := make([]*Group, size)
	got := make([][]byte, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := payload
			if r != 0 {
				mine = []byte("ignored")
			}
			groups[r], got[r], errs[r] = JoinWith(context.Background(), testWorld(r, size, port), mine, opt)
		}()
	}
	wg.Wait()
	for r := range size {
		require.NoError(t, errs[r], "rank %d", r)
		assert.Equal(t, string(payload), string(got[r]), "rank %d's payload", r)
		assert.Equal(t, r, groups[r].World().Rank)
	}
	t.Cleanup(func() {
		for _, g := range groups {
			g.Close()
		}
	})
	return groups
}

// onAll runs f on every rank at once and returns its errors.
func onAll(groups []*Group, f func(r int, g *Group) error) []error {
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for r, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(r, g)
		}()
	}
	wg.Wait()
	return errs
}

func TestJoinDeliversRankZerosPayload(t *testing.T) {
	for _, size := range []int{2, 4} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			id := make([]byte, 128) // the size of an NCCL unique id
			for i := range id {
				id[i] = byte(i*7 + 1)
			}
			groups := joinAll(t, size, id, quick)
			require.Len(t, groups, size)
			require.NoError(t, errors.Join(onAll(groups, func(r int, g *Group) error { return g.Barrier() })...))
		})
	}
}

func TestSingleProcessGroup(t *testing.T) {
	g, got, err := Join(context.Background(), Single(), []byte{1, 2}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2}, got)
	stop, v, err := g.Agree(3, true, 2.5)
	require.NoError(t, err)
	assert.True(t, stop)
	assert.Equal(t, 2.5, v)
	s, err := g.AllReduceSum([]float64{1, 2})
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2}, s)
	require.NoError(t, g.Barrier())
	require.NoError(t, g.Close())
	_, _, err = g.Agree(4, false, 0)
	assert.ErrorIs(t, err, ErrClosed)
}

func TestAgreeIsTheSameReductionOnEveryRank(t *testing.T) {
	groups := joinAll(t, 4, []byte("id"), quick)
	type answer struct {
		stop bool
		max  float64
	}
	answers := make([]answer, 4)
	// Step 7: only rank 2 asks to stop; the values are 0, 10, 20, 30 ms.
	errs := onAll(groups, func(r int, g *Group) error {
		var err error
		answers[r].stop, answers[r].max, err = g.Agree(7, r == 2, float64(r)*10)
		return err
	})
	require.NoError(t, errors.Join(errs...))
	for r := range 4 {
		assert.Equal(t, answer{true, 30}, answers[r], "rank %d", r)
	}
	// Step 8: nobody stops; rank 0 has the largest value.
	errs = onAll(groups, func(r int, g *Group) error {
		var err error
		answers[r].stop, answers[r].max, err = g.Agree(8, false, 100-float64(r))
		return err
	})
	require.NoError(t, errors.Join(errs...))
	for r := range 4 {
		assert.Equal(t, answer{false, 100}, answers[r], "rank %d", r)
	}
	// Step 9, three answers in one round: a flag only rank 3 raises, a
	// time, a flag only rank 0 raises.
	got := make([][]float64, 4)
	errs = onAll(groups, func(r int, g *Group) error {
		var err error
		got[r], err = g.AgreeMax(9, []float64{float64(r / 3), 5 + float64(r%2), float64(1 - min(r, 1))})
		return err
	})
	require.NoError(t, errors.Join(errs...))
	for r := range 4 {
		assert.Equal(t, []float64{1, 6, 1}, got[r], "rank %d", r)
	}
}

func TestAllReduceInRankOrder(t *testing.T) {
	groups := joinAll(t, 4, nil, quick)
	in := [][]float64{{1e16, 0.1, -3}, {1, 0.2, 7}, {-1e16, 0.3, 2}, {1, 0.4, -8}}
	// Added in rank order: ((1e16 + 1) + -1e16) + 1 is 1 in float64, not 2.
	second := 0.1
	for _, v := range []float64{0.2, 0.3, 0.4} {
		second += v
	}
	wantSum := []float64{1, second, -2}
	sums := make([][]float64, 4)
	maxes := make([][]float64, 4)
	errs := onAll(groups, func(r int, g *Group) error {
		var err error
		if sums[r], err = g.SumFloat64(in[r]); err != nil {
			return err
		}
		maxes[r], err = g.AllReduceMax(in[r])
		return err
	})
	require.NoError(t, errors.Join(errs...))
	for r := range 4 {
		assert.Equal(t, wantSum, sums[r], "rank %d", r)
		assert.Equal(t, []float64{1e16, 0.4, 7}, maxes[r], "rank %d", r)
	}
}

func TestRanksAtDifferentStepsFailTheGroup(t *testing.T) {
	groups := joinAll(t, 2, nil, quick)
	errs := onAll(groups, func(r int, g *Group) error {
		_, _, err := g.Agree(10+r, false, 0)
		return err
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), "ranks disagree at collective #1: rank 0 called Agree at step 10, rank 1 Agree at step 11", "rank %d", r)
	}
}

func TestRendezvousTimeoutNamesMissingRanksAndAddress(t *testing.T) {
	port := freePort(t)
	var err0, err1 error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _, err0 = Join(context.Background(), testWorld(0, 4, port), []byte("id"), 500*time.Millisecond)
	}()
	go func() {
		defer wg.Done()
		_, _, err1 = Join(context.Background(), testWorld(1, 4, port), nil, 3*time.Second)
	}()
	start := time.Now()
	wg.Wait()
	assert.Less(t, time.Since(start), 2500*time.Millisecond, "rank 1 waited past rank 0's verdict")
	want := fmt.Sprintf("dist: rendezvous at 127.0.0.1:%d: ranks 2, 3 of 4 did not arrive within 500ms", port)
	require.EqualError(t, err0, want)
	require.Error(t, err1)
	assert.Contains(t, err1.Error(), fmt.Sprintf("dist: rank 1: rank 0 at 127.0.0.1:%d refused it: ", port))
	assert.Contains(t, err1.Error(), want, "rank 1 reports rank 0's verdict")
}

func TestDialTimeoutNamesAddress(t *testing.T) {
	port := freePort(t) // nobody listens there
	start := time.Now()
	_, _, err := Join(context.Background(), testWorld(3, 4, port), nil, 400*time.Millisecond)
	assert.Less(t, time.Since(start), 2*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("dist: rank 3 could not reach rank 0 at 127.0.0.1:%d within 400ms: ", port))
	assert.Contains(t, err.Error(), "connect", "the last dial error")
}

func TestListenFailureNamesAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, _, err = Join(context.Background(), testWorld(0, 2, port), nil, time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("dist: rank 0 could not listen at 127.0.0.1:%d", port))
}

func TestRendezvousRefuses(t *testing.T) {
	t.Run("duplicate rank", func(t *testing.T) {
		port := freePort(t)
		// Two processes claim rank 1 of 3: whichever comes second is refused
		// at once, and the job completes with the other once rank 2 comes.
		type res struct {
			g   *Group
			err error
		}
		zero := make(chan res, 1)
		ones := make(chan res, 2)
		go func() {
			g, _, err := Join(context.Background(), testWorld(0, 3, port), []byte("id"), 3*time.Second)
			zero <- res{g, err}
		}()
		for range 2 {
			go func() {
				g, _, err := Join(context.Background(), testWorld(1, 3, port), nil, 3*time.Second)
				ones <- res{g, err}
			}()
		}
		refused := <-ones
		g2, _, err2 := Join(context.Background(), testWorld(2, 3, port), nil, 3*time.Second)
		joined, r0 := <-ones, <-zero
		for _, g := range []*Group{refused.g, joined.g, r0.g, g2} {
			if g != nil {
				defer g.Close()
			}
		}
		require.NoError(t, r0.err)
		require.NoError(t, err2)
		require.NoError(t, joined.err)
		require.Error(t, refused.err)
		assert.Contains(t, refused.err.Error(), fmt.Sprintf("dist: rank 1: rank 0 at 127.0.0.1:%d refused it: rank 1 has already joined from 127.0.0.1:", port))
	})
	for _, c := range []struct {
		name   string
		change func(*World)
		want   string
	}{
		{"size mismatch", func(w *World) { w.Size, w.LocalSize = 3, 3 }, "world size 3 is not rank 0's 2"},
		{"another job", func(w *World) { w.JobID = "job-2" }, `job id "job-2" is not rank 0's job "job-1"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := freePort(t)
			done := make(chan error, 1)
			go func() {
				_, _, err := Join(context.Background(), testWorld(0, 2, port), nil, time.Second)
				done <- err
			}()
			w := testWorld(1, 2, port)
			c.change(&w)
			_, _, err := Join(context.Background(), w, nil, time.Second)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "refused it: "+c.want)
			err0 := <-done
			require.Error(t, err0)
			assert.Contains(t, err0.Error(), "rank 1 of 2 did not arrive within 1s (refused rank 1 from 127.0.0.1:")
			assert.Contains(t, err0.Error(), c.want)
		})
	}
}

// vanish ends g's connections the way its process's end would: without a
// bye, and without g itself noticing.
func vanish(g *Group) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	for _, p := range g.peers {
		if p != nil {
			p.conn.Close()
		}
	}
}

// failure waits for g's failure, at most within.
func failure(t *testing.T, g *Group, within time.Duration) *FailureError {
	t.Helper()
	select {
	case err := <-g.Failed():
		var fe *FailureError
		require.ErrorAs(t, err, &fe)
		return fe
	case <-time.After(within):
		t.Fatalf("rank %d saw no failure within %v", g.World().Rank, within)
		return nil
	}
}

func noFailure(t *testing.T, g *Group) {
	t.Helper()
	select {
	case err := <-g.Failed():
		t.Errorf("rank %d: unexpected failure: %v", g.World().Rank, err)
	default:
	}
}

func TestLostRankIsReportedEverywhere(t *testing.T) {
	// A killed process's kernel closes its sockets: here rank 2's
	// connection is closed under it.
	groups := joinAll(t, 4, nil, Options{Timeout: 3 * time.Second})
	start := time.Now()
	vanish(groups[2])
	for _, r := range []int{0, 1, 3} {
		fe := failure(t, groups[r], 3*time.Second)
		assert.Equal(t, 2, fe.Rank, "rank %d", r)
		assert.False(t, fe.Aborted)
		assert.Equal(t, r != 0, fe.Relayed, "rank %d", r)
		assert.Contains(t, fe.Error(), "dist: lost rank 2")
		assert.Contains(t, fe.Error(), "its connection closed")
	}
	// Well within the heartbeat's bound (DefaultPeerTimeout): the socket's
	// end is seen at once.
	assert.Less(t, time.Since(start), 3*time.Second)
	_, _, err := groups[1].Agree(1, false, 0)
	assert.ErrorContains(t, err, "lost rank 2")
}

func TestLostRankZeroIsReportedEverywhere(t *testing.T) {
	groups := joinAll(t, 3, nil, Options{Timeout: 3 * time.Second})
	// Rank 1 is waiting in Agree when rank 0 goes.
	errc := make(chan error, 1)
	go func() {
		_, _, err := groups[1].Agree(1, false, 0)
		errc <- err
	}()
	vanish(groups[0])
	for _, r := range []int{1, 2} {
		fe := failure(t, groups[r], 3*time.Second)
		assert.Equal(t, 0, fe.Rank, "rank %d", r)
		assert.False(t, fe.Relayed)
		assert.Contains(t, fe.Error(), "dist: lost rank 0: its connection closed")
	}
	select {
	case err := <-errc:
		assert.ErrorContains(t, err, "dist: lost rank 0")
	case <-time.After(3 * time.Second):
		t.Fatal("Agree did not return on rank 0's loss")
	}
}

func TestSilentRankIsLost(t *testing.T) {
	opt := Options{Timeout: 3 * time.Second, Heartbeat: 50 * time.Millisecond, PeerTimeout: 400 * time.Millisecond}
	t.Run("rank 1 goes silent", func(t *testing.T) {
		port := freePort(t)
		type res struct {
			g   *Group
			err error
		}
		done := make(chan res, 1)
		go func() {
			g, _, err := JoinWith(context.Background(), testWorld(0, 2, port), []byte("id"), opt)
			done <- res{g, err}
		}()
		// A rank 1 that says hello, reads the payload and then neither
		// reads nor writes again, like a frozen host.
		var c net.Conn
		require.Eventually(t, func() bool {
			var err error
			c, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			return err == nil
		}, 2*time.Second, 10*time.Millisecond)
		defer c.Close()
		require.NoError(t, writeFrame(c, msgHello, hello{version: ProtocolVersion, rank: 1, size: 2, job: "job-1"}.encode()))
		m, err := readFrame(c)
		require.NoError(t, err)
		require.Equal(t, byte(msgWelcome), m.typ)
		r := <-done
		require.NoError(t, r.err)
		defer r.g.Close()
		start := time.Now()
		fe := failure(t, r.g, 3*time.Second)
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
		assert.Equal(t, 1, fe.Rank)
		assert.Contains(t, fe.Error(), "dist: lost rank 1: nothing heard from it for 400ms")
	})
	t.Run("rank 0 goes silent", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			if _, err := readFrame(c); err != nil {
				return
			}
			writeFrame(c, msgWelcome, []byte("id"))
			time.Sleep(3 * time.Second)
		}()
		g, got, err := JoinWith(context.Background(), testWorld(1, 2, ln.Addr().(*net.TCPAddr).Port), nil, opt)
		require.NoError(t, err)
		defer g.Close()
		assert.Equal(t, []byte("id"), got)
		fe := failure(t, g, 3*time.Second)
		assert.Equal(t, 0, fe.Rank)
		assert.Contains(t, fe.Error(), "dist: lost rank 0: nothing heard from it for 400ms")
	})
}

func TestAbortReachesEveryRankWithItsReason(t *testing.T) {
	groups := joinAll(t, 4, nil, quick)
	// Rank 0 is waiting in Agree for the others when rank 3 aborts.
	errc := make(chan error, 1)
	go func() {
		_, _, err := groups[0].Agree(5, false, 0)
		errc <- err
	}()
	groups[3].Abort("CUDA error: out of memory")
	for r := range 4 {
		fe := failure(t, groups[r], 3*time.Second)
		assert.Equal(t, 3, fe.Rank, "rank %d", r)
		assert.True(t, fe.Aborted)
		assert.Equal(t, "CUDA error: out of memory", fe.Reason)
		if r == 1 || r == 2 {
			assert.EqualError(t, fe, "dist: rank 3 failed (reported by rank 0): CUDA error: out of memory")
		} else {
			assert.EqualError(t, fe, "dist: rank 3 failed: CUDA error: out of memory")
		}
	}
	select {
	case err := <-errc:
		assert.EqualError(t, err, "dist: rank 3 failed: CUDA error: out of memory")
	case <-time.After(3 * time.Second):
		t.Fatal("rank 0's Agree did not return")
	}
	// Failed delivers once.
	for _, g := range groups {
		noFailure(t, g)
	}
}

func TestCleanCloseIsNotAFailure(t *testing.T) {
	for _, order := range [][]int{{2, 1, 0}, {0, 1, 2}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			groups := joinAll(t, 3, nil, quick)
			require.NoError(t, errors.Join(onAll(groups, func(r int, g *Group) error {
				_, _, err := g.Agree(1, r == 0, 1)
				return err
			})...))
			// The ranks finish one after another, a heartbeat timeout apart.
			for i, r := range order {
				if i > 0 {
					time.Sleep(150 * time.Millisecond)
				}
				for _, g := range groups {
					noFailure(t, g)
				}
				require.NoError(t, groups[r].Close())
			}
			for _, g := range groups {
				noFailure(t, g)
				assert.NoError(t, g.Err())
				require.NoError(t, g.Close(), "a second Close")
			}
		})
	}
}

func TestARankThatLeavesEarlyFailsTheNextCollective(t *testing.T) {
	groups := joinAll(t, 3, nil, quick)
	require.NoError(t, groups[2].Close())
	errs := onAll(groups[:2], func(r int, g *Group) error { return g.Barrier() })
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), "rank 2", "rank %d", r)
		assert.Contains(t, err.Error(), "closed the group", "rank %d", r)
	}
}

func TestJoinCancelled(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, _, err := Join(ctx, testWorld(0, 2, port), nil, 10*time.Second)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), fmt.Sprintf("127.0.0.1:%d", port))
	_, _, err = Join(ctx, testWorld(1, 2, port), nil, 10*time.Second)
	require.ErrorIs(t, err, context.Canceled)
}

package metal

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// streamRun feeds loads to a stream as a runtime would and returns the
// command buffers it committed (their loads, in order) and the retire
// counts of the plans.
func streamRun(s *stream, loads []load) (buffers []load, retires []int) {
	var open load
	for _, l := range loads {
		p := s.plan(l)
		if p.retire > 0 {
			retires = append(retires, p.retire)
		}
		if p.commitFirst {
			buffers = append(buffers, open)
			open = load{}
		}
		open = open.plus(l)
		if p.commitAfter {
			buffers = append(buffers, open)
			open = load{}
		}
		s.dispatched(p, l)
	}
	return buffers, retires
}

// TestStreamCommitBounds: command buffers are closed by count, by bytes
// and by predicted time, whichever comes first, without exceeding any
// bound unless one dispatch alone does.
func TestStreamCommitBounds(t *testing.T) {
	pol := commitPolicy{maxDispatches: 4, maxBytes: 100, maxSeconds: 0.010, chip: slowestChip}
	small := load{1, 10, 0.001}
	s := newStream(pol)
	bufs, _ := streamRun(s, []load{small, small, small, small, small, small, small, small, small})
	// 9 small dispatches: two buffers of 4 committed, one dispatch open.
	require.Len(t, bufs, 2)
	assert.Equal(t, 4, bufs[0].dispatches)
	assert.Equal(t, 1, s.open.dispatches)

	// Bytes: 40 + 40 fit, a third 40 would pass 100: committed first.
	s = newStream(pol)
	big := load{1, 40, 0.001}
	bufs, _ = streamRun(s, []load{big, big, big, big, big})
	require.Len(t, bufs, 2)
	assert.Equal(t, load{2, 80, 0.002}, bufs[0])
	assert.Equal(t, load{2, 80, 0.002}, bufs[1])

	// Time: 4 ms each; the third would pass 10 ms. A 12 ms dispatch gets a
	// buffer of its own, committed at once.
	s = newStream(pol)
	slow, huge := load{1, 1, 0.004}, load{1, 1, 0.012}
	bufs, _ = streamRun(s, []load{slow, slow, slow, huge, slow})
	require.Len(t, bufs, 3)
	assert.Equal(t, 2, bufs[0].dispatches)
	assert.Equal(t, 1, bufs[1].dispatches) // the third slow one, closed before huge
	assert.Equal(t, huge, bufs[2])
	st := s.stats
	assert.EqualValues(t, 3, st.CommandBuffers)
	assert.InDelta(t, 0.012, st.MaxBufferSeconds, 1e-12)
	assert.EqualValues(t, 5, st.Dispatches)
}

// TestStreamInFlightLimit: never more than maxInFlight command buffers are
// committed and unfinished; the plan waits for the oldest until half
// remain, and counts that as a throttle, not a drain.
func TestStreamInFlightLimit(t *testing.T) {
	s := newStream(commitPolicy{maxDispatches: 1, maxBytes: 1e9, maxSeconds: 1, chip: slowestChip})
	loads := make([]load, 40)
	for i := range loads {
		loads[i] = load{1, 1, 1e-6}
	}
	for _, l := range loads {
		p := s.plan(l)
		s.dispatched(p, l)
		require.LessOrEqual(t, s.inFlight(), defaultMaxInFlight)
	}
	// 40 commits: the 17th, 25th and 33rd each retire 8.
	assert.EqualValues(t, 3, s.stats.Throttles)
	assert.EqualValues(t, 24, s.done)
	assert.Zero(t, s.stats.Drains)
}

// TestStreamWaits: a wait commits the open buffer when it holds work (so
// the GPU has it while the host waits); a wait for an older buffer with
// newer work queued is partial, for the newest one a drain; Sync counts
// once and drains only when work is outstanding; a completed serial needs
// no wait.
func TestStreamWaits(t *testing.T) {
	s := newStream(commitPolicy{maxDispatches: 2, maxBytes: 1e9, maxSeconds: 1, chip: slowestChip})
	one := load{1, 1, 1e-6}
	for range 5 { // buffers 1 and 2 committed, 3 open with one dispatch
		s.dispatched(s.plan(one), one)
	}
	require.EqualValues(t, 3, s.cur)
	require.EqualValues(t, 3, s.last)

	commit, retire := s.waitPlan(1) // commits 3, waits for 1 only
	assert.True(t, commit)
	assert.Equal(t, 1, retire)
	s.waited(commit, retire)
	assert.EqualValues(t, 1, s.stats.PartialWaits)
	assert.Zero(t, s.stats.Drains)
	assert.EqualValues(t, 4, s.cur)

	commit, retire = s.waitPlan(1) // already complete
	assert.False(t, commit)
	assert.Zero(t, retire)

	commit, retire = s.waitPlan(s.last) // buffer 3, now committed: wait for 2 and 3
	assert.False(t, commit)
	assert.Equal(t, 2, retire)
	s.waited(commit, retire)
	assert.EqualValues(t, 1, s.stats.Drains)
	assert.EqualValues(t, 3, s.done)

	commit, retire = s.syncPlan() // nothing outstanding
	s.synced(commit, retire)
	assert.EqualValues(t, 1, s.stats.Syncs)
	assert.EqualValues(t, 1, s.stats.Drains)

	s.dispatched(s.plan(one), one)
	s.synced(s.syncPlan())
	assert.EqualValues(t, 2, s.stats.Syncs)
	assert.EqualValues(t, 2, s.stats.Drains)

	// Polling learns of completions without a wait.
	s.dispatched(s.plan(one), one)
	s.dispatched(s.plan(one), one) // buffer 5 committed
	s.completed(99)
	assert.EqualValues(t, 5, s.done, "completed never passes the newest committed serial")
}

// TestCommandBufferError: the errors a failed command buffer turns into
// name what happened and, for time-outs, preemption and out-of-memory,
// suggest a smaller microbatch; every one wraps errFaulted.
func TestCommandBufferError(t *testing.T) {
	for _, c := range []struct {
		desc, domain string
		code         int
		want         []string
	}{
		{"Impacting Interactivity (0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)", "MTLCommandBufferErrorDomain", 2,
			[]string{"Impacting Interactivity", "--max-microbatch-tokens", "preempted"}},
		{"Caused GPU Timeout Error (00000002:kIOAccelCommandBufferCallbackErrorTimeout)", "MTLCommandBufferErrorDomain", 2,
			[]string{"time-out", "--max-microbatch-tokens", "code 2"}},
		{"Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", "MTLCommandBufferErrorDomain", 8,
			[]string{"out of memory", "--max-microbatch-tokens"}},
		{"Page fault", "MTLCommandBufferErrorDomain", 3, []string{"Page fault", "code 3"}},
	} {
		err := commandBufferError(c.desc, c.domain, c.code)
		require.True(t, errors.Is(err, errFaulted), c.desc)
		for _, w := range c.want {
			assert.Contains(t, err.Error(), w, c.desc)
		}
		if c.code == 3 {
			assert.False(t, strings.Contains(err.Error(), "microbatch"), "a page fault is not the microbatch's fault")
		}
	}
}

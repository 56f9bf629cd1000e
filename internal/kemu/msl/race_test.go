//go:build cgo

package msl

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/kemu"
)

// withRaceCheck runs f with the race detector on.
func withRaceCheck(t *testing.T, f func()) {
	t.Helper()
	SetRaceCheck(true, 7)
	defer SetRaceCheck(false, 0)
	f()
}

// TestRaceDetectorCatchesMissingBarrier: the planted defect (threads read a
// neighbour's slot of threadgroup memory with no barrier after the write)
// passes a plain dispatch, as it would pass every test that does not look
// for it, and the race detector reports it naming the kernel; with the
// barrier the same kernel passes the detector with the right values. The
// same for lanes that exchange values without simdgroup_barrier.
func TestRaceDetectorCatchesMissingBarrier(t *testing.T) {
	const groups, n = 3, 96
	for _, tc := range []struct {
		kernel string
		want   func(g, tid int) uint32
	}{
		{"emu_missing_barrier", func(g, tid int) uint32 { return uint32(2 * (g*n + (tid+1)%n)) }},
		{"emu_missing_simd_barrier", func(g, tid int) uint32 { return uint32(3*((tid/32)*32+(tid%32+1)%32) + 1) }},
	} {
		gr := [3]int{groups, 1, 1}
		if tc.kernel == "emu_missing_simd_barrier" {
			gr = [3]int{1, 1, 1}
		}
		missing := structBytes(&selftestArgs{N: 0})
		// Without the detector the missing barrier goes unnoticed.
		require.NoError(t, Dispatch(tc.kernel, gr, [3]int{n, 1, 1}, [][]byte{poisoned(4 * n * groups), missing}))

		withRaceCheck(t, func() {
			err := Dispatch(tc.kernel, gr, [3]int{n, 1, 1}, [][]byte{poisoned(4 * n * groups), missing})
			require.Error(t, err, "%s: the race detector missed the planted missing barrier", tc.kernel)
			for _, want := range []string{"kernel " + tc.kernel, "race", "buffer 0 (out)", "missing threadgroup_barrier"} {
				assert.Contains(t, err.Error(), want)
			}

			out := poisoned(4 * n * groups)
			require.NoError(t, Dispatch(tc.kernel, gr, [3]int{n, 1, 1}, [][]byte{out, structBytes(&selftestArgs{N: 1})}))
			got := decodeU32(out)
			for g := 0; g < gr[0]; g++ {
				for tid := 0; tid < n; tid++ {
					if want := tc.want(g, tid); got[g*n+tid] != want {
						require.Failf(t, "wrong value", "%s with the barrier: group %d thread %d got %d, want %d", tc.kernel, g, tid, got[g*n+tid], want)
					}
				}
			}
		})
	}
}

// TestRaceDetectorSchedulesAgree: kernels that synchronise correctly
// (barriers, every simdgroup function, simdgroup matrices, partial
// simdgroups, early returns) give bit-identical results under the three
// schedules, so the detector raises no false alarm, and the buffers end as
// the in-order run leaves them (the tests' checks against their models
// pass). Misuse is still reported as in a plain dispatch.
func TestRaceDetectorSchedulesAgree(t *testing.T) {
	withRaceCheck(t, func() {
		TestBarrierNeighbour(t)
		TestBuiltins(t)
		TestSimdFunctions(t)
		TestSimdgroupMatrix(t)
		TestRMSNormForward(t)
		TestMisuseFails(t)
	})
}

// TestFixedThreadCount: a kernel with [[max_total_threads_per_threadgroup(N)]]
// is laid out for exactly N threads; any other threadgroup size is an
// error naming the kernel and both counts, before it runs.
func TestFixedThreadCount(t *testing.T) {
	k, err := lookupAny("emu_fixed_threads")
	require.NoError(t, err)
	assert.Equal(t, 64, k.MaxTotalThreads())
	r, err := Lookup("rmsnorm_fwd_simd_float")
	require.NoError(t, err)
	assert.Equal(t, 0, r.MaxTotalThreads(), "rmsnorm runs any threadgroup size")

	out := poisoned(4 * 64 * 2)
	dispatch(t, "emu_fixed_threads", [3]int{2, 1, 1}, [3]int{64, 1, 1}, out)
	for i, v := range decodeU32(out) {
		require.Equal(t, uint32(i%64), v)
	}
	for _, threads := range [][3]int{{32, 1, 1}, {128, 1, 1}, {32, 2, 2}} {
		nt := threads[0] * threads[1] * threads[2]
		dispatchErr(t, "emu_fixed_threads", [3]int{1, 1, 1}, threads, [][]byte{poisoned(4 * 128)},
			"kernel emu_fixed_threads", fmt.Sprintf("dispatched with %d threads", nt), "exactly 64")
	}
}

// TestRaceErrorsNameSchedule: the report says which schedule disagreed.
func TestRaceErrorsNameSchedule(t *testing.T) {
	withRaceCheck(t, func() {
		err := Dispatch("emu_missing_barrier", [3]int{1, 1, 1}, [3]int{64, 1, 1},
			[][]byte{poisoned(4 * 64), structBytes(&selftestArgs{})})
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), "reverse") || strings.Contains(err.Error(), "random (seed 7)"),
			"error %q names no schedule", err)
	})
}

// TestRaceEnv: GOLF_EMU_RACE=<seed> turns the detector on for a whole
// process (a test binary run again with it set); a value that is not a
// nonzero integer stops the process with a message naming the variable.
func TestRaceEnv(t *testing.T) {
	if os.Getenv("GOLF_EMU_RACE_TEST_CHILD") != "" {
		on, seed := kemu.RaceCheck()
		require.True(t, on, "child: race check off, want on")
		require.Equal(t, uint64(42), seed, "child: race check seed")
		return
	}
	run := func(value string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRaceEnv$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GOLF_EMU_RACE_TEST_CHILD=1", RaceEnv+"="+value)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("42")
	require.NoError(t, err, "%s", out)
	for _, bad := range []string{"yes", "0"} {
		out, err = run(bad)
		require.Error(t, err, "GOLF_EMU_RACE=%s was accepted", bad)
		assert.Contains(t, out, "GOLF_EMU_RACE")
	}
}

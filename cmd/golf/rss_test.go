package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/racebuild"
)

// Measuring a child's own peak memory.
//
// On Linux a child's ru_maxrss does not start from zero: os/exec starts it
// with clone(CLONE_VM|CLONE_VFORK), so until execve it runs in its
// parent's address space, and execve folds the high-water RSS of the mm it
// leaves (the parent's) into the child's maxrss. A child of a test process
// that once grew to 2 GiB reports a peak of at least 2 GiB however little
// it used itself. A plain fork copies the parent's resident pages into the
// child's counters, so it is no way out either.
//
// The fix is a wrapper between them: the test binary re-executed with
// GOLF_TEST_RSS_WRAPPER naming a report file. The wrapper is a fresh
// exec, so its address space holds only what it touches itself: the Go
// runtime and this binary's start-up, about 16 MiB on linux/amd64, most
// of it the binary's own file pages (see TestRSSWrapperOverhead). It
// starts the real child from that small address space with its own
// standard streams and environment (less the wrapper's variable), waits
// for it with wait4, writes the child's ru_maxrss and exit status to the
// report file and exits with the child's code. The child's maxrss is then
// max(wrapper's peak, child's own peak), and as the child starts the same
// binary the same way, the wrapper's peak is no more than the child's
// own, give or take a few hundred KiB.

// rssWrapperEnv names the report file of the wrapper mode.
const rssWrapperEnv = "GOLF_TEST_RSS_WRAPPER"

// rssAllocEnv makes the test binary a child that allocates and touches
// the given number of MiB, writes "allocated N MiB, VmHWM B" to stdout (B
// its own peak in bytes from /proc/self/status, -1 where there is none)
// and exits with the code in rssExitEnv (0 when unset): a child of known
// size.
const (
	rssAllocEnv = "GOLF_TEST_RSS_ALLOC_MIB"
	rssExitEnv  = "GOLF_TEST_RSS_EXIT"
)

// rssMode runs the wrapper or allocating mode of the test binary when its
// variable is set, reporting whether it did and the exit code. TestMain
// calls it before anything else.
func rssMode() (int, bool) {
	if report, ok := os.LookupEnv(rssWrapperEnv); ok {
		return rssWrapper(report), true
	}
	if v, ok := os.LookupEnv(rssAllocEnv); ok {
		return rssAlloc(v), true
	}
	return 0, false
}

// rssWrapper is the wrapper mode: it runs os.Args as the child and writes
// its report, lines of "key value": wrapper_hwm (the wrapper's own peak
// RSS in bytes just before it started the child, from VmHWM; -1 where
// /proc is missing), maxrss (the child's ru_maxrss in bytes), exit (the
// child's exit code, -1 if a signal ended it) and, if so, signal.
func rssWrapper(report string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, rssWrapperEnv+":", err)
		return 125
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, rssWrapperEnv+"=") {
			env = append(env, kv)
		}
	}
	hwm := selfHWM()
	p, err := os.StartProcess(os.Args[0], os.Args, &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		return fail(err)
	}
	st, err := p.Wait()
	if err != nil {
		return fail(err)
	}
	ru, ok := st.SysUsage().(*syscall.Rusage)
	if !ok {
		return fail(fmt.Errorf("no rusage from %v", st))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "wrapper_hwm %d\nmaxrss %d\nexit %d\n", hwm, maxrssBytes(ru), st.ExitCode())
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		fmt.Fprintf(&b, "signal %s\n", ws.Signal())
	}
	if err := os.WriteFile(report, []byte(b.String()), 0o644); err != nil {
		return fail(err)
	}
	if code := st.ExitCode(); code >= 0 {
		return code
	}
	return 124
}

// maxrssBytes is ru_maxrss in bytes: KiB on Linux, bytes on darwin.
func maxrssBytes(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}

// selfHWM is this process's peak resident set in bytes from VmHWM in
// /proc/self/status (which, unlike ru_maxrss, is the current address
// space's own), or -1 where there is none.
func selfHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

// rssAlloc is the allocating mode: mib MiB allocated, every page written.
func rssAlloc(mib string) int {
	n, err := strconv.Atoi(mib)
	if err != nil || n < 0 {
		fmt.Fprintln(os.Stderr, rssAllocEnv+": not a size in MiB:", mib)
		return 125
	}
	buf := make([]byte, n<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	hwm := selfHWM()
	runtime.KeepAlive(buf)
	fmt.Printf("allocated %d MiB, VmHWM %d\n", n, hwm)
	code, _ := strconv.Atoi(os.Getenv(rssExitEnv))
	return code
}

// rssRun is one measured run of the test binary with args.
type rssRun struct {
	code       int    // exit code, -1 if a signal ended it
	out        string // stdout and stderr together
	maxrss     int64  // the child's own peak resident set, bytes
	wrapperHWM int64  // the wrapper's peak before it started the child, -1 if unknown
}

// runRSS runs the test binary with args and env (added to this process's)
// through the wrapper, and returns its exit code, output and own peak
// resident memory.
func runRSS(t *testing.T, env []string, args ...string) rssRun {
	t.Helper()
	report := filepath.Join(t.TempDir(), "rss")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), env...), rssWrapperEnv+"="+report)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); !ok {
		require.NoError(t, err)
	}
	b, rerr := os.ReadFile(report)
	require.NoError(t, rerr, "the RSS wrapper wrote no report (%v); output:\n%s", err, out.String())
	r := rssRun{out: out.String(), wrapperHWM: -1}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, " ")
		if k == "signal" {
			continue
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		require.NoError(t, perr, "RSS wrapper report %q", b)
		switch k {
		case "wrapper_hwm":
			r.wrapperHWM = n
		case "maxrss":
			r.maxrss = n
		case "exit":
			r.code = int(n)
		}
		seen[k] = true
	}
	require.True(t, seen["maxrss"] && seen["exit"], "RSS wrapper report %q", b)
	return r
}

// plainRSS is the measurement the wrapper replaces: the child started
// directly and its ru_maxrss read from wait4, parent's peak included. It
// returns that and the child's output.
func plainRSS(t *testing.T, env []string) (int64, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	require.True(t, ok)
	return maxrssBytes(ru), string(out)
}

// rssSlack bounds what a child of the test binary holds beyond what it
// allocates: the Go runtime, this binary's pages and package variables.
const rssSlack = 40 << 20

const mib = 1 << 20

var allocLine = regexp.MustCompile(`^allocated (\d+) MiB, VmHWM (-?\d+)\n$`)

// allocHWM checks out is an allocating child's whole output, for n MiB,
// and returns the child's own peak that it reported (-1 if none).
func allocHWM(t *testing.T, out string, n int64) int64 {
	t.Helper()
	m := allocLine.FindStringSubmatch(out)
	require.NotNil(t, m, "output of the allocating child: %q", out)
	require.Equal(t, strconv.FormatInt(n, 10), m[1])
	hwm, err := strconv.ParseInt(m[2], 10, 64)
	require.NoError(t, err)
	return hwm
}

// assertOwnPeak checks a measured maxrss against the peak the child read
// from its own VmHWM just before it exited (which, its address space being
// new since exec, is its own): maxrss is that or, where the wrapper's peak
// is larger, the wrapper's, within hwmTolerance.
func assertOwnPeak(t *testing.T, r rssRun, hwm int64) {
	t.Helper()
	if hwm < 0 || r.wrapperHWM < 0 {
		return // no /proc
	}
	assert.Greater(t, r.maxrss, hwm-hwmTolerance, "maxrss below the child's own VmHWM")
	assert.Less(t, r.maxrss, max(hwm, r.wrapperHWM)+hwmTolerance, "maxrss above the child's and the wrapper's peaks")
}

// hwmTolerance is how far a child's maxrss and its VmHWM may disagree:
// the kernel keeps RSS in per-CPU counters, sums them for VmHWM but reads
// them approximately for the high-water mark at exit (a few hundred KiB
// apart here), and the child touches a few pages after its reading.
const hwmTolerance = 4 * mib

// TestRSSWrapperOverhead measures the wrapper's own peak, which the
// kernel folds into the child's maxrss at its exec. It is this binary's
// start-up (the same in the child, which runs the same binary), so it is
// about the smallest child's own peak and max(wrapper, child) is the
// child's.
func TestRSSWrapperOverhead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	r := runRSS(t, []string{rssAllocEnv + "=0"})
	require.Equal(t, 0, r.code, r.out)
	hwm := allocHWM(t, r.out, 0)
	t.Logf("wrapper peak %.1f MiB; child allocating nothing: own VmHWM %.1f MiB, measured %.1f MiB",
		float64(r.wrapperHWM)/mib, float64(hwm)/mib, float64(r.maxrss)/mib)
	require.Positive(t, r.wrapperHWM)
	assert.Less(t, r.wrapperHWM, hwm+hwmTolerance, "the wrapper's peak above an idle child's own")
	assertOwnPeak(t, r, hwm)
	if !racebuild.Enabled {
		assert.Less(t, r.wrapperHWM, int64(32*mib), "wrapper peak")
	}
}

// TestRSSKnownAllocation checks the measurement, through golfRSS, against
// children that allocate and touch a known amount, and that the wrapper
// passes the child's output and exit code through.
func TestRSSKnownAllocation(t *testing.T) {
	for _, n := range []int64{64, 256} {
		t.Run(fmt.Sprintf("%d MiB", n), func(t *testing.T) {
			env := []string{rssAllocEnv + "=" + strconv.FormatInt(n, 10), rssExitEnv + "=7"}
			code, out, rss := golfRSS(t, env)
			t.Logf("allocating %d MiB: measured %.1f MiB", n, float64(rss)/mib)
			assert.Equal(t, 7, code, out)
			allocHWM(t, out, n)
			assert.GreaterOrEqual(t, rss, n*mib, "peak below what the child touched")
			if !racebuild.Enabled {
				assert.Less(t, rss, n*mib+rssSlack, "peak far above what the child touched")
			}

			// The same against the child's own VmHWM.
			r := runRSS(t, env)
			hwm := allocHWM(t, r.out, n)
			t.Logf("allocating %d MiB: measured %.1f MiB, own VmHWM %.1f MiB, wrapper %.1f MiB",
				n, float64(r.maxrss)/mib, float64(hwm)/mib, float64(r.wrapperHWM)/mib)
			assertOwnPeak(t, r, hwm)
		})
	}
}

// TestRSSIndependentOfParent grows this process to 512 MiB and measures a
// 16 MiB child both ways: through the wrapper it is still its own size;
// started directly (the old measurement) its maxrss is this process's
// peak, which is what broke refusal tests run after a big one.
func TestRSSIndependentOfParent(t *testing.T) {
	const grow, child = 512, 16
	buf := make([]byte, grow*mib)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	parent := selfHWM()
	env := []string{rssAllocEnv + "=" + strconv.Itoa(child)}

	r := runRSS(t, env)
	old, oldOut := plainRSS(t, env)
	runtime.KeepAlive(buf)

	hwm := allocHWM(t, r.out, child)
	allocHWM(t, oldOut, child)
	t.Logf("parent peak %.1f MiB; %d MiB child (own VmHWM %.1f MiB): wrapper %.1f MiB, plain exec %.1f MiB",
		float64(parent)/mib, child, float64(hwm)/mib, float64(r.maxrss)/mib, float64(old)/mib)
	require.Equal(t, 0, r.code, r.out)
	assert.GreaterOrEqual(t, r.maxrss, int64(child*mib))
	if !racebuild.Enabled {
		assert.Less(t, r.maxrss, int64(child*mib+rssSlack), "the wrapper's measurement grew with the parent")
	}
	assertOwnPeak(t, r, hwm)
	switch {
	case runtime.GOOS == "linux":
		// execve folds the parent's high-water mark into the child's
		// maxrss (setmax_mm_hiwater_rss in exec_mmap), so the old
		// measurement cannot be below it.
		assert.GreaterOrEqual(t, old, int64(grow*mib), "plain exec's maxrss no longer includes the parent's peak")
	case old >= grow*mib:
		t.Logf("on %s too, plain exec's maxrss includes the parent's peak", runtime.GOOS)
	default:
		t.Logf("on %s plain exec's maxrss is the child's own", runtime.GOOS)
	}
}

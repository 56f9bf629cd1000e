//go:build unix

package runlock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand for a golf process that holds a run
// lock: with RUNLOCK_HOLD=dir/run it takes the lock, prints "locked", and
// holds it until its standard input closes (or it is killed).
func TestMain(m *testing.M) {
	if spec := os.Getenv("RUNLOCK_HOLD"); spec != "" {
		dir, run := filepath.Split(spec)
		if os.Getenv("RUNLOCK_NO_FLOCK") != "" {
			flock = func(*os.File) error { return syscall.ENOLCK }
		}
		l, err := Acquire(dir, run)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		fmt.Println("locked")
		bufio.NewReader(os.Stdin).ReadString('\n')
		l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder starts a process that holds dir/run's lock and returns it once it
// has said so.
func holder(t *testing.T, dir, run string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "RUNLOCK_HOLD="+filepath.Join(dir, run)), env...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
	return cmd
}

// TestAcquireRefusesALiveOwner: while a process holds a run's lock another
// is refused at once with the run id, the owner's pid and host, and what to
// do; once the owner exits the lock is free. A second run id is unaffected.
func TestAcquireRefusesALiveOwner(t *testing.T) {
	dir := t.TempDir()
	cmd := holder(t, dir, "r1")
	host, _ := os.Hostname()
	start := time.Now()
	_, err := Acquire(dir, "r1")
	require.Less(t, time.Since(start), 5*time.Second, "Acquire waited for the lock")
	var held *HeldError
	require.ErrorAs(t, err, &held)
	assert.Equal(t, cmd.Process.Pid, held.Owner.PID)
	assert.Equal(t, host, held.Owner.Host)
	assert.Contains(t, err.Error(), "RUN_ID=r1 is being written by process "+fmt.Sprint(cmd.Process.Pid)+" on "+host)
	assert.Contains(t, err.Error(), "choose another RUN_ID")

	other, err := Acquire(dir, "r2")
	require.NoError(t, err, "another run id is another lock")
	require.NoError(t, other.Release())

	// The owner is killed: the kernel dropped its lock.
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	l, err := Acquire(dir, "r1")
	require.NoError(t, err, "a lock left by a killed process")
	b, err := os.ReadFile(l.Path())
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("pid %d", os.Getpid()), strings.SplitN(string(b), "\n", 2)[0])
	require.NoError(t, l.Release())
	assert.NoFileExists(t, l.Path(), "a released lock leaves no file")
}

// TestAcquireRetriesAReplacedFile: a taker that locked a file no longer
// at the lock's path (its holder removed it on release meanwhile) takes
// the lock again on the file now there.
func TestAcquireRetriesAReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.lock")
	saved := flock
	defer func() { flock = saved }()
	replaced := false
	flock = func(f *os.File) error {
		if err := saved(f); err != nil {
			return err
		}
		if !replaced { // another holder releases: removes the file, a third creates it anew
			replaced = true
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.WriteFile(path, nil, 0o644))
		}
		return nil
	}
	l, err := Acquire(dir, "r")
	require.NoError(t, err)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	assert.True(t, samePath(l.f, path), "the lock held is on the file at the path")
	require.NoError(t, l.Release())
}

// TestAcquireInProcess: the lock excludes a second taker in the same
// process too, and is free again after Release.
func TestAcquireInProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	l, err := Acquire(dir, "run")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "run.lock"), l.Path())
	_, err = Acquire(dir, "run")
	var held *HeldError
	require.ErrorAs(t, err, &held)
	assert.Equal(t, os.Getpid(), held.Owner.PID)
	require.NoError(t, l.Release())
	l, err = Acquire(dir, "run")
	require.NoError(t, err)
	require.NoError(t, l.Release())

	for _, bad := range []string{"", "a/b", `a\b`} {
		_, err := Acquire(dir, bad)
		assert.ErrorContains(t, err, "cannot name a file", "%q", bad)
	}
}

// TestOwnerFileFallback: on a file system without flock the owner file
// excludes a live owner (in another process), is taken over from a dead
// one, is refused (naming it) when another host wrote it, and is removed
// on release.
func TestOwnerFileFallback(t *testing.T) {
	saved := flock
	flock = func(*os.File) error { return syscall.ENOLCK }
	defer func() { flock = saved }()
	dir := t.TempDir()
	owner := filepath.Join(dir, "r.owner")

	cmd := holder(t, dir, "r", "RUNLOCK_NO_FLOCK=1")
	_, err := Acquire(dir, "r")
	var held *HeldError
	require.ErrorAs(t, err, &held)
	assert.Equal(t, cmd.Process.Pid, held.Owner.PID)
	assert.Equal(t, owner, held.Path)
	assert.False(t, held.Unverifiable)

	// Killed: its owner file stays, and is stale.
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.FileExists(t, owner)
	l, err := Acquire(dir, "r")
	require.NoError(t, err, "an owner file of a dead process")
	b, err := os.ReadFile(owner)
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), parseOwner(b).PID)
	require.NoError(t, l.Release())
	assert.NoFileExists(t, owner)

	require.NoError(t, os.WriteFile(owner, []byte("pid 1\nhost elsewhere.example\nsince 2026-11-30T10:00:00Z\n"), 0o644))
	_, err = Acquire(dir, "r")
	require.ErrorAs(t, err, &held)
	assert.True(t, held.Unverifiable)
	assert.Contains(t, err.Error(), "process 1 on elsewhere.example (since 2026-11-30T10:00:00Z)")
	assert.Contains(t, err.Error(), "remove "+owner)
	assert.True(t, errors.As(err, &held))
}

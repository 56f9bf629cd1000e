// Package runlock gives one process at a time the right to write a run:
// OUT_DIR/RUN_ID's log, artifacts and training state. Two `golf train`
// processes with one RUN_ID and OUT_DIR would interleave their log lines
// and publish each other's artifacts; the second is refused before it
// writes anything.
//
// The lock is an advisory flock(2) on OUT_DIR/RUN_ID.lock, taken without
// waiting. The kernel releases it when the process exits, however it
// exits (kill -9 included), so a dead owner never leaves a lock behind.
// The file holds the owner's pid, host and start time, for the refusal's
// message, and is removed on release (before the unlock; a taker checks
// that the file it locked is still the one at the path, so no two
// processes hold locks on two files of one name). A killed owner leaves
// it behind, unlocked.
//
// On a file system that has no flock (some network file systems answer
// ENOLCK or EOPNOTSUPP), the lock falls back to creating
// OUT_DIR/RUN_ID.owner exclusively (O_EXCL), holding the same facts, and
// removing it on release; an owner file left by a process that is no
// longer alive on this host is stale and taken over. An owner file of
// another host cannot be checked and is refused, naming it.
package runlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Lock is a held run lock.
type Lock struct {
	path string
	f    *os.File // the flocked file; nil for an owner file
}

// Owner is who holds (or last held) a run lock.
type Owner struct {
	PID   int
	Host  string
	Since time.Time
}

// HeldError is the refusal of a lock another live process holds.
type HeldError struct {
	RunID string
	Path  string // the lock or owner file
	Owner Owner  // as its file says (PID 0: unreadable)
	// Unverifiable is set for an owner file of another host, whose
	// process cannot be checked from here.
	Unverifiable bool
}

func (e *HeldError) Error() string {
	who := "another process"
	if e.Owner.PID != 0 {
		who = fmt.Sprintf("process %d on %s (since %s)", e.Owner.PID, e.Owner.Host, e.Owner.Since.Format(time.RFC3339))
	}
	if e.Unverifiable {
		return fmt.Sprintf("RUN_ID=%s is held by %s according to %s, which cannot be checked from this host: "+
			"wait for that run to end, use another RUN_ID, or remove %s if that run is gone", e.RunID, who, e.Path, e.Path)
	}
	return fmt.Sprintf("RUN_ID=%s is being written by %s (lock %s): wait for it to finish (or stop it), "+
		"or choose another RUN_ID or OUT_DIR", e.RunID, who, e.Path)
}

// errNoFlock is what a file system without flock answers.
var errNoFlock = errors.New("runlock: no flock on this file system")

// Acquire takes the lock of run runID in dir (created if missing), without
// waiting: a lock held by a live process is a *HeldError.
func Acquire(dir, runID string) (*Lock, error) {
	if runID == "" || strings.ContainsAny(runID, `/\`) {
		return nil, fmt.Errorf("runlock: RUN_ID %q cannot name a file", runID)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("runlock: %w", err)
	}
	l, err := acquireFlock(filepath.Join(dir, runID+".lock"), runID)
	if errors.Is(err, errNoFlock) {
		return acquireOwnerFile(filepath.Join(dir, runID+".owner"), runID)
	}
	return l, err
}

// Path is the lock's file.
func (l *Lock) Path() string { return l.path }

// Release gives the lock up and removes its file. Exiting gives it up too
// (the file then stays, unlocked: the next Acquire takes it).
func (l *Lock) Release() error {
	if l.f != nil {
		// Removed while still locked, then unlocked: a process that opened
		// the old file locks a file no longer at the path and tries again.
		rerr := os.Remove(l.path)
		err := l.f.Close() // closing the descriptor releases the flock
		l.f = nil
		if err == nil && rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = rerr
		}
		return err
	}
	if l.path == "" {
		return nil
	}
	err := os.Remove(l.path)
	l.path = ""
	return err
}

// self is this process as an owner.
func self() Owner {
	host, _ := os.Hostname()
	return Owner{PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second)}
}

func (o Owner) text() string {
	return fmt.Sprintf("pid %d\nhost %s\nsince %s\n", o.PID, o.Host, o.Since.Format(time.RFC3339))
}

// parseOwner reads an owner's facts; missing lines leave zero values.
func parseOwner(b []byte) Owner {
	var o Owner
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "pid":
			o.PID, _ = strconv.Atoi(v)
		case "host":
			o.Host = v
		case "since":
			o.Since, _ = time.Parse(time.RFC3339, v)
		}
	}
	return o
}

// acquireOwnerFile is the fallback: an exclusively created owner file,
// taken over when its process is dead on this host.
func acquireOwnerFile(path, runID string) (*Lock, error) {
	me := self()
	for attempt := 0; attempt < 3; attempt++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.WriteString(me.text())
			cerr := f.Close()
			if werr != nil || cerr != nil {
				os.Remove(path)
				return nil, fmt.Errorf("runlock: writing %s: %v", path, errors.Join(werr, cerr))
			}
			return &Lock{path: path}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("runlock: %w", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue // removed meanwhile: try again
		}
		o := parseOwner(b)
		if o.Host != me.Host || o.PID == 0 {
			return nil, &HeldError{RunID: runID, Path: path, Owner: o, Unverifiable: true}
		}
		if alive(o.PID) {
			return nil, &HeldError{RunID: runID, Path: path, Owner: o}
		}
		os.Remove(path) // stale: its process is gone
	}
	return nil, fmt.Errorf("runlock: %s keeps changing: another process is taking the lock", path)
}

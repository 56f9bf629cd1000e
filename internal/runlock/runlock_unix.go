//go:build unix

package runlock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// acquireFlock locks path (created if missing) with flock(LOCK_EX|LOCK_NB)
// and writes this process's facts into it. The lock counts only if path
// is still the file locked: a holder removes the file before it lets go
// (Release), so a process that opened the old file and locked it after
// the release tries again with the file now at path.
func acquireFlock(path, runID string) (*Lock, error) {
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("runlock: %w", err)
		}
		if err := flock(f); err != nil {
			if errors.Is(err, syscall.EWOULDBLOCK) {
				o := readOwner(f)
				f.Close()
				return nil, &HeldError{RunID: runID, Path: path, Owner: o}
			}
			f.Close()
			if errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOTSUP) {
				return nil, errNoFlock
			}
			return nil, fmt.Errorf("runlock: locking %s: %w", path, err)
		}
		if !samePath(f, path) {
			f.Close()
			if attempt >= 8 {
				return nil, fmt.Errorf("runlock: %s keeps being replaced: another process is taking the lock", path)
			}
			continue
		}
		err = f.Truncate(0)
		if err == nil {
			_, err = f.WriteAt([]byte(self().text()), 0)
		}
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("runlock: writing %s: %w", path, err)
		}
		return &Lock{path: path, f: f}, nil
	}
}

// ownerWait bounds how long a refused taker waits for the holder's facts:
// the holder writes them right after it takes the lock, so an empty file
// means a holder between the two.
const ownerWait = 5 * time.Second

// readOwner reads the holder's facts from the locked file f, waiting (up
// to ownerWait) while the holder has not written them yet.
func readOwner(f *os.File) Owner {
	deadline := time.Now().Add(ownerWait)
	for {
		b, _ := io.ReadAll(io.NewSectionReader(f, 0, 1<<12))
		if o := parseOwner(b); o.PID != 0 || time.Now().After(deadline) {
			return o
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// samePath reports whether f is the file at path now.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// flock is flock(2) with LOCK_EX|LOCK_NB, retried on EINTR; a variable so
// that tests can stand for a file system without locks.
var flock = func(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

// alive reports whether process pid exists (signal 0; EPERM: it exists,
// owned by another user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

//go:build unix

package runlock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// acquireFlock locks path (created if missing) with flock(LOCK_EX|LOCK_NB)
// and writes this process's facts into it.
func acquireFlock(path, runID string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("runlock: %w", err)
	}
	if err := flock(f); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := io.ReadAll(f)
			f.Close()
			return nil, &HeldError{RunID: runID, Path: path, Owner: parseOwner(b)}
		}
		f.Close()
		if errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOTSUP) {
			return nil, errNoFlock
		}
		return nil, fmt.Errorf("runlock: locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(self().text()), 0)
		if err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("runlock: writing %s: %w", path, err)
	}
	return &Lock{path: path, f: f}, nil
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

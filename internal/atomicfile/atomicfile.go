// Package atomicfile writes files so that a reader sees either the old
// contents or the complete new ones, never a half-written file: the bytes go
// to a temporary file in the destination's directory, which is synced and
// renamed over the destination.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n += int64(k)
	return k, err
}

// Write creates path (mode 0644) through fill, which receives a buffered
// writer, and returns the number of bytes written. On any error the
// temporary file is removed, path keeps its old content, and the error
// names path.
func Write(path string, fill func(w io.Writer) error) (n int64, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := createTemp(dir, base)
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer inflight.Delete(tmp)
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	cw := &countWriter{w: bw}
	if err = fill(cw); err != nil {
		return 0, err
	}
	if err = bw.Flush(); err != nil {
		return 0, err
	}
	if err = f.Chmod(0o644); err != nil {
		return 0, err
	}
	if err = f.Sync(); err != nil {
		return 0, err
	}
	if err = f.Close(); err != nil {
		return 0, err
	}
	if err = os.Rename(tmp, path); err != nil {
		return 0, err
	}
	// Make the rename itself durable; not every platform can sync a directory.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return cw.n, nil
}

// WriteFile is Write for a byte slice.
func WriteFile(path string, data []byte) error {
	_, err := Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// TempPattern is the name pattern of the temporary file Write uses for a
// destination called base (os.CreateTemp replaces the *).
func TempPattern(base string) string { return "." + base + ".tmp-*" }

// CleanTemps removes, in dir, the temporary files that a killed Write left
// for destinations whose names start with prefix, and returns their paths.
// It must not run while another process writes such a file.
func CleanTemps(dir, prefix string) (removed []string, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, "."+prefix) {
			continue
		}
		if ok, _ := filepath.Match(TempPattern("*"), n); !ok || !strings.Contains(n, ".tmp-") {
			continue
		}
		p := filepath.Join(dir, n)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// inflight holds the temporary files of the Writes under way; creating
// one and recording it happen under creating, under which RemoveInFlight
// sets closed.
var (
	inflight sync.Map
	creating sync.Mutex
	closed   bool // set by RemoveInFlight: no Write starts afterwards
)

// errClosed is what a Write started after RemoveInFlight returns.
var errClosed = errors.New("the process is exiting (RemoveInFlight)")

// createTemp creates and records a Write's temporary file, unless
// RemoveInFlight has run.
func createTemp(dir, base string) (*os.File, error) {
	creating.Lock()
	defer creating.Unlock()
	if closed {
		return nil, errClosed
	}
	f, err := os.CreateTemp(dir, TempPattern(base))
	if err != nil {
		return nil, err
	}
	inflight.Store(f.Name(), struct{}{})
	return f, nil
}

// RemoveInFlight deletes the temporary files of every Write under way and
// makes every later Write fail before it creates one, for a process about
// to exit without finishing them (a second interrupt): the destinations
// keep their old content and no partial file is left, whatever the other
// goroutines are writing when it is called: a temporary file is recorded
// under the same lock that closes the door, so it is either seen here or
// never created.
func RemoveInFlight() {
	creating.Lock()
	closed = true
	creating.Unlock()
	inflight.Range(func(k, _ any) bool {
		os.Remove(k.(string))
		return true
	})
}

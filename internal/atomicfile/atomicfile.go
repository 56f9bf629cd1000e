// Package atomicfile writes files so that a reader sees either the old
// contents or the complete new ones, never a half-written file: the bytes go
// to a temporary file in the destination's directory, which is synced and
// renamed over the destination.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
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

package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tempsIn lists the temporary files left in dir.
func tempsIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var temps []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			temps = append(temps, e.Name())
		}
	}
	return temps
}

// TestWrite: the file gets exactly what fill wrote and the byte count; a
// failing fill leaves the old content and no temporary file.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.bin")
	n, err := Write(p, func(w io.Writer) error { _, err := w.Write([]byte("hello")); return err })
	require.NoError(t, err)
	assert.Equal(t, int64(5), n)
	_, err = Write(p, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return errors.New("disk on fire")
	})
	require.ErrorContains(t, err, "disk on fire")
	require.ErrorContains(t, err, p, "the error names the file")
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
	assert.Empty(t, tempsIn(t, dir))
}

// TestRemoveInFlightStopsWriters: with goroutines writing files one after
// another, RemoveInFlight leaves no temporary file behind, not even one a
// writer creates just after it, and every destination that exists is
// complete. It waits on events, not on time: RemoveInFlight runs once
// every writer has finished a file and while one writer is parked inside
// a write (its temporary file on disk), and that write then fails and
// leaves its destination absent.
func TestRemoveInFlightStopsWriters(t *testing.T) {
	defer func() {
		creating.Lock()
		closed = false
		creating.Unlock()
	}()
	dir := t.TempDir()
	payload := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	const writers = 4
	firstDone := make(chan struct{}, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := Write(filepath.Join(dir, fmt.Sprintf("g%d_%d", g, i%3)), func(w io.Writer) error {
					for range 4 {
						if _, err := w.Write(payload[:len(payload)/4]); err != nil {
							return err
						}
					}
					return nil
				})
				if errors.Is(err, errClosed) {
					return
				}
				if err == nil && i == 0 {
					firstDone <- struct{}{}
				}
			}
		}()
	}
	// One more writer parks inside its write: its temporary file exists.
	entered, release := make(chan struct{}), make(chan struct{})
	parked := make(chan error, 1)
	go func() {
		_, err := Write(filepath.Join(dir, "parked"), func(w io.Writer) error {
			if _, err := w.Write(payload); err != nil {
				return err
			}
			close(entered)
			<-release
			return nil
		})
		parked <- err
	}()
	for range writers {
		<-firstDone
	}
	<-entered
	require.NotEmpty(t, tempsIn(t, dir), "the parked writer's temporary file")
	RemoveInFlight()
	// Every temporary file recorded was removed, and none can be created
	// after: the check needs no wait.
	assert.Empty(t, tempsIn(t, dir), "temporary files just after RemoveInFlight")
	close(release)
	require.Error(t, <-parked, "the parked write lost its temporary file: its rename fails")
	assert.NoFileExists(t, filepath.Join(dir, "parked"))
	close(stop)
	wg.Wait()
	assert.Empty(t, tempsIn(t, dir), "temporary files once the writers stopped")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(entries), writers, "each writer finished a file before RemoveInFlight")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		assert.Equal(t, len(payload), len(b), "%s is complete", e.Name())
	}
}

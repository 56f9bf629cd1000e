//go:build cuda && unix

package cuda

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// captureStderr runs fn with the process's file descriptor 2 sent to a
// temporary file and returns what was written there: NVRTC's compiler
// prints its internal diagnostics to stderr, not to the program log.
// Nothing else may run in the test binary meanwhile (fn's goroutines
// aside).
func captureStderr(t *testing.T, fn func()) string {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	defer f.Close()
	saved, err := unix.Dup(2)
	require.NoError(t, err)
	require.NoError(t, unix.Dup2(int(f.Fd()), 2))
	func() {
		defer func() {
			_ = unix.Dup2(saved, 2)
			_ = unix.Close(saved)
		}()
		fn()
	}()
	b, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	return string(b)
}

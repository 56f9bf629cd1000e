package train

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// withOpener registers open as the GPU backend name for one test.
func withOpener(t *testing.T, name string, open Opener) {
	old, had := gpuOpeners[name]
	gpuOpeners[name] = open
	t.Cleanup(func() {
		if had {
			gpuOpeners[name] = old
		} else {
			delete(gpuOpeners, name)
		}
	})
}

// TestAutoPrefersCPUWhereMetalRefuses: on a Mac whose GPU the Metal
// backend refuses (an Intel Mac, no unified memory, macOS 13), --backend
// auto trains on the CPU and says why; --backend metal is an error with the
// Metal backend's message.
func TestAutoPrefersCPUWhereMetalRefuses(t *testing.T) {
	refusal := errors.New("metal: AMD Radeon Pro 5500M is not an Apple GPU (an Intel Mac): golf's Metal backend needs Apple silicon; use --backend cpu")
	withOpener(t, "metal", func() (backend.Backend, error) { return nil, refusal })

	b, why, err := OpenBackend("auto")
	require.NoError(t, err)
	assert.Equal(t, "cpu", b.Name())
	assert.Contains(t, why, "AMD Radeon Pro 5500M is not an Apple GPU")

	_, _, err = OpenBackend("metal")
	require.Error(t, err)
	assert.ErrorIs(t, err, refusal)
	assert.Contains(t, err.Error(), "--backend metal")
}

// TestAutoSummarisesWhy: --backend auto's reason is one line per GPU
// backend however long its error (a library search lists every path
// tried), while --backend <name> keeps the whole error.
func TestAutoSummarisesWhy(t *testing.T) {
	long := errors.New("cuda: CUDA driver not found; tried:\n  libcuda.so.1: not found\n  /usr/lib/x86_64-linux-gnu/libcuda.so.1: not found\ninstall the NVIDIA driver")
	withOpener(t, "metal", func() (backend.Backend, error) { return nil, errors.New("metal: no device\nsecond line") })
	withOpener(t, "cuda", func() (backend.Backend, error) {
		return nil, summarised{long, "cuda: CUDA driver not found (2 paths tried)"}
	})
	b, why, err := OpenBackend("auto")
	require.NoError(t, err)
	assert.Equal(t, "cpu", b.Name())
	assert.Equal(t, "auto: no GPU backend usable (metal: metal: no device; cuda: cuda: CUDA driver not found (2 paths tried))", why)
	assert.NotContains(t, why, "\n")

	_, _, err = OpenBackend("cuda")
	require.Error(t, err)
	assert.ErrorIs(t, err, long)
	assert.Contains(t, err.Error(), "/usr/lib/x86_64-linux-gnu/libcuda.so.1: not found")
}

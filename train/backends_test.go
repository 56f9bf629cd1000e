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

//go:build !cuda

package train

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without the cuda tag, --backend cuda says how to build with it.
func TestCUDABackendNeedsTheTag(t *testing.T) {
	_, _, err := OpenBackend("cuda")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--backend cuda: not built into this binary")
	assert.Contains(t, err.Error(), "go build -tags cuda ./cmd/golf")
}

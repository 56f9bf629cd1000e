package metal

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// TestOpenBuildsEveryPipeline: Open builds, before any work, the pipeline
// of every registry kernel in the device's flavour and element types, and
// nothing of the other flavour; a kernel that fails to build is an error
// naming it (New would only fail at its first dispatch, mid-step).
func TestOpenBuildsEveryPipeline(t *testing.T) {
	for _, c := range []struct {
		caps  Caps
		elems []string
	}{
		{DryCaps(Simd), []string{"float", "half", "bfloat"}},
		{ParavirtualCaps(), []string{"float", "half"}},
	} {
		rt := NewDryRuntime(c.caps).(*goRuntime)
		b, err := Open(rt)
		require.NoError(t, err)
		assert.Len(t, rt.pipes, len(Kernels)*len(c.elems), c.caps.Name)
		for _, k := range Kernels {
			for _, e := range c.elems {
				assert.Contains(t, rt.pipes, KernelName(k.Op, k.Dir, c.caps.Flavour, e))
			}
		}
		other := "_portable_"
		if c.caps.Flavour == Portable {
			other = "_simd_"
		}
		for name := range rt.pipes {
			assert.NotContains(t, name, other, "a pipeline of the other flavour was built")
		}
		assert.Equal(t, c.caps.BFloat, b.Supports(backend.OpLinear, backend.BF16))
	}

	rt := NewDryRuntime(DryCaps(Portable)).(*goRuntime)
	lookup := rt.lookup
	broken := KernelName("softcap_ce", "bwd", Portable, "half")
	rt.lookup = func(name string) (any, error) {
		if name == broken {
			return nil, errors.New("Compiler encountered an internal error")
		}
		return lookup(name)
	}
	_, err := Open(rt)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), broken) && strings.Contains(err.Error(), "internal error"), err.Error())
}

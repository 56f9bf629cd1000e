//go:build cgo

package metal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmulatedPipelineLimits: an emulated pipeline reports the limit its
// kernel declares with [[max_total_threads_per_threadgroup(N)]] (the
// attention kernels: 128 for every tile kernel, as
// shaders/attention.metal states), the device limit for a kernel that
// declares none, and a configured lower limit where one is given.
func TestEmulatedPipelineLimits(t *testing.T) {
	rt := NewEmulatedRuntime(Simd)
	for name, want := range map[string]int{
		KernelName("attention", "fwd", Simd, "float"):    128,
		KernelName("attention", "dq", Simd, "bfloat"):    128,
		KernelName("attention", "fwd", Portable, "half"): 128,
		KernelName("relu_sq", "fwd", Simd, "float"):      rt.Caps().MaxThreadsPerGroup,
	} {
		p, err := rt.Pipeline(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, p.MaxThreads(), name)
	}
	low := NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(Simd), MaxThreads: func(string) int { return 96 }}))
	for name, want := range map[string]int{
		KernelName("attention", "fwd", Simd, "float"): 96,
		KernelName("relu_sq", "fwd", Simd, "float"):   96,
	} {
		p, err := low.Pipeline(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, p.MaxThreads(), name)
	}
}

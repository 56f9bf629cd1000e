//go:build darwin && cgo

package metal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/modeltest"
)

// TestGPUConformance runs the conformance suite on the real GPU: every
// kernel × dtype against the float64 oracles, in the flavour the device
// supports (ops or dtypes it lacks are reported "not supported").
func TestGPUConformance(t *testing.T) {
	b, err := Open(gpuOpen(t))
	require.NoError(t, err, "Open")
	backendtest.RunAll(t, b)
}

// TestGPUMatchesEmulator validates the emulator itself: two training steps
// (every op of the model, forward and backward, and both optimizers) on the
// GPU and on the emulator running the same kernels in the same flavour must
// agree within the dtype's tolerance.
func TestGPUMatchesEmulator(t *testing.T) {
	rt := gpuOpen(t)
	modeltest.RunTrainingStep(t, New(rt), New(NewEmulatedRuntime(rt.Caps().Flavour)))
}

// TestGPUTrainingStep compares two training steps on the real GPU with the
// float64 reference backend (as the emulated runtime's training_step test
// does), so the GPU is checked against an independent oracle, not only
// against the emulator.
func TestGPUTrainingStep(t *testing.T) {
	b, err := Open(gpuOpen(t))
	require.NoError(t, err, "Open")
	modeltest.RunTrainingStep(t, b, backendtest.Reference())
}

// TestGPUProbes: the device was probed at start-up, and the line saying
// what each probe found is logged (on a hosted runner it says whether the
// paravirtual device ran the simd flavour and bf16, and why).
func TestGPUProbes(t *testing.T) {
	c := gpuOpen(t).Caps()
	t.Logf("%s: %s kernels, bfloat %v; %s", c.Name, c.Flavour, c.BFloat, c.Probed)
	require.Contains(t, c.Probed, "probed: simdgroup reductions and shuffles ")
	require.Contains(t, c.Probed, "bfloat conversion and arithmetic ")
}

//go:build cgo

package metal

import (
	"testing"

	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/modeltest"
)

// TestConformanceEmulated runs the conformance suite on the Metal backend
// over the emulated runtime, in both kernel flavours: every kernel × dtype
// against the float64 oracles, then two training steps against the float64
// reference backend.
func TestConformanceEmulated(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		t.Run(f.String(), func(t *testing.T) {
			backendtest.RunAll(t, New(NewEmulatedRuntime(f)))
			t.Run("training_step", func(t *testing.T) {
				modeltest.RunTrainingStep(t, New(NewEmulatedRuntime(f)), backendtest.Reference())
			})
		})
	}
}

// TestTrainingStepsMatchCPU: two full training steps of a tiny model (loss,
// every gradient, the updated weights) on the emulated Metal backend match
// the CPU backend, in every dtype and both flavours.
func TestTrainingStepsMatchCPU(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		t.Run(f.String(), func(t *testing.T) {
			modeltest.RunTrainingStep(t, New(NewEmulatedRuntime(f)), cpu.New())
		})
	}
}

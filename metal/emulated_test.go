//go:build cgo

package metal

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/internal/kemu/msl"
)

// emuKernels finds a kernel of the MSL emulator (package
// internal/kemu/msl) for an emulated runtime. Package metal does not
// import the emulator (golf's binary must not compile it); its tests wire
// it in here.
func emuKernels(name string) (EmuKernel, error) {
	k, err := msl.Lookup(name)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// NewEmulatedRuntime returns a Runtime that runs the embedded shaders on
// the MSL emulator with the kernels of flavour f, for the device of
// EmulatorCaps(f).
func NewEmulatedRuntime(f Flavour) Runtime {
	return NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(f)}))
}

// withEmulator completes cfg with the emulator's kernels.
func withEmulator(cfg EmuConfig) EmuConfig {
	if cfg.Kernels == nil {
		cfg.Kernels = emuKernels
	}
	return cfg
}

// TestEmulatedRuntimeNeedsKernels: a runtime without a kernel source is a
// programmer error, refused at once with a message naming the field.
func TestEmulatedRuntimeNeedsKernels(t *testing.T) {
	assert.PanicsWithValue(t, "metal: NewEmulatedRuntimeFor: EmuConfig.Kernels is nil (wire in msl.Lookup)", func() {
		NewEmulatedRuntimeFor(EmuConfig{Caps: EmulatorCaps(Simd)})
	})
	rt := NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(Simd)}))
	_, err := rt.Pipeline("no_such_kernel")
	assert.ErrorContains(t, err, "no_such_kernel")
}

//go:build cgo

package metal

import (
	"github.com/golf-ml/golf/metal/emu"
)

// EmuConfig describes the device an emulated runtime stands for.
type EmuConfig struct {
	// Caps are the device facts it reports (the kernels' flavour among
	// them). EmulatorCaps and ParavirtualCaps give two such devices.
	Caps Caps
	// MaxThreads gives a pipeline's maxTotalThreadsPerThreadgroup by host
	// name (0: the device limit). A real pipeline can allow fewer than the
	// device's 1,024 threads when its kernel needs many registers; the
	// backend must size its threadgroups from the pipeline's limit, and a
	// dispatch above it is an error here (Metal would skip it silently).
	MaxThreads func(name string) int
}

// EmulatorCaps are the caps of the default emulated device: flavour f,
// bfloat, 32 KB of threadgroup memory, 1,024 threads per threadgroup, an
// 8 GiB working set and unified memory.
func EmulatorCaps(f Flavour) Caps {
	return Caps{
		Name: "MSL emulator on the CPU", Flavour: f, BFloat: true,
		MaxThreadsPerGroup: emu.MaxThreadsPerThreadgroup, ThreadgroupMemory: 32 << 10,
		RecommendedWorkingSet: 8 << 30, UnifiedMemory: true,
	}
}

// NewEmulatedRuntime returns a Runtime that runs the embedded shaders on the
// CPU with the kernels of flavour f, for the device of EmulatorCaps(f).
func NewEmulatedRuntime(f Flavour) Runtime {
	return NewEmulatedRuntimeFor(EmuConfig{Caps: EmulatorCaps(f)})
}

// NewEmulatedRuntimeFor returns a Runtime that runs the embedded shaders on
// the CPU for the device cfg describes. Like every goRuntime it runs a
// command buffer's dispatches only when the host waits for them.
func NewEmulatedRuntimeFor(cfg EmuConfig) Runtime {
	r := newGoRuntime(cfg.Caps)
	// A kernel declaring [[max_total_threads_per_threadgroup(N)]] gets a
	// pipeline limit of N, as on a real device; cfg.MaxThreads may lower it.
	user := cfg.MaxThreads
	r.maxThreads = func(name string) int {
		m := 0
		if k, err := emu.Lookup(name); err == nil {
			m = k.MaxTotalThreads()
		}
		if user != nil {
			if u := user(name); u > 0 && (m == 0 || u < m) {
				m = u
			}
		}
		return m
	}
	r.lookup = func(name string) (any, error) { return emu.Lookup(name) }
	r.exec = func(k any, grid, group [3]int, bufs [][]byte) error {
		return k.(*emu.Kernel).Dispatch(grid, group, bufs)
	}
	// 16-byte-aligned Go memory: a float4 or a simdgroup matrix load may
	// need it.
	r.alloc = func(n int) []byte {
		words := make([]uint64, (n+15)/16*2)
		return unsafeBytes(words)[:n]
	}
	return r
}

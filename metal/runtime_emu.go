package metal

import "fmt"

// EmuKernel is a kernel of a CPU emulator of the shader library, as an
// emulated runtime runs it: *msl.Kernel of package internal/kemu/msl (which
// this package does not import, so that golf's binary never compiles the
// emulator; tests wire it in).
type EmuKernel interface {
	// MaxTotalThreads is N of the kernel's
	// [[max_total_threads_per_threadgroup(N)]], 0 without one.
	MaxTotalThreads() int
	// Dispatch runs groups threadgroups of threads threads, buffers[n]
	// bound at [[buffer(n)]].
	Dispatch(groups, threads [3]int, buffers [][]byte) error
}

// EmuConfig describes the device an emulated runtime stands for.
type EmuConfig struct {
	// Caps are the device facts it reports (the kernels' flavour among
	// them). EmulatorCaps and ParavirtualCaps give two such devices.
	Caps Caps
	// Kernels finds a kernel of the emulated library by host name
	// (required): a wrapper of msl.Lookup.
	Kernels func(name string) (EmuKernel, error)
	// MaxThreads gives a pipeline's maxTotalThreadsPerThreadgroup by host
	// name (0: the device limit). A real pipeline can allow fewer than the
	// device's 1,024 threads when its kernel needs many registers; the
	// backend must size its threadgroups from the pipeline's limit, and a
	// dispatch above it is an error here (Metal would skip it silently).
	MaxThreads func(name string) int
	// PipelineFault, when set, is asked before each attempt (1, 2, ...) at
	// creating a pipeline; an error fails that attempt, as
	// newComputePipelineStateWithFunction may fail on a real device.
	PipelineFault func(name string, attempt int) error
	// Probe makes the runtime probe the device at start-up as the darwin
	// runtime does (probe.go): Caps are then what the device's family
	// implies, and the runtime's flavour and bfloat come from the probes
	// run on the emulated kernels (which Kernels may alter, to stand for
	// a device that computes them wrong or cannot build them).
	Probe bool
}

// EmulatorCaps are the caps of the default emulated device: flavour f,
// bfloat, 32 KB of threadgroup memory, 1,024 threads per threadgroup, an
// 8 GiB working set and unified memory.
func EmulatorCaps(f Flavour) Caps {
	return Caps{
		Name: "MSL emulator on the CPU", Flavour: f, BFloat: true,
		MaxThreadsPerGroup: 1024, ThreadgroupMemory: 32 << 10,
		RecommendedWorkingSet: 8 << 30, UnifiedMemory: true,
	}
}

// NewEmulatedRuntimeFor returns a Runtime that runs the shader library on
// the CPU, through cfg.Kernels, for the device cfg describes. Like every
// goRuntime it runs a command buffer's dispatches only when the host waits
// for them. A nil cfg.Kernels is a programmer error.
func NewEmulatedRuntimeFor(cfg EmuConfig) Runtime {
	if cfg.Kernels == nil {
		panic("metal: NewEmulatedRuntimeFor: EmuConfig.Kernels is nil (wire in msl.Lookup)")
	}
	r := newGoRuntime(cfg.Caps)
	// A kernel declaring [[max_total_threads_per_threadgroup(N)]] gets a
	// pipeline limit of N, as on a real device; cfg.MaxThreads may lower it.
	user := cfg.MaxThreads
	r.maxThreads = func(name string) int {
		m := 0
		if k, err := cfg.Kernels(name); err == nil {
			m = k.MaxTotalThreads()
		}
		if user != nil {
			if u := user(name); u > 0 && (m == 0 || u < m) {
				m = u
			}
		}
		return m
	}
	r.lookup = func(name string) (any, error) {
		k, err := cfg.Kernels(name)
		if err != nil {
			return nil, err
		}
		if k == nil {
			return nil, fmt.Errorf("%w: %q", errNoKernel, name)
		}
		return k, nil
	}
	r.exec = func(k any, grid, group [3]int, bufs [][]byte) error {
		return k.(EmuKernel).Dispatch(grid, group, bufs)
	}
	// 16-byte-aligned Go memory: a float4 or a simdgroup matrix load may
	// need it.
	r.alloc = func(n int) []byte {
		words := make([]uint64, (n+15)/16*2)
		return unsafeBytes(words)[:n]
	}
	r.fault = cfg.PipelineFault
	if cfg.Probe {
		rs := runProbes(r, func(p probe) (Pipeline, error) { return r.Pipeline(p.kernel) })
		for _, p := range probes {
			delete(r.pipes, p.kernel) // built for the probes, not for the backend
		}
		r.caps = probedCaps(r.caps, rs)
	}
	return r
}

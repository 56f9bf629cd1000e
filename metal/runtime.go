// Package metal is golf's Metal backend: a small Runtime interface (device
// capabilities, buffers, pipelines by name, dispatch, command buffers,
// sync) with two implementations — darwinkit on macOS (runtime_darwin.go)
// and the MSL-on-CPU emulator everywhere a C++ compiler exists
// (metal/emu) — and the ops of the backend contract written once over it.
package metal

import "fmt"

// Flavour selects a kernel variant by device capability.
type Flavour int

const (
	// Simd kernels use simd_sum/simd_shuffle reductions and
	// simdgroup_matrix 8×8 tiles (Apple7 and later: M1+).
	Simd Flavour = iota
	// Portable kernels use threadgroup-memory reductions and plain tiled
	// matmuls, for devices without Apple7 features (e.g. the paravirtual
	// GPU of hosted macOS CI runners).
	Portable
)

func (f Flavour) String() string {
	if f == Simd {
		return "simd"
	}
	return "portable"
}

// Caps are the device facts the backend plans with.
type Caps struct {
	Name                  string
	Flavour               Flavour // Simd when the device supports Apple7
	BFloat                bool    // bfloat in MSL 3.1 (macOS 14+, Apple6/Metal3)
	MaxThreadsPerGroup    int     // device limit; each pipeline may be lower
	ThreadgroupMemory     int     // bytes per threadgroup
	RecommendedWorkingSet uint64  // bytes (recommendedMaxWorkingSetSize)
}

// Buffer is device memory shared with the CPU (storage mode shared on
// unified memory): Bytes is a live view of its contents, valid until Free.
type Buffer interface {
	Len() int
	Bytes() []byte
}

// Pipeline is a compiled kernel, by its host name
// ("<op>_<dir>_<flavour>_<dtype>").
type Pipeline interface {
	Name() string
	// MaxThreads is the pipeline's maxTotalThreadsPerThreadgroup; a
	// dispatch with more threads per group would be skipped silently by
	// Metal, so the backend sizes groups from it.
	MaxThreads() int
}

// Arg binds [[buffer(i)]] of a dispatch to a buffer range or to inline
// bytes (setBytes: argument structs, at most 4 KB).
type Arg struct {
	Buf    Buffer
	Offset int
	Bytes  []byte
}

// Runtime is what the ops need from a Metal device. Dispatch only encodes;
// work runs asynchronously in order, committed in command buffers of a few
// dozen dispatches; Sync commits and waits, and returns the first error a
// command buffer reported (out of memory, GPU time-out, a kernel fault).
type Runtime interface {
	Caps() Caps
	NewBuffer(bytes int) (Buffer, error)
	Free(Buffer)
	Pipeline(name string) (Pipeline, error)
	// Dispatch runs grid threadgroups of group threads; args[i] binds
	// [[buffer(i)]]; tgMem[i] sets the length of [[threadgroup(i)]] memory.
	// It must not retain args or tgMem after returning.
	Dispatch(p Pipeline, grid, group [3]int, args []Arg, tgMem []int) error
	Sync() error
	Close() error
}

// KernelName is the one function that builds kernel host names, matching
// the shaders' [[host_name]] instantiations: op, direction ("fwd", "bwd"
// or "" for single kernels), flavour and element type ("float", "half",
// "bfloat").
func KernelName(op, dir string, f Flavour, elem string) string {
	if dir == "" {
		return fmt.Sprintf("%s_%s_%s", op, f, elem)
	}
	return fmt.Sprintf("%s_%s_%s_%s", op, dir, f, elem)
}

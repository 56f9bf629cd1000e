// Package metal is golf's Metal backend: a small Runtime interface (device
// capabilities, buffers, pipelines by name, dispatch, command buffers,
// sync) with two implementations — darwinkit on macOS (runtime_darwin.go)
// and the MSL-on-CPU emulator everywhere a C++ compiler exists
// (internal/kemu/msl, wired in by the tests) — and the ops of the backend contract written once over it.
package metal

import (
	"errors"
	"fmt"
)

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
	UnifiedMemory         bool    // hasUnifiedMemory: shared buffers are the GPU's own memory
	// Probed says, in one line, what the start-up probes found for each
	// capability against the answer implied by the device's family
	// (probe.go); "" when the runtime ran no probes.
	Probed string
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

// Runtime is what the ops need from a Metal device.
//
// Dispatch only encodes: work runs asynchronously, in order, in command
// buffers that the runtime commits without waiting, bounded in dispatches,
// bytes and predicted GPU time (stream.go). The host waits only in Sync,
// in Wait, and when too many command buffers are in flight.
//
// A failed command buffer (out of memory, GPU time-out or preemption, a
// kernel fault) is fatal for the runtime: Metal discards the work queued
// behind it, so every later call returns that error (wrapping errFaulted)
// and the caller must open a new runtime. Errors a call can cause itself
// (a bad dispatch, a refused allocation) are returned by that call and
// leave the runtime usable.
type Runtime interface {
	Caps() Caps
	NewBuffer(bytes int) (Buffer, error)
	// Free releases a buffer. Command buffers still using it keep it alive
	// until they complete, so a buffer may be freed right after the last
	// dispatch that uses it is encoded.
	Free(Buffer)
	Pipeline(name string) (Pipeline, error)
	// Dispatch runs grid threadgroups of group threads; args[i] binds
	// [[buffer(i)]]; tgMem[i] sets the length of [[threadgroup(i)]] memory.
	// It must not retain args or tgMem after returning.
	Dispatch(p Pipeline, grid, group [3]int, args []Arg, tgMem []int) error
	// LastSerial is the serial (1, 2, ...) of the command buffer holding
	// the most recent dispatch; 0 before the first.
	LastSerial() uint64
	// Completed is the newest serial known to have completed, with every
	// earlier one: the runtime polls, it does not wait.
	Completed() uint64
	// Wait blocks until command buffer serial, and every earlier one, has
	// completed, committing it first if it is still open.
	Wait(serial uint64) error
	// Sync commits the open command buffer and waits for all work.
	Sync() error
	// Stats counts dispatches, command buffers and host waits so far.
	Stats() Stats
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

var (
	errClosed   = errors.New("metal: runtime used after Close")
	errNoKernel = errors.New("metal: kernel not in the shader library")
)

// ParavirtualCaps are the caps that the "Apple Paravirtual device" of
// GitHub's hosted macOS arm64 runners reports through supportsFamily:
// Apple5-class (no Apple7, so no simdgroup reductions or matrices: the
// portable flavour), neither Apple6 nor Metal3 (so no bfloat), and a
// recommended working set of 5,010,800,640 bytes (as reported by the
// runners; public probes of macos-14 and macos-15 images). The device is
// backed by Apple silicon and under-reports: the start-up probes
// (probe.go) find what it runs. Tests run the conformance suite on an
// emulated runtime with these caps, with and without probes.
func ParavirtualCaps() Caps {
	return Caps{
		Name: "Apple Paravirtual device", Flavour: Portable, BFloat: false,
		MaxThreadsPerGroup: 1024, ThreadgroupMemory: 32 << 10,
		RecommendedWorkingSet: 5010800640, UnifiedMemory: true,
	}
}

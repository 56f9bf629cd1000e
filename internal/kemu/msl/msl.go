package msl

/*
#cgo CXXFLAGS: -std=c++17 -O2 -Wall -Wextra -Wno-attributes -Wno-unknown-pragmas -Wdouble-promotion
#cgo CXXFLAGS: -fno-fast-math
#cgo CXXFLAGS: -I${SRCDIR}/include -I${SRCDIR}/../../../shaders
#cgo LDFLAGS: -lm -lpthread
#include <stdlib.h>
#include "registry.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/golf-ml/golf/internal/kemu"
)

//go:generate go run ./gen

// Kernel is a compiled kernel of the library (one [[host_name]]).
type Kernel struct {
	name     string
	file     string
	fn       string
	entry    unsafe.Pointer // its golf_emu::KernelEntry
	slots    []Slot
	selftest bool
	threads  int // [[max_total_threads_per_threadgroup(N)]], 0 for none
}

// Slot describes one [[buffer(n)]] parameter of a kernel.
type Slot struct {
	Index int    // n of [[buffer(n)]]
	Param string // the parameter's name in the shader
	// Ref is true for a `constant T&` parameter (one T; Metal's setBytes),
	// false for a pointer.
	Ref bool
	// ElemSize and ElemAlign are sizeof and alignof T: a bound buffer must
	// be at least ElemSize bytes long and aligned to ElemAlign.
	ElemSize  int
	ElemAlign int
}

// Name is the kernel's host name, e.g. "rmsnorm_fwd_simd_float".
func (k *Kernel) Name() string { return k.name }

// File is the .metal file that defines the kernel.
func (k *Kernel) File() string { return k.file }

// Func is the C++ function the name instantiates, e.g. "rmsnorm_fwd_simd<float>".
func (k *Kernel) Func() string { return k.fn }

// MaxTotalThreads is N of the kernel's [[max_total_threads_per_threadgroup(N)]]
// attribute, or 0 without one. golf's kernels carry it exactly when they
// are laid out for a fixed number of threads; Dispatch then requires
// threads per threadgroup to be exactly N, and a real pipeline's
// maxTotalThreadsPerThreadgroup is at most N.
func (k *Kernel) MaxTotalThreads() int { return k.threads }

// Slots lists the kernel's buffer parameters in declaration order.
func (k *Kernel) Slots() []Slot { return append([]Slot(nil), k.slots...) }

var (
	registryOnce sync.Once
	registry     map[string]*Kernel
	libraryNames []string
	probeNames   []string
)

func loadRegistry() {
	registry = map[string]*Kernel{}
	n := int(C.golf_msl_kernel_count())
	for i := 0; i < n; i++ {
		var info C.golf_msl_kernel_info
		C.golf_msl_kernel_get(C.int(i), &info)
		k := &Kernel{
			name:     C.GoString(info.name),
			file:     C.GoString(info.file),
			fn:       C.GoString(info._func),
			entry:    unsafe.Pointer(info.entry),
			selftest: info.selftest != 0,
			threads:  int(info.max_threads),
		}
		for s := 0; s < int(info.nslots); s++ {
			var si C.golf_msl_slot_info
			C.golf_msl_slot_get(C.int(i), C.int(s), &si)
			k.slots = append(k.slots, Slot{
				Index:     int(si.index),
				Param:     C.GoString(si.param),
				Ref:       si.ref != 0,
				ElemSize:  int(si.elem_size),
				ElemAlign: int(si.elem_align),
			})
		}
		registry[k.name] = k
		switch {
		case k.selftest:
		case strings.HasPrefix(k.file, "probe/"):
			probeNames = append(probeNames, k.name)
		default:
			libraryNames = append(libraryNames, k.name)
		}
	}
	sort.Strings(libraryNames)
	sort.Strings(probeNames)
}

// Kernels returns the host names of the library's kernels (the shaders/
// directory), sorted.
func Kernels() []string {
	registryOnce.Do(loadRegistry)
	return append([]string(nil), libraryNames...)
}

// Probes returns the host names of the device probes (shaders/probe),
// sorted. Lookup finds them as it finds the library's kernels.
func Probes() []string {
	registryOnce.Do(loadRegistry)
	return append([]string(nil), probeNames...)
}

// Lookup returns the library kernel with the given host name.
func Lookup(name string) (*Kernel, error) {
	k, err := lookupAny(name)
	if err == nil && k.selftest {
		err = fmt.Errorf("emu: no kernel %q in the library", name)
	}
	return k, err
}

// lookupAny also finds the emulator's self-test kernels.
func lookupAny(name string) (*Kernel, error) {
	registryOnce.Do(loadRegistry)
	k, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("emu: no kernel %q in the library", name)
	}
	return k, nil
}

// SetWorkers sets the number of OS threads that run threadgroups
// concurrently (kemu.SetWorkers: n < 1 restores the default,
// runtime.GOMAXPROCS(0)).
func SetWorkers(n int) { kemu.SetWorkers(n) }

// Workers is the number of OS threads a dispatch uses.
func Workers() int { return kemu.Workers() }

// MaxThreadsPerThreadgroup is the largest threadgroup the emulator runs,
// Metal's limit on Apple GPUs.
const MaxThreadsPerThreadgroup = kemu.MaxThreadsPerGroup

// Dispatch runs kernel name (a library or self-test kernel) like Metal's
// dispatchThreadgroups: groups threadgroups of threads threads each.
// buffers[n] is bound at [[buffer(n)]]; see (*Kernel).Dispatch.
func Dispatch(name string, groups, threads [3]int, buffers [][]byte) error {
	k, err := lookupAny(name)
	if err != nil {
		return err
	}
	return k.Dispatch(groups, threads, buffers)
}

// Dispatch runs k over groups[0]×groups[1]×groups[2] threadgroups of
// threads[0]×threads[1]×threads[2] threads (Metal's dispatchThreadgroups;
// the grid is a whole number of threadgroups). buffers[n] is bound at
// [[buffer(n)]] for the duration of the call; a buffer must be at least one
// element long and aligned for its element type. It returns when every
// threadgroup has finished, or with the first error: a misuse of a
// barrier or a simdgroup function, a deadlock, naming the kernel and the
// threadgroup. A memory fault in a kernel crashes the process.
func (k *Kernel) Dispatch(groups, threads [3]int, buffers [][]byte) error {
	nthreads := 1
	for d := 0; d < 3; d++ {
		if groups[d] < 0 || groups[d] > 1<<31 {
			return fmt.Errorf("emu: kernel %s: threadgroups %v out of range", k.name, groups)
		}
		if threads[d] < 1 || threads[d] > MaxThreadsPerThreadgroup {
			return fmt.Errorf("emu: kernel %s: threads per threadgroup %v out of range", k.name, threads)
		}
		nthreads *= threads[d]
	}
	if nthreads > MaxThreadsPerThreadgroup {
		return fmt.Errorf("emu: kernel %s: %d threads per threadgroup (at most %d)", k.name, nthreads, MaxThreadsPerThreadgroup)
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := make([]unsafe.Pointer, len(buffers)+1)
	for _, s := range k.slots {
		if s.Index >= len(buffers) || len(buffers[s.Index]) == 0 {
			return fmt.Errorf("emu: kernel %s: no buffer bound at index %d (%s)", k.name, s.Index, s.Param)
		}
		b := buffers[s.Index]
		if len(b) < s.ElemSize {
			return fmt.Errorf("emu: kernel %s: buffer %d (%s) is %d bytes, shorter than one element (%d bytes)",
				k.name, s.Index, s.Param, len(b), s.ElemSize)
		}
		p := unsafe.Pointer(&b[0])
		if uintptr(p)%uintptr(s.ElemAlign) != 0 {
			return fmt.Errorf("emu: kernel %s: buffer %d (%s) is not aligned to %d bytes", k.name, s.Index, s.Param, s.ElemAlign)
		}
		if ptrs[s.Index] == nil {
			pin.Pin(p)
			ptrs[s.Index] = p
		}
	}
	var regions []kemu.Region
	if on, _ := kemu.RaceCheck(); on {
		regions = make([]kemu.Region, len(buffers))
		for i, b := range buffers {
			param := "inline bytes"
			for _, s := range k.slots {
				if s.Index == i {
					param = s.Param
				}
			}
			regions[i] = kemu.Region{Mem: b, Label: fmt.Sprintf("buffer %d (%s)", i, param)}
		}
	}
	return kemu.Dispatch(kemu.Kernel{Name: k.name, Entry: k.entry}, groups, threads, ptrs, regions, "threadgroups",
		"a missing threadgroup_barrier (or simdgroup_barrier) between a write and a read of another thread, "+
			"or a read of threadgroup memory that no thread wrote")
}

// SetRaceCheck turns the race detector on or off for the dispatches that
// follow (kemu.SetRaceCheck: process-wide; GOLF_EMU_RACE=<seed> turns it on
// from the start, e.g. `GOLF_EMU_RACE=1 go test ./metal/` runs the whole
// conformance suite under it). With it on, Dispatch runs each dispatch
// three times from the same inputs: with the fibers of every threadgroup
// scheduled in order, in reverse and in a random order drawn from seed;
// every bound buffer must come out bit-identical. A difference is returned
// as an error naming the kernel: threads that exchange data through memory
// without a barrier between the write and the read (a missing
// threadgroup_barrier or simdgroup_barrier), or a read of threadgroup
// memory no thread wrote. The buffers end as the in-order run left them.
func SetRaceCheck(on bool, seed uint64) { kemu.SetRaceCheck(on, seed) }

// RaceEnv is the environment variable that turns the race detector on for
// a whole process.
const RaceEnv = kemu.RaceEnv

// fieldLayout is the C++ layout of one field of an argument struct of
// shaders/golf_args.h.
type fieldLayout struct {
	Struct, Field string
	Offset, Size  int
	StructSize    int
}

// argLayouts returns the layouts of the golf_args.h structs, as the C++
// compiler sees them.
func argLayouts() []fieldLayout {
	n := int(C.golf_msl_layout_count())
	out := make([]fieldLayout, 0, n)
	for i := 0; i < n; i++ {
		var li C.golf_msl_layout_info
		C.golf_msl_layout_get(C.int(i), &li)
		out = append(out, fieldLayout{
			Struct: C.GoString(li._type), Field: C.GoString(li.field),
			Offset: int(li.offset), Size: int(li.size), StructSize: int(li.type_size),
		})
	}
	return out
}

// ContextKind names the fiber context switch in use ("x86-64 asm",
// "arm64 asm" or "ucontext").
func ContextKind() string { return kemu.ContextKind() }

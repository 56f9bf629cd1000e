package kemu

/*
#cgo CXXFLAGS: -std=c++17 -O2 -Wall -Wextra -Wno-attributes -Wno-unknown-pragmas -Wdouble-promotion
#cgo CXXFLAGS: -fno-fast-math
#cgo LDFLAGS: -lm -lpthread
#include <stdlib.h>
#include "kemu.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

var (
	workersMu sync.Mutex
	workers   int
)

// SetWorkers sets the number of OS threads that run threadgroups
// concurrently (n < 1 restores the default, runtime.GOMAXPROCS(0)).
func SetWorkers(n int) {
	workersMu.Lock()
	defer workersMu.Unlock()
	workers = n
}

// Workers is the number of OS threads a dispatch uses.
func Workers() int {
	workersMu.Lock()
	defer workersMu.Unlock()
	if workers < 1 {
		return runtime.GOMAXPROCS(0)
	}
	return workers
}

// MaxThreadsPerGroup is the largest threadgroup (CUDA: block) the runtime
// runs: Metal's limit on Apple GPUs and CUDA's on every NVIDIA GPU.
const MaxThreadsPerGroup = 1024

// Schedules of a threadgroup's fibers (runtime.cc).
const (
	scheduleInOrder = 0
)

var (
	raceMu   sync.Mutex
	raceOn   bool
	raceSeed uint64
)

// SetRaceCheck turns the race detector on or off for the dispatches that
// follow (process-wide, like SetWorkers; GOLF_EMU_RACE=<seed> turns it on
// from the start, e.g. `GOLF_EMU_RACE=1 go test ./metal/` runs the whole
// conformance suite under it). With it on, Dispatch runs each dispatch
// three times from the same inputs: with the fibers of every threadgroup
// scheduled in order, in reverse (the highest thread index first between
// synchronisation points) and in a random order drawn from seed; every
// region it is given must come out bit-identical. A difference is
// returned as an error naming the kernel: threads that exchange data
// through memory without a barrier between the write and the read, or a
// read of threadgroup memory no thread wrote. It costs three dispatches and
// a copy of every region per dispatch; the regions end as the in-order run
// left them.
func SetRaceCheck(on bool, seed uint64) {
	raceMu.Lock()
	defer raceMu.Unlock()
	raceOn, raceSeed = on, seed
}

// RaceEnv is the environment variable that turns the race detector on for
// a whole process (a test run of the conformance suite, say): a nonzero
// integer, the seed of the random schedule. The CUDA stand-in driver reads
// it too.
const RaceEnv = "GOLF_EMU_RACE"

// ParseRaceEnv parses a value of RaceEnv.
func ParseRaceEnv(v string) (uint64, error) {
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil || seed == 0 {
		return 0, fmt.Errorf("%s=%q: want a nonzero integer seed", RaceEnv, v)
	}
	return seed, nil
}

func init() {
	if v := os.Getenv(RaceEnv); v != "" {
		seed, err := ParseRaceEnv(v)
		if err != nil {
			panic("kemu: " + err.Error())
		}
		SetRaceCheck(true, seed)
	}
}

// RaceCheck reports whether the race detector is on, and its seed.
func RaceCheck() (bool, uint64) {
	raceMu.Lock()
	defer raceMu.Unlock()
	return raceOn, raceSeed
}

// Region is memory a dispatch may write, compared by the race detector;
// Label names it in an error ("buffer 0 (out)").
type Region struct {
	Mem   []byte
	Label string
}

// Kernel is a kernel of a generated registry: Entry points at its C++
// golf_emu::KernelEntry (static data of the registry's package).
type Kernel struct {
	Name  string
	Entry unsafe.Pointer
}

// Dispatch runs k over groups threadgroups of threads threads; the
// trampoline gets args (pointers that stay valid, and pinned if they point
// into Go memory, for the duration of the call). With the race detector on
// (SetRaceCheck) it runs the dispatch under three schedules and compares
// regions, naming unit ("threadgroups") and hint (the likely missing
// synchronisation) in an error. Errors are the runtime's: a misuse of a
// barrier or a collective, a deadlock, naming the kernel and the
// threadgroup.
func Dispatch(k Kernel, groups, threads [3]int, args []unsafe.Pointer, regions []Region, unit, hint string) error {
	var g, t [3]C.uint32_t
	for d := 0; d < 3; d++ {
		g[d], t[d] = C.uint32_t(groups[d]), C.uint32_t(threads[d])
	}
	var argp *unsafe.Pointer
	if len(args) > 0 {
		argp = &args[0]
	}
	errBuf := make([]byte, 2048)
	errp := (*C.char)(unsafe.Pointer(&errBuf[0]))
	var rc C.int
	if on, seed := RaceCheck(); on {
		var pin runtime.Pinner
		defer pin.Unpin()
		cr := make([]C.golf_emu_region, len(regions))
		for i, r := range regions {
			label := C.CString(r.Label)
			defer C.free(unsafe.Pointer(label))
			cr[i] = C.golf_emu_region{len: C.size_t(len(r.Mem)), label: label}
			if len(r.Mem) > 0 {
				p := unsafe.Pointer(&r.Mem[0])
				pin.Pin(p)
				cr[i].ptr = p
			}
		}
		var crp *C.golf_emu_region
		if len(cr) > 0 {
			crp = &cr[0]
		}
		cunit, chint := C.CString(unit), C.CString(hint)
		defer C.free(unsafe.Pointer(cunit))
		defer C.free(unsafe.Pointer(chint))
		rc = C.golf_emu_dispatch_race(k.Entry, &g[0], &t[0], argp, C.int(len(args)), C.int(Workers()),
			C.uint64_t(seed), crp, C.int(len(cr)), cunit, chint, errp, C.size_t(len(errBuf)))
	} else {
		rc = C.golf_emu_dispatch(k.Entry, &g[0], &t[0], argp, C.int(len(args)), C.int(Workers()),
			scheduleInOrder, 0, errp, C.size_t(len(errBuf)))
	}
	if rc != 0 {
		return fmt.Errorf("emu: %s", C.GoString(errp))
	}
	return nil
}

// ContextKind names the fiber context switch in use ("x86-64 asm",
// "arm64 asm" or "ucontext").
func ContextKind() string { return C.GoString(C.golf_emu_context_kind()) }

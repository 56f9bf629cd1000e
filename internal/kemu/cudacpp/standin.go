package cudacpp

import (
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/golf-ml/golf/internal/dl"
)

// Stats are the stand-in driver's counters (golf_standin_stats in
// driver.cc), read by tests beside the backend's own.
type Stats struct {
	Launches uint64
	// Syncs counts synchronising calls (cuStreamSynchronize,
	// cuEventSynchronize, cuCtxSynchronize); BlockingSyncs those that
	// found work still queued, so that the host waited for the device.
	Syncs, BlockingSyncs uint64
	// NotReady counts cuEventQuery calls that found work still queued.
	NotReady uint64
	// Allocs and Frees count cuMemAlloc and cuMemFree.
	Allocs, Frees uint64
	// ImplicitSyncs counts frees and unloads that had to run queued work.
	ImplicitSyncs uint64
	// HostAllocs counts cuMemAllocHost.
	HostAllocs uint64
	// HtoDBytes and DtoHBytes are the bytes of asynchronous copies.
	HtoDBytes, DtoHBytes uint64
	Copies, Memsets      uint64
	Matmuls              uint64 // cublasLtMatmul
	OpsRun               uint64 // queued operations run
}

// Sub returns s − t.
func (s Stats) Sub(t Stats) Stats {
	return Stats{
		s.Launches - t.Launches, s.Syncs - t.Syncs, s.BlockingSyncs - t.BlockingSyncs, s.NotReady - t.NotReady,
		s.Allocs - t.Allocs, s.Frees - t.Frees, s.ImplicitSyncs - t.ImplicitSyncs, s.HostAllocs - t.HostAllocs,
		s.HtoDBytes - t.HtoDBytes, s.DtoHBytes - t.DtoHBytes, s.Copies - t.Copies, s.Memsets - t.Memsets,
		s.Matmuls - t.Matmuls, s.OpsRun - t.OpsRun,
	}
}

// Handle reaches the stand-in's own calls (beside the driver API that
// golf's binding loads from the same library).
type Handle struct {
	stats     func(out *uint64, n int32)
	lastError func() *byte
	kernels   func() *byte
	runs      func() *byte
	resources func(fn uintptr, regs, maxThreads, shared *int32) int32
	nccl      func(out *uint64, n int32)
}

// Open opens the stand-in of a built Library (the same loaded object as
// the driver golf's loader opens from lib.Dir).
func Open(lib Library) (*Handle, error) {
	h, err := dl.Open(filepath.Join(lib.Dir, DriverName), purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("cudacpp: opening the stand-in: %w", err)
	}
	s := &Handle{}
	for _, b := range []struct {
		name string
		fn   any
	}{
		{"golf_standin_stats", &s.stats},
		{"golf_standin_last_error", &s.lastError},
		{"golf_standin_kernels", &s.kernels},
		{"golf_standin_kernel_runs", &s.runs},
		{"golf_standin_function_resources", &s.resources},
		{"golf_standin_nccl_stats", &s.nccl},
	} {
		sym, err := purego.Dlsym(h, b.name)
		if err != nil {
			return nil, fmt.Errorf("cudacpp: %s is not a stand-in driver: %w", lib.Dir, err)
		}
		purego.RegisterFunc(b.fn, sym)
	}
	return s, nil
}

// Stats reads the counters.
func (h *Handle) Stats() Stats {
	var v [14]uint64
	h.stats(&v[0], int32(len(v)))
	return Stats{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13]}
}

// NCCLStats are the stand-in NCCL's counters (golf_standin_nccl_stats in
// nccl.cc).
type NCCLStats struct {
	// Inits counts communicators initialised; Collectives the collectives
	// run to completion, Failures those that failed.
	Inits, Collectives uint64
	// AllReduces, Broadcasts, ReduceScatters and AllGathers count the
	// collectives queued, Bytes their send buffers' bytes.
	AllReduces, Broadcasts, ReduceScatters, AllGathers uint64
	Bytes                                              uint64
	Failures, Aborts                                   uint64
}

// NCCLStats reads the stand-in NCCL's counters (this process's).
func (h *Handle) NCCLStats() NCCLStats {
	var v [9]uint64
	h.nccl(&v[0], int32(len(v)))
	return NCCLStats{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]}
}

// LastError is the message of the stand-in's latest failure ("" if none).
func (h *Handle) LastError() string { return cString(h.lastError()) }

// Kernels lists the emulated kernels.
func (h *Handle) Kernels() []string {
	return strings.Fields(cString(h.kernels()))
}

// KernelRuns counts, by kernel name, the launches that have run to
// completion on the emulator (queued launches count once the host waits
// for them).
func (h *Handle) KernelRuns() map[string]uint64 {
	out := map[string]uint64{}
	for _, line := range strings.Split(cString(h.runs()), "\n") {
		var name string
		var n uint64
		if _, err := fmt.Sscanf(line, "%s %d", &name, &n); err == nil {
			out[name] = n
		}
	}
	return out
}

// FunctionResources is what the stand-in read from the cubin for a
// function handle (a cuda.Function): registers, launch bounds (x·y·z, 0
// without), static shared memory.
func (h *Handle) FunctionResources(fn uintptr) (regs, maxThreads, shared int, err error) {
	var r, m, s int32
	if rc := h.resources(fn, &r, &m, &s); rc != 0 {
		return 0, 0, 0, fmt.Errorf("cudacpp: 0x%x is not a function of the stand-in", fn)
	}
	return int(r), int(m), int(s), nil
}

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

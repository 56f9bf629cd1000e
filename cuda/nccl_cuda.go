//go:build cuda

package cuda

import (
	"sync"

	"github.com/ebitengine/purego"
)

// The NCCL binding: libnccl.so.2 opened with purego, like the driver, NVRTC
// and cuBLASLt, once per process (LoadNCCL).
//
// Threads and contexts. NCCL runs on the CUDA runtime, which shares the
// device's primary context with golf's Context. These calls need the
// device's context current on the calling thread, so run them inside
// Context.Do: CommInitRank and CommInitRankConfig (the communicator takes
// the current device), AllReduce, Broadcast and GroupEnd (they enqueue on
// a stream of that context), CommFinalize and CommDestroy (they wait for
// and free the communicator's device work and memory). Version,
// GetErrorString, GetUniqueID, CommCount and CommUserRank need no device.
//
// CommGetAsyncError and CommAbort may be called from any goroutine, in
// particular from a watchdog while another goroutine (the context's
// thread) is blocked in a collective, in CommInitRank or in a stream
// synchronisation waiting for a peer that is gone: CommGetAsyncError reads
// the communicator's error without waiting, and CommAbort ends its
// outstanding work on the device and frees it, which makes the blocked
// calls return. A communicator must not be used after CommAbort or
// CommDestroy.

// symbols are the entry points golf binds, each with the field it fills.
func (n *NCCL) symbols() []symbol {
	return []symbol{
		{"ncclGetVersion", &n.getVersion, false},
		{"ncclGetUniqueId", &n.getUniqueID, false},
		{"ncclCommInitRankConfig", &n.commInitRankConfig, false},
		{"ncclCommInitRank", &n.commInitRank, false},
		{"ncclAllReduce", &n.allReduce, false},
		{"ncclBroadcast", &n.broadcast, false},
		{"ncclGroupStart", &n.groupStart, false},
		{"ncclGroupEnd", &n.groupEnd, false},
		{"ncclCommGetAsyncError", &n.commGetAsyncError, false},
		{"ncclCommAbort", &n.commAbort, false},
		{"ncclCommDestroy", &n.commDestroy, false},
		{"ncclCommFinalize", &n.commFinalize, false},
		{"ncclCommCount", &n.commCount, false},
		{"ncclCommUserRank", &n.commUserRank, false},
		{"ncclGetErrorString", &n.getErrorString, false},
		{"ncclGetLastError", &n.getLastError, false},
	}
}

// ncclSymbols are the names of every NCCL function golf binds.
func ncclSymbols() []string {
	var n NCCL
	syms := n.symbols()
	names := make([]string, len(syms))
	for i, s := range syms {
		names[i] = s.name
	}
	return names
}

var loadNCCLOnce = sync.OnceValues(func() (*NCCL, error) { return loadNCCLFrom(DefaultSearchEnv()) })

// LoadNCCL finds, opens and checks libnccl.so.2 once per process: the
// search of LibNCCL (GOLF_CUDA_LIB_PATH, the bare soname, PyTorch's pip
// layout nvidia/nccl/lib, the system), every required symbol bound, and
// ncclGetVersion at least MinNCCL. When no copy does, the error lists
// every path tried and why each failed.
func LoadNCCL() (*NCCL, error) { return loadNCCLOnce() }

// loadNCCLFrom is LoadNCCL's search over env, without the once.
func loadNCCLFrom(env SearchEnv) (*NCCL, error) {
	n := &NCCL{}
	_, path, err := openLibrary(LibNCCL, env, purego.RTLD_NOW|purego.RTLD_LOCAL, n.check)
	if err != nil {
		return nil, err
	}
	n.Path = loadedPath(path)
	return n, nil
}

func (n *NCCL) check(h uintptr, path string) error {
	if err := bindSymbols(h, n.symbols()); err != nil {
		return err
	}
	var v int32
	if err := n.err("ncclGetVersion", n.getVersion(&v), 0); err != nil {
		return err
	}
	n.version = int(v)
	if n.version < MinNCCL {
		return &TooOldError{Found: ncclVersionString(n.version), Need: ncclVersionString(MinNCCL)}
	}
	return nil
}

// err turns a failed ncclResult_t into an *NCCLError; comm (0 for none,
// and after the communicator is freed) is the one whose last error NCCL
// is asked for.
func (n *NCCL) err(call string, r int32, comm NCCLComm) error {
	if r == int32(NCCLSuccess) {
		return nil
	}
	return &NCCLError{Call: call, Code: NCCLResult(r),
		Text: ncclErrorText(goString(n.getErrorString(r)), goString(n.getLastError(uintptr(comm))))}
}

// Version is ncclGetVersion's code, read at load: NCCL_VERSION_CODE of
// the library (22203 for 2.22.3).
func (n *NCCL) Version() int { return n.version }

// VersionString is the library's version, as "2.22.3".
func (n *NCCL) VersionString() string { return ncclVersionString(n.version) }

// GetErrorString is ncclGetErrorString: NCCL's description of r.
func (n *NCCL) GetErrorString(r NCCLResult) string { return goString(n.getErrorString(int32(r))) }

// LastError is ncclGetLastError: NCCL's message about the last error on
// comm (0: in the process), "" when there is none.
func (n *NCCL) LastError(comm NCCLComm) string { return goString(n.getLastError(uintptr(comm))) }

// GetUniqueID is ncclGetUniqueId: rank 0 creates the id (it opens NCCL's
// bootstrap listener) and hands it to every rank.
func (n *NCCL) GetUniqueID() (NCCLUniqueID, error) {
	var id NCCLUniqueID
	err := n.err("ncclGetUniqueId", n.getUniqueID(&id), 0)
	return id, err
}

// CommInitRankConfig is ncclCommInitRankConfig: this process's rank of
// nranks joins the communicator of id, on the device whose context is
// current (call it inside Context.Do), with cfg (nil: NCCL's defaults;
// else a DefaultNCCLConfig with attributes set). A blocking communicator
// returns when every rank has joined.
func (n *NCCL) CommInitRankConfig(nranks int, id NCCLUniqueID, rank int, cfg *NCCLConfig) (NCCLComm, error) {
	var c uintptr
	r := n.commInitRankConfig(&c, int32(nranks), ncclUniqueIDArg{id}, int32(rank), cfg)
	if err := n.err("ncclCommInitRankConfig", r, 0); err != nil {
		return 0, err
	}
	return NCCLComm(c), nil
}

// CommInitRank is ncclCommInitRank: CommInitRankConfig with NCCL's
// default (blocking) configuration.
func (n *NCCL) CommInitRank(nranks int, id NCCLUniqueID, rank int) (NCCLComm, error) {
	var c uintptr
	if err := n.err("ncclCommInitRank", n.commInitRank(&c, int32(nranks), ncclUniqueIDArg{id}, int32(rank)), 0); err != nil {
		return 0, err
	}
	return NCCLComm(c), nil
}

// AllReduce is ncclAllReduce: count elements of dt at send, reduced with
// op over every rank, into recv (in place when recv == send), enqueued on
// s after the work queued on s before it; it returns once enqueued (call
// it inside Context.Do).
func (n *NCCL) AllReduce(send, recv DevicePtr, count uint64, dt NCCLDataType, op NCCLRedOp, comm NCCLComm, s Stream) error {
	return n.err("ncclAllReduce", n.allReduce(uint64(send), uint64(recv), count, int32(dt), int32(op), uintptr(comm), uintptr(s)), comm)
}

// Broadcast is ncclBroadcast: count elements of dt at root's send copied
// into every rank's recv (in place when recv == send), enqueued on s as
// AllReduce is.
func (n *NCCL) Broadcast(send, recv DevicePtr, count uint64, dt NCCLDataType, root int, comm NCCLComm, s Stream) error {
	return n.err("ncclBroadcast", n.broadcast(uint64(send), uint64(recv), count, int32(dt), int32(root), uintptr(comm), uintptr(s)), comm)
}

// GroupStart is ncclGroupStart: the calls until GroupEnd are fused.
func (n *NCCL) GroupStart() error { return n.err("ncclGroupStart", n.groupStart(), 0) }

// GroupEnd is ncclGroupEnd: the group's operations are enqueued (call it
// inside Context.Do).
func (n *NCCL) GroupEnd() error { return n.err("ncclGroupEnd", n.groupEnd(), 0) }

// CommGetAsyncError is ncclCommGetAsyncError: the communicator's
// asynchronous error (NCCLSuccess while healthy, NCCLInProgress while a
// non-blocking call runs). It does not wait, and may be called from any
// goroutine while another is blocked on comm. The error is that of the
// call itself.
func (n *NCCL) CommGetAsyncError(comm NCCLComm) (NCCLResult, error) {
	var r int32
	if err := n.err("ncclCommGetAsyncError", n.commGetAsyncError(uintptr(comm), &r), comm); err != nil {
		return NCCLSuccess, err
	}
	return NCCLResult(r), nil
}

// CommAbort is ncclCommAbort: the communicator's outstanding operations
// are aborted and it is freed. It may be called from any goroutine (a
// watchdog) while another is blocked in a call on comm.
func (n *NCCL) CommAbort(comm NCCLComm) error {
	return n.err("ncclCommAbort", n.commAbort(uintptr(comm)), 0)
}

// CommDestroy is ncclCommDestroy: it waits for the communicator's work
// and frees it (call it inside Context.Do).
func (n *NCCL) CommDestroy(comm NCCLComm) error {
	return n.err("ncclCommDestroy", n.commDestroy(uintptr(comm)), 0)
}

// CommFinalize is ncclCommFinalize: it flushes the communicator's
// operations (on a blocking communicator it returns when done), after
// which CommDestroy frees it without blocking (call it inside
// Context.Do).
func (n *NCCL) CommFinalize(comm NCCLComm) error {
	return n.err("ncclCommFinalize", n.commFinalize(uintptr(comm)), comm)
}

// CommCount is ncclCommCount: the communicator's number of ranks.
func (n *NCCL) CommCount(comm NCCLComm) (int, error) {
	var c int32
	err := n.err("ncclCommCount", n.commCount(uintptr(comm), &c), comm)
	return int(c), err
}

// CommUserRank is ncclCommUserRank: this process's rank in comm.
func (n *NCCL) CommUserRank(comm NCCLComm) (int, error) {
	var r int32
	err := n.err("ncclCommUserRank", n.commUserRank(uintptr(comm), &r), comm)
	return int(r), err
}

package cuda

import (
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// NCCL's interface as golf uses it: the types, constants and errors of
// nccl.h (NCCL 2.22), shared by the binding (nccl_cuda.go, tag cuda) and
// whatever reads them without it. Every value here is checked against the
// real nccl.h of NCCL 2.22 and every bound name against the real
// libnccl.so.2's exported symbols (nccl_cuda_test.go, scripts/ci/trixie_libs.sh).

// NCCLUniqueIDBytes is NCCL_UNIQUE_ID_BYTES.
const NCCLUniqueIDBytes = 128

// NCCLUniqueID is ncclUniqueId: the rendezvous token rank 0 creates with
// GetUniqueID and every rank passes to CommInitRank. Its bytes are opaque
// and travel as they are.
type NCCLUniqueID [NCCLUniqueIDBytes]byte

// NCCLComm is an ncclComm_t; 0 is NCCL_COMM_NULL.
type NCCLComm uintptr

// NCCLDataType is an ncclDataType_t.
type NCCLDataType int32

// The data types of nccl.h (ncclBfloat16 exists with CUDA 11's bf16).
const (
	NCCLInt8     NCCLDataType = 0
	NCCLUint8    NCCLDataType = 1
	NCCLInt32    NCCLDataType = 2
	NCCLUint32   NCCLDataType = 3
	NCCLInt64    NCCLDataType = 4
	NCCLUint64   NCCLDataType = 5
	NCCLFloat16  NCCLDataType = 6
	NCCLFloat32  NCCLDataType = 7
	NCCLFloat64  NCCLDataType = 8
	NCCLBfloat16 NCCLDataType = 9
)

var ncclDataTypeNames = [...]string{"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64",
	"ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16"}

func (t NCCLDataType) String() string {
	if t >= 0 && int(t) < len(ncclDataTypeNames) {
		return ncclDataTypeNames[t]
	}
	return fmt.Sprintf("ncclDataType_t(%d)", int32(t))
}

// Size is the bytes of one element of t, 0 for an unknown type.
func (t NCCLDataType) Size() int {
	switch t {
	case NCCLInt8, NCCLUint8:
		return 1
	case NCCLFloat16, NCCLBfloat16:
		return 2
	case NCCLInt32, NCCLUint32, NCCLFloat32:
		return 4
	case NCCLInt64, NCCLUint64, NCCLFloat64:
		return 8
	}
	return 0
}

// NCCLRedOp is an ncclRedOp_t (the built-in ones).
type NCCLRedOp int32

const (
	NCCLSum  NCCLRedOp = 0
	NCCLProd NCCLRedOp = 1
	NCCLMax  NCCLRedOp = 2
	NCCLMin  NCCLRedOp = 3
	NCCLAvg  NCCLRedOp = 4
)

var ncclRedOpNames = [...]string{"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"}

func (o NCCLRedOp) String() string {
	if o >= 0 && int(o) < len(ncclRedOpNames) {
		return ncclRedOpNames[o]
	}
	return fmt.Sprintf("ncclRedOp_t(%d)", int32(o))
}

// NCCLResult is an ncclResult_t.
type NCCLResult int32

const (
	NCCLSuccess            NCCLResult = 0
	NCCLUnhandledCudaError NCCLResult = 1
	NCCLSystemError        NCCLResult = 2
	NCCLInternalError      NCCLResult = 3
	NCCLInvalidArgument    NCCLResult = 4
	NCCLInvalidUsage       NCCLResult = 5
	NCCLRemoteError        NCCLResult = 6
	// NCCLInProgress is a non-blocking communicator's "not done yet"; the
	// blocking communicators golf creates do not return it.
	NCCLInProgress NCCLResult = 7
)

var ncclResultNames = [...]string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError",
	"ncclInternalError", "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"}

func (r NCCLResult) String() string {
	if r >= 0 && int(r) < len(ncclResultNames) {
		return ncclResultNames[r]
	}
	return fmt.Sprintf("ncclResult_t(%d)", int32(r))
}

// NCCLError is a failed NCCL call: the call, its ncclResult_t, and Text:
// ncclGetErrorString's description of the code, followed, when NCCL has
// one, by "; last error: " and ncclGetLastError's message (which names
// what went wrong: a peer, a socket, a CUDA call).
type NCCLError struct {
	Call string
	Code NCCLResult
	Text string
}

func (e *NCCLError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Code, int32(e.Code))
	}
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Call, e.Code, int32(e.Code), e.Text)
}

// ncclErrorText is NCCLError.Text from the two strings NCCL gives.
func ncclErrorText(errorString, lastError string) string {
	switch {
	case lastError == "":
		return errorString
	case errorString == "":
		return "last error: " + lastError
	}
	return errorString + "; last error: " + lastError
}

// NCCLVersionCode is NCCL_VERSION_CODE of the nccl.h this binding mirrors
// (2.22.3); NCCLConfig is that header's ncclConfig_t.
const NCCLVersionCode = 22203

// MinNCCL is the oldest NCCL golf accepts (ncclGetVersion): 2.18, the
// first whose ncclConfig_t has every field of NCCLConfig (splitShare).
const MinNCCL = 21800

// NCCLVersion is nccl.h's NCCL_VERSION(x, y, z).
func NCCLVersion(x, y, z int) int {
	if x <= 2 && y <= 8 {
		return x*1000 + y*100 + z
	}
	return x*10000 + y*100 + z
}

// ncclVersionString spells an ncclGetVersion code (22203 → 2.22.3).
func ncclVersionString(v int) string {
	if v < 10000 {
		return fmt.Sprintf("%d.%d.%d", v/1000, v/100%10, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// NCCLConfigUndefInt is NCCL_CONFIG_UNDEF_INT (INT_MIN): the attribute is
// left to NCCL's default (or its environment variable).
const NCCLConfigUndefInt = math.MinInt32

// ncclConfigMagic is the magic of NCCL_CONFIG_INITIALIZER.
const ncclConfigMagic = 0xcafebeef

// NCCLConfig is ncclConfig_t of NCCL 2.22 (struct ncclConfig_v21700),
// field for field, with C's layout on 64-bit Linux (48 bytes). Make one
// with DefaultNCCLConfig (NCCL_CONFIG_INITIALIZER) and set what you need;
// NCCL refuses a config whose Size, Magic and Version the initialiser did
// not set.
type NCCLConfig struct {
	Size    uintptr // size_t size: sizeof(ncclConfig_t)
	Magic   uint32  // unsigned int magic
	Version uint32  // unsigned int version: NCCL_VERSION_CODE of the header
	// Blocking is 1 for a communicator whose calls return when done (the
	// default), 0 for a non-blocking one (calls may return
	// NCCLInProgress).
	Blocking       int32
	CGAClusterSize int32
	MinCTAs        int32
	MaxCTAs        int32
	// NetName (const char *netName) is a NUL-terminated network plugin
	// name or nil; the caller keeps its bytes alive while the communicator
	// lives.
	NetName    *byte
	SplitShare int32
}

// DefaultNCCLConfig is NCCL_CONFIG_INITIALIZER: the size of the struct,
// the magic, the header's version, every attribute undefined.
func DefaultNCCLConfig() NCCLConfig {
	return NCCLConfig{
		Size:           unsafe.Sizeof(NCCLConfig{}),
		Magic:          ncclConfigMagic,
		Version:        uint32(NCCLVersion(2, 22, 3)),
		Blocking:       NCCLConfigUndefInt,
		CGAClusterSize: NCCLConfigUndefInt,
		MinCTAs:        NCCLConfigUndefInt,
		MaxCTAs:        NCCLConfigUndefInt,
		NetName:        nil,
		SplitShare:     NCCLConfigUndefInt,
	}
}

// NCCL is the NCCL library, loaded with LoadNCCL (tag cuda): the file it
// was loaded from, its version and the bound entry points. The methods are
// in nccl_cuda.go.
type NCCL struct {
	Path    string
	version int // ncclGetVersion

	getVersion         func(v *int32) int32
	getUniqueID        func(id *NCCLUniqueID) int32
	commInitRankConfig func(comm *uintptr, nranks int32, id ncclUniqueIDArg, rank int32, cfg *NCCLConfig) int32
	commInitRank       func(comm *uintptr, nranks int32, id ncclUniqueIDArg, rank int32) int32
	allReduce          func(send, recv uint64, count uint64, dt int32, op int32, comm, stream uintptr) int32
	broadcast          func(send, recv uint64, count uint64, dt int32, root int32, comm, stream uintptr) int32
	groupStart         func() int32
	groupEnd           func() int32
	commGetAsyncError  func(comm uintptr, r *int32) int32
	commAbort          func(comm uintptr) int32
	commDestroy        func(comm uintptr) int32
	commFinalize       func(comm uintptr) int32
	commCount          func(comm uintptr, n *int32) int32
	commUserRank       func(comm uintptr, rank *int32) int32
	getErrorString     func(r int32) *byte
	getLastError       func(comm uintptr) *byte
}

// ncclUniqueIDArg is ncclUniqueId as a C argument passed by value (a
// struct of 128 bytes: on the stack on amd64, as a pointer to a copy on
// arm64, which purego arranges for a Go struct).
type ncclUniqueIDArg struct{ internal [NCCLUniqueIDBytes]byte }

// commState is the NCCL communicator a Backend has joined (JoinComm in
// nccl_backend.go, tag cuda). mu guards it: the calls any goroutine may
// make (CommAbort, CommError) read it under mu, and LeaveComm and
// CommAbort clear it there, so no call is handed a freed communicator.
type commState struct {
	mu      sync.Mutex
	lib     *NCCL
	comm    NCCLComm // 0: none
	rank    int
	nranks  int
	aborted bool
	// The communicator's own stream, and the events that order it with
	// the backend's: after records on the backend's stream, before on
	// its own (each wait takes the record as of its call, so one event
	// of each serves every pair).
	stream        Stream
	before, after Event
}

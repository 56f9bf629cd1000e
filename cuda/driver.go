package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// The CUDA driver API as the backend uses it. Driver is the small
// interface over libcuda.so.1 that the real binding (driver_cuda.go, tag
// cuda) implements and a stand-in driver can implement for tests; the
// backend's host code talks to a Context, which runs every call on the one
// OS thread where the device's context is current.

// Opaque driver handles (CUdevice, CUcontext, CUmodule, CUfunction,
// CUstream, CUevent) and device addresses (CUdeviceptr).
type (
	Device    int32
	CtxHandle uintptr
	Module    uintptr
	Function  uintptr
	Stream    uintptr
	Event     uintptr
	DevicePtr uint64
)

// DeviceAttr is a CUdevice_attribute (cuda.h; the same values in CUDA 11,
// 12 and 13).
type DeviceAttr int32

const (
	AttrMaxThreadsPerBlock      DeviceAttr = 1
	AttrMaxRegistersPerBlock    DeviceAttr = 12
	AttrMultiprocessorCount     DeviceAttr = 16
	AttrL2CacheSize             DeviceAttr = 38
	AttrComputeCapabilityMajor  DeviceAttr = 75
	AttrComputeCapabilityMinor  DeviceAttr = 76
	AttrMaxSharedPerSM          DeviceAttr = 81
	AttrMaxSharedPerBlockOptin  DeviceAttr = 97
	AttrReservedSharedPerBlock  DeviceAttr = 111
	AttrMemoryClockRate         DeviceAttr = 36
	AttrGlobalMemoryBusWidth    DeviceAttr = 37
	AttrClockRate               DeviceAttr = 13
	AttrMaxThreadsPerSM         DeviceAttr = 39
	AttrMaxSharedPerBlockStatic DeviceAttr = 8
)

// FuncAttr is a CUfunction_attribute.
type FuncAttr int32

const (
	FuncMaxThreadsPerBlock   FuncAttr = 0
	FuncSharedSizeBytes      FuncAttr = 1
	FuncLocalSizeBytes       FuncAttr = 3
	FuncNumRegs              FuncAttr = 4
	FuncMaxDynamicSharedSize FuncAttr = 8
)

// Stream and event flags.
const (
	StreamNonBlocking    = 0x1 // CU_STREAM_NON_BLOCKING
	EventDisableTiming   = 0x2 // CU_EVENT_DISABLE_TIMING
	EventDefault         = 0x0
	MemHostAllocPortable = 0x1 // CU_MEMHOSTALLOC_PORTABLE
)

// Driver is the driver API: one method per call the backend makes, each
// returning a *DriverError for a failed CUresult. Apart from Init,
// DriverVersion and the device queries, calls need the device's context
// current on the calling OS thread: use them through a Context.
type Driver interface {
	Init() error
	DriverVersion() (int, error)
	DeviceCount() (int, error)
	DeviceGet(ordinal int) (Device, error)
	DeviceName(d Device) (string, error)
	DeviceTotalMem(d Device) (uint64, error)
	DeviceAttribute(d Device, a DeviceAttr) (int, error)
	PrimaryCtxRetain(d Device) (CtxHandle, error)
	PrimaryCtxRelease(d Device) error
	CtxSetCurrent(c CtxHandle) error
	CtxSynchronize() error

	ModuleLoadData(image []byte) (Module, error)
	ModuleUnload(m Module) error
	ModuleGetFunction(m Module, name string) (Function, error)
	FuncGetAttribute(f Function, a FuncAttr) (int, error)
	FuncSetAttribute(f Function, a FuncAttr, v int) error
	// LaunchKernel launches f with 1-D blocks of block threads on grid
	// blocks; params holds one pointer per kernel parameter, to its value
	// (a DevicePtr for a pointer parameter, the argument struct for the
	// last one), read by the driver before LaunchKernel returns.
	LaunchKernel(f Function, grid [3]uint32, block [3]uint32, sharedMem uint32, s Stream, params []unsafe.Pointer) error

	MemAlloc(bytes uint64) (DevicePtr, error)
	MemFree(p DevicePtr) error
	// MemAllocHost allocates page-locked host memory, the staging buffers
	// of asynchronous copies.
	MemAllocHost(bytes uint64) (unsafe.Pointer, error)
	MemFreeHost(p unsafe.Pointer) error
	MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, bytes uint64, s Stream) error
	MemcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, bytes uint64, s Stream) error
	MemcpyDtoDAsync(dst, src DevicePtr, bytes uint64, s Stream) error
	MemsetD8Async(dst DevicePtr, v byte, bytes uint64, s Stream) error

	StreamCreate(flags uint32) (Stream, error)
	StreamDestroy(s Stream) error
	StreamSynchronize(s Stream) error
	EventCreate(flags uint32) (Event, error)
	EventDestroy(e Event) error
	EventRecord(e Event, s Stream) error
	// StreamWaitEvent makes the work queued on s after it wait for the
	// work before e's latest record (cuStreamWaitEvent; the host does
	// not wait).
	StreamWaitEvent(s Stream, e Event) error
	EventSynchronize(e Event) error
	// EventQuery returns nil when the work before e's record has run,
	// ErrNotReady while it has not (cuEventQuery: the host does not wait).
	EventQuery(e Event) error
	EventElapsedTime(start, end Event) (float32, error)
}

// ErrNotReady is EventQuery's answer while an event's work is still queued
// (CUDA_ERROR_NOT_READY, which is not a failure).
var ErrNotReady = errors.New("cuda: the event's work has not completed (CUDA_ERROR_NOT_READY)")

// DriverError is a failed driver call: its CUresult and the driver's name
// and description of it.
type DriverError struct {
	Call       string
	Code       int
	Name, Text string
}

func (e *DriverError) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Call, e.Name, e.Code, e.Text)
}

// DeviceInfo is what `golf info --backend cuda` prints and the backend
// plans with.
type DeviceInfo struct {
	Ordinal              int
	Name                 string
	TotalMem             uint64
	Major, Minor         int // compute capability
	SMs                  int
	SharedPerBlockOptin  int
	DriverVersion        int // e.g. 12040 for 12.4
	MaxThreadsPerBlock   int
	RegistersPerBlock    int
	SharedPerSM          int
	ReservedSharedPerBlk int
}

// Arch is the device's sm_XX.
func (d DeviceInfo) Arch() string { return fmt.Sprintf("sm_%d%d", d.Major, d.Minor) }

// Context is one device's context on one locked OS thread: Do hands a
// function to that thread and waits for it, so every driver call of the
// backend runs where the context is current (the driver keeps the current
// context per thread, and a goroutine may otherwise move between threads
// between two calls). It uses the device's primary context (the one every
// library on the device, cuBLASLt included, shares).
type Context struct {
	drv    Driver
	Info   DeviceInfo
	dev    Device
	handle CtxHandle
	calls  chan func()
	closed chan struct{}
	once   sync.Once
}

// OpenContext initialises the driver, reads device ordinal's facts
// (refusing a device older than MinCompute), retains its primary context
// and makes it current on a new locked OS thread.
func OpenContext(drv Driver, ordinal int) (*Context, error) {
	c := &Context{drv: drv, calls: make(chan func()), closed: make(chan struct{})}
	ready := make(chan error)
	go c.loop(ordinal, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return c, nil
}

// MinCompute is the oldest compute capability (major, minor) golf runs on.
var MinCompute = [2]int{8, 0}

// loop is the context's thread: it locks itself to its OS thread (and
// never unlocks, so the thread ends with the goroutine), opens the
// context, then runs calls until Close.
func (c *Context) loop(ordinal int, ready chan<- error) {
	runtime.LockOSThread()
	if err := c.open(ordinal); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case f := <-c.calls:
			f()
		case <-c.closed:
			return
		}
	}
}

func (c *Context) open(ordinal int) error {
	d := c.drv
	if err := d.Init(); err != nil {
		return err
	}
	n, err := d.DeviceCount()
	if err != nil {
		return err
	}
	if ordinal < 0 || ordinal >= n {
		return fmt.Errorf("cuda: device %d: the driver sees %d device(s)", ordinal, n)
	}
	dev, err := d.DeviceGet(ordinal)
	if err != nil {
		return err
	}
	info := DeviceInfo{Ordinal: ordinal}
	if info.Name, err = d.DeviceName(dev); err != nil {
		return err
	}
	if info.TotalMem, err = d.DeviceTotalMem(dev); err != nil {
		return err
	}
	if info.DriverVersion, err = d.DriverVersion(); err != nil {
		return err
	}
	for _, a := range []struct {
		attr DeviceAttr
		dst  *int
	}{
		{AttrComputeCapabilityMajor, &info.Major}, {AttrComputeCapabilityMinor, &info.Minor},
		{AttrMultiprocessorCount, &info.SMs}, {AttrMaxSharedPerBlockOptin, &info.SharedPerBlockOptin},
		{AttrMaxThreadsPerBlock, &info.MaxThreadsPerBlock}, {AttrMaxRegistersPerBlock, &info.RegistersPerBlock},
		{AttrMaxSharedPerSM, &info.SharedPerSM}, {AttrReservedSharedPerBlock, &info.ReservedSharedPerBlk},
	} {
		if *a.dst, err = d.DeviceAttribute(dev, a.attr); err != nil {
			return err
		}
	}
	if info.Major < MinCompute[0] || info.Major == MinCompute[0] && info.Minor < MinCompute[1] {
		return fmt.Errorf("cuda: device %d (%s) is %s; golf needs sm_%d%d or newer (bf16 and m16n8k16 tensor cores)",
			ordinal, info.Name, info.Arch(), MinCompute[0], MinCompute[1])
	}
	h, err := d.PrimaryCtxRetain(dev)
	if err != nil {
		return err
	}
	if err := d.CtxSetCurrent(h); err != nil {
		d.PrimaryCtxRelease(dev)
		return err
	}
	c.Info, c.dev, c.handle = info, dev, h
	return nil
}

// ErrContextClosed is returned by Do after Close.
var ErrContextClosed = errors.New("cuda: context closed")

// Do runs f on the context's thread with the driver, and returns f's
// error. Calls are serialised in the order they arrive.
func (c *Context) Do(f func(Driver) error) error {
	var err error
	done := make(chan struct{})
	select {
	case c.calls <- func() { err = f(c.drv); close(done) }:
	case <-c.closed:
		return ErrContextClosed
	}
	<-done
	return err
}

// Close synchronises the context, releases the primary context, and ends
// the thread. Later Do calls return ErrContextClosed.
func (c *Context) Close() error {
	var err error
	c.once.Do(func() {
		err = c.Do(func(d Driver) error {
			return errors.Join(d.CtxSynchronize(), d.CtxSetCurrent(0), d.PrimaryCtxRelease(c.dev))
		})
		close(c.closed)
	})
	return err
}

package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// The dry driver: a Driver and an Lt that run nothing. A backend opened
// on them (OpenDry) takes every call of a training step as it would on a
// GPU (allocations, uploads, launches with their launch table entries,
// cuBLASLt matmuls) and executes none: downloads read zeros. With the
// cost tally (cost.go) it is the CUDA cost model's device: the bytes and
// FLOPs of a step, kernel by kernel, on a machine without a GPU, NVRTC or
// cuBLASLt, in any build (no tag).

// DryDevice is the device a dry backend describes: an H200's facts
// (sm_90, 132 SMs, 141 GB), which choose nothing in the step but the
// flavour (TC) and the launch limits it is checked against.
var DryDevice = DeviceInfo{
	Name: "dry run (no device; an H200's limits)", TotalMem: 141 << 30, Major: 9, Minor: 0, SMs: 132,
	SharedPerBlockOptin: 227 << 10, DriverVersion: 13000, MaxThreadsPerBlock: 1024, RegistersPerBlock: 64 << 10,
	SharedPerSM: 228 << 10, ReservedSharedPerBlk: 1 << 10,
}

// dryDriver implements Driver without a device: device memory is address
// space only, page-locked memory is Go memory, and a launch, copy or
// memset records nothing but its count.
type dryDriver struct {
	info DeviceInfo

	mu       sync.Mutex
	next     DevicePtr
	live     map[DevicePtr]uint64
	host     map[unsafe.Pointer][]byte
	funcs    map[string]Function
	names    []string
	launches uint64
}

func newDryDriver(info DeviceInfo) *dryDriver {
	return &dryDriver{info: info, next: 1 << 40, live: map[DevicePtr]uint64{}, host: map[unsafe.Pointer][]byte{},
		funcs: map[string]Function{}}
}

var errDryUnknownPointer = errors.New("cuda: dry driver: pointer not allocated")

func (d *dryDriver) Init() error                           { return nil }
func (d *dryDriver) DriverVersion() (int, error)           { return d.info.DriverVersion, nil }
func (d *dryDriver) DeviceCount() (int, error)             { return 1, nil }
func (d *dryDriver) DeviceGet(ordinal int) (Device, error) { return Device(ordinal), nil }
func (d *dryDriver) DeviceName(Device) (string, error)     { return d.info.Name, nil }
func (d *dryDriver) DeviceTotalMem(Device) (uint64, error) {
	return d.info.TotalMem, nil
}

func (d *dryDriver) DeviceAttribute(_ Device, a DeviceAttr) (int, error) {
	i := d.info
	switch a {
	case AttrComputeCapabilityMajor:
		return i.Major, nil
	case AttrComputeCapabilityMinor:
		return i.Minor, nil
	case AttrMultiprocessorCount:
		return i.SMs, nil
	case AttrMaxSharedPerBlockOptin:
		return i.SharedPerBlockOptin, nil
	case AttrMaxThreadsPerBlock:
		return i.MaxThreadsPerBlock, nil
	case AttrMaxRegistersPerBlock:
		return i.RegistersPerBlock, nil
	case AttrMaxSharedPerSM:
		return i.SharedPerSM, nil
	case AttrReservedSharedPerBlock:
		return i.ReservedSharedPerBlk, nil
	}
	return 0, fmt.Errorf("cuda: dry driver: no attribute %d", a)
}

func (d *dryDriver) PrimaryCtxRetain(Device) (CtxHandle, error) { return 1, nil }
func (d *dryDriver) PrimaryCtxRelease(Device) error             { return nil }
func (d *dryDriver) CtxSetCurrent(CtxHandle) error              { return nil }
func (d *dryDriver) CtxSynchronize() error                      { return nil }

func (d *dryDriver) ModuleLoadData([]byte) (Module, error) { return 1, nil }
func (d *dryDriver) ModuleUnload(Module) error             { return nil }

// ModuleGetFunction gives each name a handle of its own.
func (d *dryDriver) ModuleGetFunction(_ Module, name string) (Function, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.funcs[name]; ok {
		return f, nil
	}
	d.names = append(d.names, name)
	f := Function(len(d.names))
	d.funcs[name] = f
	return f, nil
}

func (d *dryDriver) FuncGetAttribute(Function, FuncAttr) (int, error) { return 0, nil }
func (d *dryDriver) FuncSetAttribute(Function, FuncAttr, int) error   { return nil }

func (d *dryDriver) LaunchKernel(f Function, grid, block [3]uint32, _ uint32, _ Stream, _ []unsafe.Pointer) error {
	if f == 0 || int(f) > len(d.names) {
		return fmt.Errorf("cuda: dry driver: launch of unknown function %d", f)
	}
	for i := range grid {
		if grid[i] == 0 || block[i] == 0 {
			return fmt.Errorf("cuda: dry driver: %s launched on grid %v, block %v", d.names[f-1], grid, block)
		}
	}
	d.launches++
	return nil
}

// MemAlloc hands out 256-byte-aligned address space (as cuMemAlloc aligns).
func (d *dryDriver) MemAlloc(bytes uint64) (DevicePtr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.next
	d.next += DevicePtr((bytes + 511) / 256 * 256)
	d.live[p] = bytes
	return p, nil
}

func (d *dryDriver) MemFree(p DevicePtr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.live[p]; !ok {
		return errDryUnknownPointer
	}
	delete(d.live, p)
	return nil
}

func (d *dryDriver) MemAllocHost(bytes uint64) (unsafe.Pointer, error) {
	buf := make([]byte, max(bytes, 1))
	p := unsafe.Pointer(&buf[0])
	d.mu.Lock()
	d.host[p] = buf
	d.mu.Unlock()
	return p, nil
}

func (d *dryDriver) MemFreeHost(p unsafe.Pointer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.host[p]; !ok {
		return errDryUnknownPointer
	}
	delete(d.host, p)
	return nil
}

func (d *dryDriver) MemcpyHtoDAsync(DevicePtr, unsafe.Pointer, uint64, Stream) error { return nil }

// MemcpyDtoHAsync reads zeros: nothing ran.
func (d *dryDriver) MemcpyDtoHAsync(dst unsafe.Pointer, _ DevicePtr, bytes uint64, _ Stream) error {
	clear(unsafe.Slice((*byte)(dst), bytes))
	return nil
}

func (d *dryDriver) MemcpyDtoDAsync(DevicePtr, DevicePtr, uint64, Stream) error { return nil }
func (d *dryDriver) MemsetD8Async(DevicePtr, byte, uint64, Stream) error        { return nil }
func (d *dryDriver) StreamCreate(uint32) (Stream, error)                        { return 1, nil }
func (d *dryDriver) StreamDestroy(Stream) error                                 { return nil }
func (d *dryDriver) StreamSynchronize(Stream) error                             { return nil }
func (d *dryDriver) EventCreate(uint32) (Event, error)                          { return 1, nil }
func (d *dryDriver) EventDestroy(Event) error                                   { return nil }
func (d *dryDriver) EventRecord(Event, Stream) error                            { return nil }
func (d *dryDriver) StreamWaitEvent(Stream, Event) error                        { return nil }
func (d *dryDriver) EventSynchronize(Event) error                               { return nil }
func (d *dryDriver) EventQuery(Event) error                                     { return nil }
func (d *dryDriver) EventElapsedTime(Event, Event) (float32, error)             { return 0, nil }

// dryLt implements Lt without cuBLASLt: plans hold their GEMM, matmuls run
// nothing.
type dryLt struct{}

func (dryLt) NewHandle() (LtHandle, error) { return 1, nil }
func (dryLt) DestroyHandle(LtHandle) error { return nil }
func (dryLt) NewPlan(g GEMM, workspace uint64) (*LtPlan, error) {
	return &LtPlan{GEMM: g, Workspace: workspace}, nil
}
func (dryLt) CheckPlan(*LtPlan) error            { return nil }
func (dryLt) SelectAlgo(LtHandle, *LtPlan) error { return nil }
func (dryLt) Matmul(LtHandle, *LtPlan, float32, float32, uintptr, uintptr, uintptr, uintptr, uintptr, uintptr) error {
	return nil
}
func (dryLt) DestroyPlan(*LtPlan) {}

// OpenDry opens a backend on the dry driver (DryDevice; GEMMs through the
// dry cuBLASLt unless o.GEMM says GEMMKernels), with the cost tally on:
// every launch and matmul of what it is given is costed (Costs) and none
// runs. Downloads and ReadScalar read zeros.
func OpenDry(o Options) (*Backend, error) {
	drv := newDryDriver(DryDevice)
	ctx, err := OpenContext(drv, 0)
	if err != nil {
		return nil, err
	}
	var lt Lt
	if o.GEMM == GEMMCublasLt {
		lt = dryLt{}
	}
	b, err := openWith(ctx, lt, o, dryFunctions)
	if err != nil {
		return nil, errors.Join(err, ctx.Close())
	}
	b.ownCtx = true
	b.costs = newCostTally()
	return b, nil
}

// dryFunctions resolves every kernel of the library on the dry driver,
// with the resources of a kernel that fits its launch (launch bounds = the
// table's threads, 32 registers, no shared memory or spills).
func dryFunctions(d Driver, _ string, flavour Flavour) (map[string]Function, map[string]Resources, []Module, error) {
	funcs, res := map[string]Function{}, map[string]Resources{}
	for _, k := range Kernels {
		for _, e := range ElemTypes {
			name := k.Name(flavour, e)
			if _, done := funcs[name]; done {
				continue
			}
			f, err := d.ModuleGetFunction(1, name)
			if err != nil {
				return nil, nil, nil, err
			}
			funcs[name] = f
			res[name] = Resources{Registers: 32, MaxThreads: LaunchFor(k, flavour, e).Threads}
		}
	}
	return funcs, res, nil, nil
}

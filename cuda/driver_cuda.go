//go:build cuda

package cuda

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// MinDriver is the oldest driver golf accepts (cuDriverGetVersion): CUDA
// 11.8's. A cubin from a newer NVRTC needs a driver of at least NVRTC's
// major version; the backend checks that pair when it opens a device.
const MinDriver = 11080

// cudaDriver is Driver over libcuda.so.1.
type cudaDriver struct {
	path    string
	version int

	cuInit               func(flags uint32) int32
	cuDriverGetVersion   func(v *int32) int32
	cuGetErrorName       func(res int32, s **byte) int32
	cuGetErrorString     func(res int32, s **byte) int32
	cuDeviceGetCount     func(n *int32) int32
	cuDeviceGet          func(d *int32, ordinal int32) int32
	cuDeviceGetName      func(name *byte, n int32, d int32) int32
	cuDeviceTotalMem     func(bytes *uint64, d int32) int32
	cuDeviceGetAttribute func(v *int32, attr int32, d int32) int32
	cuPrimaryCtxRetain   func(ctx *uintptr, d int32) int32
	cuPrimaryCtxRelease  func(d int32) int32
	cuCtxSetCurrent      func(ctx uintptr) int32
	cuCtxSynchronize     func() int32
	cuModuleLoadData     func(m *uintptr, image unsafe.Pointer) int32
	cuModuleUnload       func(m uintptr) int32
	cuModuleGetFunction  func(f *uintptr, m uintptr, name *byte) int32
	cuFuncGetAttribute   func(v *int32, attr int32, f uintptr) int32
	cuFuncSetAttribute   func(f uintptr, attr int32, v int32) int32
	cuLaunchKernel       func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params, extra unsafe.Pointer) int32
	cuMemAlloc           func(p *uint64, bytes uint64) int32
	cuMemFree            func(p uint64) int32
	cuMemAllocHost       func(p *unsafe.Pointer, bytes uint64) int32
	cuMemFreeHost        func(p unsafe.Pointer) int32
	cuMemcpyHtoDAsync    func(dst uint64, src unsafe.Pointer, bytes uint64, s uintptr) int32
	cuMemcpyDtoHAsync    func(dst unsafe.Pointer, src uint64, bytes uint64, s uintptr) int32
	cuMemcpyDtoDAsync    func(dst, src uint64, bytes uint64, s uintptr) int32
	cuMemsetD8Async      func(dst uint64, v uint8, n uint64, s uintptr) int32
	cuStreamCreate       func(s *uintptr, flags uint32) int32
	cuStreamDestroy      func(s uintptr) int32
	cuStreamSynchronize  func(s uintptr) int32
	cuEventCreate        func(e *uintptr, flags uint32) int32
	cuEventDestroy       func(e uintptr) int32
	cuEventRecord        func(e, s uintptr) int32
	cuStreamWaitEvent    func(s, e uintptr, flags uint32) int32
	cuEventSynchronize   func(e uintptr) int32
	cuEventQuery         func(e uintptr) int32
	cuEventElapsedTime   func(ms *float32, start, end uintptr) int32
}

var loadDriver = sync.OnceValues(func() (Driver, error) {
	d := &cudaDriver{}
	_, path, err := openLibrary(LibCUDA, DefaultSearchEnv(), purego.RTLD_NOW|purego.RTLD_LOCAL, d.check)
	if err != nil {
		return nil, err
	}
	d.path = loadedPath(path)
	return d, nil
})

// LoadDriver finds, opens and checks libcuda.so.1 once per process.
func LoadDriver() (Driver, error) { return loadDriver() }

// DriverPath is the libcuda file a driver from LoadDriver was loaded from.
func DriverPath(d Driver) string {
	if cd, ok := d.(*cudaDriver); ok {
		return cd.path
	}
	return ""
}

func (d *cudaDriver) check(h uintptr, path string) error {
	err := bindSymbols(h, []symbol{
		{"cuInit", &d.cuInit, false},
		{"cuDriverGetVersion", &d.cuDriverGetVersion, false},
		{"cuGetErrorName", &d.cuGetErrorName, false},
		{"cuGetErrorString", &d.cuGetErrorString, false},
		{"cuDeviceGetCount", &d.cuDeviceGetCount, false},
		{"cuDeviceGet", &d.cuDeviceGet, false},
		{"cuDeviceGetName", &d.cuDeviceGetName, false},
		{"cuDeviceTotalMem_v2", &d.cuDeviceTotalMem, false},
		{"cuDeviceGetAttribute", &d.cuDeviceGetAttribute, false},
		{"cuDevicePrimaryCtxRetain", &d.cuPrimaryCtxRetain, false},
		{"cuDevicePrimaryCtxRelease_v2", &d.cuPrimaryCtxRelease, false},
		{"cuCtxSetCurrent", &d.cuCtxSetCurrent, false},
		{"cuCtxSynchronize", &d.cuCtxSynchronize, false},
		{"cuModuleLoadData", &d.cuModuleLoadData, false},
		{"cuModuleUnload", &d.cuModuleUnload, false},
		{"cuModuleGetFunction", &d.cuModuleGetFunction, false},
		{"cuFuncGetAttribute", &d.cuFuncGetAttribute, false},
		{"cuFuncSetAttribute", &d.cuFuncSetAttribute, false},
		{"cuLaunchKernel", &d.cuLaunchKernel, false},
		{"cuMemAlloc_v2", &d.cuMemAlloc, false},
		{"cuMemFree_v2", &d.cuMemFree, false},
		{"cuMemAllocHost_v2", &d.cuMemAllocHost, false},
		{"cuMemFreeHost", &d.cuMemFreeHost, false},
		{"cuMemcpyHtoDAsync_v2", &d.cuMemcpyHtoDAsync, false},
		{"cuMemcpyDtoHAsync_v2", &d.cuMemcpyDtoHAsync, false},
		{"cuMemcpyDtoDAsync_v2", &d.cuMemcpyDtoDAsync, false},
		{"cuMemsetD8Async", &d.cuMemsetD8Async, false},
		{"cuStreamCreate", &d.cuStreamCreate, false},
		{"cuStreamDestroy_v2", &d.cuStreamDestroy, false},
		{"cuStreamSynchronize", &d.cuStreamSynchronize, false},
		{"cuEventCreate", &d.cuEventCreate, false},
		{"cuEventDestroy_v2", &d.cuEventDestroy, false},
		{"cuEventRecord", &d.cuEventRecord, false},
		{"cuStreamWaitEvent", &d.cuStreamWaitEvent, false},
		{"cuEventSynchronize", &d.cuEventSynchronize, false},
		{"cuEventQuery", &d.cuEventQuery, false},
		{"cuEventElapsedTime", &d.cuEventElapsedTime, false},
	})
	if err != nil {
		return err
	}
	var v int32
	if r := d.cuDriverGetVersion(&v); r != 0 {
		return d.err("cuDriverGetVersion", r)
	}
	d.version = int(v)
	if d.version < MinDriver {
		return &TooOldError{Found: driverVersionString(d.version), Need: driverVersionString(MinDriver)}
	}
	return nil
}

// err turns a failed CUresult into a *DriverError.
func (d *cudaDriver) err(call string, r int32) error {
	if r == 0 {
		return nil
	}
	var name, text *byte
	d.cuGetErrorName(r, &name)
	d.cuGetErrorString(r, &text)
	return &DriverError{Call: call, Code: int(r), Name: goString(name), Text: goString(text)}
}

func (d *cudaDriver) Init() error { return d.err("cuInit", d.cuInit(0)) }

func (d *cudaDriver) DriverVersion() (int, error) { return d.version, nil }

func (d *cudaDriver) DeviceCount() (int, error) {
	var n int32
	err := d.err("cuDeviceGetCount", d.cuDeviceGetCount(&n))
	return int(n), err
}

func (d *cudaDriver) DeviceGet(ordinal int) (Device, error) {
	var dev int32
	err := d.err("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal)))
	return Device(dev), err
}

func (d *cudaDriver) DeviceName(dev Device) (string, error) {
	buf := make([]byte, 256)
	if err := d.err("cuDeviceGetName", d.cuDeviceGetName(&buf[0], int32(len(buf)), int32(dev))); err != nil {
		return "", err
	}
	return goString(&buf[0]), nil
}

func (d *cudaDriver) DeviceTotalMem(dev Device) (uint64, error) {
	var n uint64
	err := d.err("cuDeviceTotalMem", d.cuDeviceTotalMem(&n, int32(dev)))
	return n, err
}

func (d *cudaDriver) DeviceAttribute(dev Device, a DeviceAttr) (int, error) {
	var v int32
	err := d.err(fmt.Sprintf("cuDeviceGetAttribute(%d)", a), d.cuDeviceGetAttribute(&v, int32(a), int32(dev)))
	return int(v), err
}

func (d *cudaDriver) PrimaryCtxRetain(dev Device) (CtxHandle, error) {
	var c uintptr
	err := d.err("cuDevicePrimaryCtxRetain", d.cuPrimaryCtxRetain(&c, int32(dev)))
	return CtxHandle(c), err
}

func (d *cudaDriver) PrimaryCtxRelease(dev Device) error {
	return d.err("cuDevicePrimaryCtxRelease", d.cuPrimaryCtxRelease(int32(dev)))
}

func (d *cudaDriver) CtxSetCurrent(c CtxHandle) error {
	return d.err("cuCtxSetCurrent", d.cuCtxSetCurrent(uintptr(c)))
}

func (d *cudaDriver) CtxSynchronize() error { return d.err("cuCtxSynchronize", d.cuCtxSynchronize()) }

func (d *cudaDriver) ModuleLoadData(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, fmt.Errorf("cuda: cuModuleLoadData: empty image")
	}
	var m uintptr
	err := d.err("cuModuleLoadData", d.cuModuleLoadData(&m, unsafe.Pointer(&image[0])))
	runtime.KeepAlive(image)
	return Module(m), err
}

func (d *cudaDriver) ModuleUnload(m Module) error {
	return d.err("cuModuleUnload", d.cuModuleUnload(uintptr(m)))
}

func (d *cudaDriver) ModuleGetFunction(m Module, name string) (Function, error) {
	var f uintptr
	cname := cString(name)
	err := d.err("cuModuleGetFunction("+name+")", d.cuModuleGetFunction(&f, uintptr(m), &cname[0]))
	return Function(f), err
}

func (d *cudaDriver) FuncGetAttribute(f Function, a FuncAttr) (int, error) {
	var v int32
	err := d.err(fmt.Sprintf("cuFuncGetAttribute(%d)", a), d.cuFuncGetAttribute(&v, int32(a), uintptr(f)))
	return int(v), err
}

func (d *cudaDriver) FuncSetAttribute(f Function, a FuncAttr, v int) error {
	return d.err(fmt.Sprintf("cuFuncSetAttribute(%d)", a), d.cuFuncSetAttribute(uintptr(f), int32(a), int32(v)))
}

func (d *cudaDriver) LaunchKernel(f Function, grid, block [3]uint32, sharedMem uint32, s Stream, params []unsafe.Pointer) error {
	var p unsafe.Pointer
	if len(params) > 0 {
		p = unsafe.Pointer(&params[0])
	}
	r := d.cuLaunchKernel(uintptr(f), grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedMem, uintptr(s), p, nil)
	runtime.KeepAlive(params)
	return d.err("cuLaunchKernel", r)
}

func (d *cudaDriver) MemAlloc(bytes uint64) (DevicePtr, error) {
	var p uint64
	err := d.err(fmt.Sprintf("cuMemAlloc(%d)", bytes), d.cuMemAlloc(&p, bytes))
	return DevicePtr(p), err
}

func (d *cudaDriver) MemFree(p DevicePtr) error { return d.err("cuMemFree", d.cuMemFree(uint64(p))) }

func (d *cudaDriver) MemAllocHost(bytes uint64) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := d.err(fmt.Sprintf("cuMemAllocHost(%d)", bytes), d.cuMemAllocHost(&p, bytes))
	return p, err
}

func (d *cudaDriver) MemFreeHost(p unsafe.Pointer) error {
	return d.err("cuMemFreeHost", d.cuMemFreeHost(p))
}

func (d *cudaDriver) MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, bytes uint64, s Stream) error {
	return d.err("cuMemcpyHtoDAsync", d.cuMemcpyHtoDAsync(uint64(dst), src, bytes, uintptr(s)))
}

func (d *cudaDriver) MemcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, bytes uint64, s Stream) error {
	return d.err("cuMemcpyDtoHAsync", d.cuMemcpyDtoHAsync(dst, uint64(src), bytes, uintptr(s)))
}

func (d *cudaDriver) MemcpyDtoDAsync(dst, src DevicePtr, bytes uint64, s Stream) error {
	return d.err("cuMemcpyDtoDAsync", d.cuMemcpyDtoDAsync(uint64(dst), uint64(src), bytes, uintptr(s)))
}

func (d *cudaDriver) MemsetD8Async(dst DevicePtr, v byte, bytes uint64, s Stream) error {
	return d.err("cuMemsetD8Async", d.cuMemsetD8Async(uint64(dst), v, bytes, uintptr(s)))
}

func (d *cudaDriver) StreamCreate(flags uint32) (Stream, error) {
	var s uintptr
	err := d.err("cuStreamCreate", d.cuStreamCreate(&s, flags))
	return Stream(s), err
}

func (d *cudaDriver) StreamDestroy(s Stream) error {
	return d.err("cuStreamDestroy", d.cuStreamDestroy(uintptr(s)))
}

func (d *cudaDriver) StreamSynchronize(s Stream) error {
	return d.err("cuStreamSynchronize", d.cuStreamSynchronize(uintptr(s)))
}

func (d *cudaDriver) EventCreate(flags uint32) (Event, error) {
	var e uintptr
	err := d.err("cuEventCreate", d.cuEventCreate(&e, flags))
	return Event(e), err
}

func (d *cudaDriver) EventDestroy(e Event) error {
	return d.err("cuEventDestroy", d.cuEventDestroy(uintptr(e)))
}

func (d *cudaDriver) EventRecord(e Event, s Stream) error {
	return d.err("cuEventRecord", d.cuEventRecord(uintptr(e), uintptr(s)))
}

func (d *cudaDriver) StreamWaitEvent(s Stream, e Event) error {
	return d.err("cuStreamWaitEvent", d.cuStreamWaitEvent(uintptr(s), uintptr(e), 0))
}

func (d *cudaDriver) EventSynchronize(e Event) error {
	return d.err("cuEventSynchronize", d.cuEventSynchronize(uintptr(e)))
}

// cuResultNotReady is CUDA_ERROR_NOT_READY.
const cuResultNotReady = 600

func (d *cudaDriver) EventQuery(e Event) error {
	r := d.cuEventQuery(uintptr(e))
	if r == cuResultNotReady {
		return ErrNotReady
	}
	return d.err("cuEventQuery", r)
}

func (d *cudaDriver) EventElapsedTime(start, end Event) (float32, error) {
	var ms float32
	err := d.err("cuEventElapsedTime", d.cuEventElapsedTime(&ms, uintptr(start), uintptr(end)))
	return ms, err
}

var _ Driver = (*cudaDriver)(nil)

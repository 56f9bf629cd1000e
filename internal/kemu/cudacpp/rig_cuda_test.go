//go:build cuda

package cudacpp

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
)

// The selftest kernels, as the stand-in registers them.
var selftestKernels = []string{"emu_builtins", "emu_warp", "emu_shared", "emu_dynamic_shared", "emu_missing_sync",
	"emu_shfl_after_return", "emu_divergent_sync", "emu_mask_mismatch", "emu_oob_write"}

var (
	setupLib Library
	setupErr error
	setupH   *Handle
)

// The kernels of testdata/prelude_tc.cu, which includes the library's
// golf_prelude.cuh (cuda/kernels) and its golf_args.h (shaders).
var preludeTCKernels = []string{"emu_ldmatrix", "emu_cp_async"}

// preludeTCSources are prelude_tc.cu and the headers it includes, by name.
func preludeTCSources() (map[string][]byte, error) {
	files := map[string]string{
		"prelude_tc.cu":    "testdata/prelude_tc.cu",
		"golf_prelude.cuh": "../../../cuda/kernels/golf_prelude.cuh",
		"golf_args.h":      "../../../shaders/golf_args.h",
	}
	out := map[string][]byte{}
	for name, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// TestMain points golf's loader at a stand-in built from the selftests
// before anything loads the driver (the loader opens it once per process).
func TestMain(m *testing.M) {
	src, err := os.ReadFile("testdata/selftest.cu")
	var srcs map[string][]byte
	if err == nil {
		srcs, err = preludeTCSources()
	}
	if err == nil {
		var ks []Kernel
		for _, k := range selftestKernels {
			ks = append(ks, Kernel{k, "selftest.cu"})
		}
		for _, k := range preludeTCKernels {
			ks = append(ks, Kernel{k, "prelude_tc.cu"})
		}
		srcs["selftest.cu"] = src
		setupLib, err = Build(Config{Sources: srcs, Preincludes: []string{"golf_prelude.cuh"}, Kernels: ks})
	}
	if err == nil {
		err = os.Setenv(cuda.EnvLibPath, setupLib.Dir)
	}
	if err == nil {
		setupH, err = Open(setupLib)
	}
	setupErr = err
	os.Exit(m.Run())
}

// rig is a context on the stand-in with the selftest module loaded.
type rig struct {
	t      *testing.T
	ctx    *cuda.Context
	stream cuda.Stream
	mod    cuda.Module
	h      *Handle
}

var (
	rigOnce  sync.Once
	rigCubin []byte
	rigErr   error
)

// selftestCubin compiles testdata/selftest.cu with the real NVRTC for sm_80.
func selftestCubin(t *testing.T) []byte {
	t.Helper()
	rigOnce.Do(func() {
		n, err := cuda.LoadNVRTC()
		if err != nil {
			rigErr = err
			return
		}
		src, err := os.ReadFile("testdata/selftest.cu")
		if err != nil {
			rigErr = err
			return
		}
		res, err := n.Compile(cuda.Program{Name: "selftest.cu", Source: string(src)}, []string{"--gpu-architecture=sm_80", "-std=c++17"})
		if err != nil {
			rigErr = err
			return
		}
		rigCubin = res.CUBIN
	})
	if rigErr != nil {
		skipOrFail(t, rigErr)
	}
	return rigCubin
}

// skipOrFail skips a test whose CUDA libraries are missing, unless
// GOLF_REQUIRE_CUDA_LIBS=1 (CI) makes that a failure.
func skipOrFail(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("GOLF_REQUIRE_CUDA_LIBS") == "1" {
		t.Fatalf("the CUDA libraries are required: %v", err)
	}
	t.Skipf("not supported: %v", err)
}

func newRig(t *testing.T) *rig {
	t.Helper()
	if setupErr != nil {
		skipOrFail(t, setupErr)
	}
	cubin := selftestCubin(t)
	drv, err := cuda.LoadDriver()
	require.NoError(t, err)
	require.Equal(t, setupLib.Dir+"/"+DriverName, cuda.DriverPath(drv), "golf's loader must find the stand-in")
	ctx, err := cuda.OpenContext(drv, 0)
	require.NoError(t, err)
	r := &rig{t: t, ctx: ctx, h: setupH}
	t.Cleanup(func() { ctx.Close() })
	require.NoError(t, ctx.Do(func(d cuda.Driver) error {
		var err error
		if r.stream, err = d.StreamCreate(cuda.StreamNonBlocking); err != nil {
			return err
		}
		r.mod, err = d.ModuleLoadData(cubin)
		return err
	}))
	return r
}

// alloc allocates n zeroed bytes of device memory.
func (r *rig) alloc(n int) cuda.DevicePtr {
	var p cuda.DevicePtr
	require.NoError(r.t, r.ctx.Do(func(d cuda.Driver) error {
		var err error
		if p, err = d.MemAlloc(uint64(n)); err != nil {
			return err
		}
		return d.MemsetD8Async(p, 0, uint64(n), r.stream)
	}))
	return p
}

// launch launches kernel name; args are cuda.DevicePtr, uint32 or int32.
func (r *rig) launch(name string, grid, block [3]uint32, shared uint32, args ...any) error {
	vals := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case cuda.DevicePtr:
			vals[i] = uint64(v)
		case uint32:
			vals[i] = uint64(v)
		case int32:
			vals[i] = uint64(uint32(v))
		default:
			panic(fmt.Sprintf("launch: argument %T", a))
		}
		params[i] = unsafe.Pointer(&vals[i])
	}
	return r.ctx.Do(func(d cuda.Driver) error {
		f, err := d.ModuleGetFunction(r.mod, name)
		if err != nil {
			return err
		}
		return d.LaunchKernel(f, grid, block, shared, r.stream, params)
	})
}

// sync waits for the stream.
func (r *rig) sync() error {
	return r.ctx.Do(func(d cuda.Driver) error { return d.StreamSynchronize(r.stream) })
}

// read copies n bytes from device memory through page-locked memory.
func (r *rig) read(p cuda.DevicePtr, n int) []byte {
	out := make([]byte, n)
	require.NoError(r.t, r.ctx.Do(func(d cuda.Driver) error {
		h, err := d.MemAllocHost(uint64(n))
		if err != nil {
			return err
		}
		defer d.MemFreeHost(h)
		if err := d.MemcpyDtoHAsync(h, p, uint64(n), r.stream); err != nil {
			return err
		}
		if err := d.StreamSynchronize(r.stream); err != nil {
			return err
		}
		copy(out, unsafe.Slice((*byte)(h), n))
		return nil
	}))
	return out
}

func u32s(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func i32s(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

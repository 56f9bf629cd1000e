//go:build cuda

package cudacpp

import (
	"errors"
	"math/bits"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
)

// TestBuiltins: threadIdx, blockIdx, blockDim and gridDim of every thread
// of a 2-D grid of 2-D blocks, against the CUDA definitions.
func TestBuiltins(t *testing.T) {
	r := newRig(t)
	grid, block := [3]uint32{3, 2, 1}, [3]uint32{32, 4, 1}
	n := 3 * 2 * 32 * 4
	out := r.alloc(8 * 4 * n)
	require.NoError(t, r.launch("emu_builtins", grid, block, 0, out))
	require.NoError(t, r.sync())
	got := u32s(r.read(out, 8*4*n))
	for by := uint32(0); by < 2; by++ {
		for bx := uint32(0); bx < 3; bx++ {
			for ty := uint32(0); ty < 4; ty++ {
				for tx := uint32(0); tx < 32; tx++ {
					g := ((bx+3*by)*128 + tx + 32*ty) * 8
					want := []uint32{tx, ty, bx, by, 32, 4, 3, 2}
					require.Equal(t, want, got[g:g+8], "block (%d,%d) thread (%d,%d)", bx, by, tx, ty)
				}
			}
		}
	}
}

// TestKernelRuns: the stand-in counts a kernel's launches once they have
// run (the device runs behind: at the host's wait), per kernel name.
func TestKernelRuns(t *testing.T) {
	r := newRig(t)
	before := r.h.KernelRuns()
	out := r.alloc(8 * 4 * 32)
	for range 2 {
		require.NoError(t, r.launch("emu_builtins", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, out))
	}
	assert.Equal(t, before["emu_builtins"], r.h.KernelRuns()["emu_builtins"], "counted before the host waited")
	require.NoError(t, r.sync())
	after := r.h.KernelRuns()
	assert.Equal(t, before["emu_builtins"]+2, after["emu_builtins"])
	assert.Equal(t, before["emu_warp"], after["emu_warp"])
}

// TestWarpIntrinsics: the shuffles (every mode, with and without width),
// ballot, any, all and popc, per lane, against the CUDA C++ Programming
// Guide's definitions written out here.
func TestWarpIntrinsics(t *testing.T) {
	r := newRig(t)
	const blocks, threads = 2, 128
	out := r.alloc(12 * 4 * blocks * threads)
	require.NoError(t, r.launch("emu_warp", [3]uint32{blocks, 1, 1}, [3]uint32{threads, 1, 1}, 0, out))
	require.NoError(t, r.sync())
	got := i32s(r.read(out, 12*4*blocks*threads))
	for b := 0; b < blocks; b++ {
		for tid := 0; tid < threads; tid++ {
			l := tid % 32
			v := func(src int) int32 { return int32(1000*b + 3*src + 1) }
			// Width w: lanes form segments of w; a source outside the
			// caller's segment (up: before it; down, xor: after it) gives
			// the caller's own value, xor may read an earlier segment.
			seg8 := l / 8 * 8
			up3 := v(l)
			if l >= 3 {
				up3 = v(l - 3)
			}
			down5 := v(l)
			if l+5 < 32 {
				down5 = v(l + 5)
			}
			down2w8 := v(l)
			if l+2 < seg8+8 {
				down2w8 = v(l + 2)
			}
			xor9w8 := v(l)
			if l^9 < seg8 {
				xor9w8 = v(l ^ 9)
			}
			var ballot uint32
			for k := 0; k < 32; k += 3 {
				ballot |= 1 << k
			}
			xorMask := 2
			if l%2 == 1 {
				xorMask = 1
			}
			want := []int32{v(l * 7 % 32), v(37 % 32), up3, down5, v(l ^ 6), v(seg8 + 3), down2w8, xor9w8,
				int32(ballot), int32(bits.OnesCount32(ballot)), 1 + 2, v(l ^ xorMask)}
			g := (b*threads + tid) * 12
			require.Equal(t, want, got[g:g+12], "block %d thread %d (lane %d)", b, tid, l)
		}
	}
}

// TestSharedMemory: static shared memory between barriers, and dynamic
// shared memory of the launch's size.
func TestSharedMemory(t *testing.T) {
	r := newRig(t)
	const blocks, n = 3, 256
	out := r.alloc(4 * blocks * n)
	require.NoError(t, r.launch("emu_shared", [3]uint32{blocks, 1, 1}, [3]uint32{n, 1, 1}, 0, out))
	const m = 128
	dyn := r.alloc(4 * blocks * m)
	require.NoError(t, r.launch("emu_dynamic_shared", [3]uint32{blocks, 1, 1}, [3]uint32{m, 1, 1}, 2*4*m, dyn))
	require.NoError(t, r.sync())
	got := u32s(r.read(out, 4*blocks*n))
	for b := 0; b < blocks; b++ {
		for tt := 0; tt < n; tt++ {
			// a = tile[t+1] = 10(t+1) + b; then tile[t] = a + 1; out = tile[t+1].
			want := uint32(10*((tt+2)%n)+b) + 1
			require.Equal(t, want, got[b*n+tt], "block %d thread %d", b, tt)
		}
	}
	gotDyn := f32s(r.read(dyn, 4*blocks*m))
	for b := 0; b < blocks; b++ {
		for tt := 0; tt < m; tt++ {
			rev := m - 1 - tt
			require.Equal(t, float32(rev)+0.5-float32(rev), gotDyn[b*m+tt], "block %d thread %d", b, tt)
		}
	}
}

// launchFails launches a misused kernel and returns the error the
// synchronisation reports with the stand-in's message.
func launchFails(t *testing.T, r *rig, name string, block uint32) string {
	t.Helper()
	out := r.alloc(4 * 1024)
	require.NoError(t, r.launch(name, [3]uint32{1, 1, 1}, [3]uint32{block, 1, 1}, 0, out))
	err := r.sync()
	var de *cuda.DriverError
	require.True(t, errors.As(err, &de), "%s: the synchronisation returned %v, want a driver error", name, err)
	assert.Equal(t, "CUDA_ERROR_LAUNCH_FAILED", de.Name)
	return r.h.LastError()
}

// TestMisuseFails: what is undefined on a GPU fails the launch here, with
// the call site: a full-mask shuffle after half the warp returned, two
// halves of a block at different __syncthreads, lanes passing different
// masks. The failed context stays failed, as after a GPU fault.
func TestMisuseFails(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		block  uint32
		want   []string
	}{
		{"emu_shfl_after_return", 32, []string{"__shfl_xor_sync", "0xffff0000", "have returned", "selftest.cu:"}},
		{"emu_divergent_sync", 64, []string{"divergent threadgroup_barrier", "selftest.cu"}},
		{"emu_mask_mismatch", 32, []string{"__shfl_sync", "mask", "the same on every lane", "selftest.cu:"}},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			r := newRig(t)
			msg := launchFails(t, r, tc.kernel, tc.block)
			for _, w := range tc.want {
				assert.Contains(t, msg, w)
			}
			assert.Contains(t, msg, "kernel "+tc.kernel)
			// The context is failed for every later call.
			err := r.ctx.Do(func(d cuda.Driver) error { _, err := d.MemAlloc(16); return err })
			assert.ErrorContains(t, err, "CUDA_ERROR_LAUNCH_FAILED")
		})
	}
}

// TestRaceDetector: the planted missing __syncthreads passes a plain run
// and fails under GOLF_EMU_RACE (in a child process: the stand-in reads it
// when it starts), naming the kernel; with the barrier it passes.
func TestRaceDetector(t *testing.T) {
	if os.Getenv("GOLF_CUDACPP_RACE_CHILD") != "" {
		r := newRig(t)
		for _, flag := range []int32{1, 0} {
			out := r.alloc(4 * 128 * 2)
			require.NoError(t, r.launch("emu_missing_sync", [3]uint32{2, 1, 1}, [3]uint32{128, 1, 1}, 0, out, flag))
			err := r.sync()
			if flag == 1 {
				require.NoError(t, err, "the kernel with its barrier must pass the race detector")
				got := u32s(r.read(out, 4*128*2))
				for i, v := range got {
					require.Equal(t, uint32(3*((i%128+1)%128)+1), v, "thread %d", i)
				}
				continue
			}
			require.Error(t, err, "the race detector missed the planted missing __syncthreads")
			msg := r.h.LastError()
			for _, w := range []string{"kernel emu_missing_sync", "race", "missing __syncthreads", "blocks"} {
				assert.Contains(t, msg, w)
			}
		}
		return
	}
	if setupErr != nil {
		skipOrFail(t, setupErr)
	}
	// Without the detector the defect goes unnoticed.
	r := newRig(t)
	out := r.alloc(4 * 128)
	require.NoError(t, r.launch("emu_missing_sync", [3]uint32{1, 1, 1}, [3]uint32{128, 1, 1}, 0, out, int32(0)))
	require.NoError(t, r.sync())

	cmd := exec.Command(os.Args[0], "-test.run=^TestRaceDetector$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GOLF_CUDACPP_RACE_CHILD=1", "GOLF_EMU_RACE=7")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	assert.Contains(t, string(msg), "--- PASS: TestRaceDetector")
}

// TestOutOfBounds: a kernel writing past the end of its allocation (beyond
// the last 256-byte block) hits the stand-in's guard page and the process
// dies, as a GPU kernel's illegal address fails; in a child process.
func TestOutOfBounds(t *testing.T) {
	if os.Getenv("GOLF_CUDACPP_OOB_CHILD") != "" {
		r := newRig(t)
		out := r.alloc(4 * 1000)
		require.NoError(t, r.launch("emu_oob_write", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, out, uint32(1000)))
		_ = r.sync()
		t.Fatal("the write past the allocation did not fault")
	}
	if setupErr != nil {
		skipOrFail(t, setupErr)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutOfBounds$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GOLF_CUDACPP_OOB_CHILD=1")
	msg, err := cmd.CombinedOutput()
	require.Error(t, err, "the child finished: %s", msg)
	// A fault on an emulator thread (not a Go thread) kills the process
	// with the signal.
	assert.Contains(t, err.Error()+string(msg), "segmentation", "%s", msg)
	assert.NotContains(t, string(msg), "did not fault")
}

// TestLaunchChecks: what a real driver refuses at launch, refused here with
// its error code and a message naming the kernel.
func TestLaunchChecks(t *testing.T) {
	r := newRig(t)
	buf := r.alloc(4096)
	code := func(err error) string {
		var de *cuda.DriverError
		if errors.As(err, &de) {
			return de.Name
		}
		return ""
	}
	check := func(err error, name string, want ...string) {
		t.Helper()
		require.Error(t, err)
		assert.Equal(t, name, code(err), "%v", err)
		for _, w := range want {
			assert.Contains(t, r.h.LastError(), w)
		}
	}
	// emu_warp declares __launch_bounds__(128).
	check(r.launch("emu_warp", [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, 0, buf), "CUDA_ERROR_INVALID_VALUE",
		"emu_warp", "launch bounds (128)")
	check(r.launch("emu_warp", [3]uint32{1, 1, 1}, [3]uint32{2048, 1, 1}, 0, buf), "CUDA_ERROR_INVALID_VALUE", "block")
	check(r.launch("emu_warp", [3]uint32{0, 1, 1}, [3]uint32{32, 1, 1}, 0, buf), "CUDA_ERROR_INVALID_VALUE", "grid")
	check(r.launch("emu_warp", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, cuda.DevicePtr(0x1000)),
		"CUDA_ERROR_INVALID_VALUE", "pointer argument 0", "not inside any live device allocation")
	check(r.launch("emu_warp", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, buf+2),
		"CUDA_ERROR_INVALID_VALUE", "not aligned to its 4-byte elements")
	check(r.launch("emu_warp", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, buf+4096),
		"CUDA_ERROR_INVALID_VALUE", "not inside any live device allocation")
	check(r.launch("emu_dynamic_shared", [3]uint32{1, 1, 1}, [3]uint32{128, 1, 1}, 64<<10, buf),
		"CUDA_ERROR_INVALID_VALUE", "dynamic shared memory", "MAX_DYNAMIC_SHARED_SIZE_BYTES")
	// Raising the function's limit admits it.
	require.NoError(t, r.ctx.Do(func(d cuda.Driver) error {
		f, err := d.ModuleGetFunction(r.mod, "emu_dynamic_shared")
		if err != nil {
			return err
		}
		return d.FuncSetAttribute(f, cuda.FuncMaxDynamicSharedSize, 64<<10)
	}))
	require.NoError(t, r.launch("emu_dynamic_shared", [3]uint32{1, 1, 1}, [3]uint32{128, 1, 1}, 64<<10, buf))
	check(r.ctx.Do(func(d cuda.Driver) error {
		f, err := d.ModuleGetFunction(r.mod, "emu_dynamic_shared")
		if err != nil {
			return err
		}
		return d.FuncSetAttribute(f, cuda.FuncMaxDynamicSharedSize, 200<<10)
	}), "CUDA_ERROR_INVALID_VALUE", "exceeds the device's")
	// The legacy stream.
	check(r.ctx.Do(func(d cuda.Driver) error {
		f, err := d.ModuleGetFunction(r.mod, "emu_warp")
		if err != nil {
			return err
		}
		p := uint64(buf)
		return d.LaunchKernel(f, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, []unsafe.Pointer{unsafe.Pointer(&p)})
	}), "CUDA_ERROR_INVALID_HANDLE", "legacy default stream")
	check(r.ctx.Do(func(d cuda.Driver) error { _, err := d.ModuleGetFunction(r.mod, "no_such_kernel"); return err }),
		"CUDA_ERROR_NOT_FOUND", "no_such_kernel")
	require.NoError(t, r.sync())
}

// TestContextThread: a driver call from an OS thread where the context is
// not current is refused (the driver keeps the current context per
// thread), which is why golf's Context runs every call on one locked
// thread.
func TestContextThread(t *testing.T) {
	r := newRig(t)
	drv, err := cuda.LoadDriver()
	require.NoError(t, err)
	done := make(chan error)
	go func() {
		// A fresh locked thread: no context current.
		runtime.LockOSThread()
		_, err := drv.MemAlloc(64)
		done <- err
	}()
	err = <-done
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CUDA_ERROR_INVALID_CONTEXT")
	assert.Contains(t, r.h.LastError(), "without the context current")
}

// TestModuleChecks: the image must be a cubin the device runs.
func TestModuleChecks(t *testing.T) {
	r := newRig(t)
	n, err := cuda.LoadNVRTC()
	require.NoError(t, err)
	src, err := os.ReadFile("testdata/selftest.cu")
	require.NoError(t, err)
	sm86, err := n.Compile(cuda.Program{Name: "selftest.cu", Source: string(src)}, []string{"--gpu-architecture=sm_86"})
	require.NoError(t, err)
	err = r.ctx.Do(func(d cuda.Driver) error { _, err := d.ModuleLoadData(sm86.CUBIN); return err })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CUDA_ERROR_NO_BINARY_FOR_GPU")
	assert.Contains(t, r.h.LastError(), "sm_86")
	ptx, err := n.Compile(cuda.Program{Name: "selftest.cu", Source: string(src)}, []string{"--gpu-architecture=compute_80"})
	require.NoError(t, err)
	err = r.ctx.Do(func(d cuda.Driver) error { _, err := d.ModuleLoadData([]byte(ptx.PTX)); return err })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CUDA_ERROR_INVALID_IMAGE")
}

// TestCubinReaders: the stand-in's reader (C++) and package cuda's
// ReadCubin (Go) agree on every selftest kernel's registers, launch bounds
// and static shared memory.
func TestCubinReaders(t *testing.T) {
	r := newRig(t)
	res, err := cuda.ReadCubin(selftestCubin(t))
	require.NoError(t, err)
	require.Len(t, res, len(selftestKernels))
	for _, k := range selftestKernels {
		var f cuda.Function
		require.NoError(t, r.ctx.Do(func(d cuda.Driver) error {
			var err error
			f, err = d.ModuleGetFunction(r.mod, k)
			return err
		}))
		regs, maxThreads, shared, err := r.h.FunctionResources(uintptr(f))
		require.NoError(t, err)
		want := res[k]
		assert.Equal(t, []int{want.Registers, want.MaxThreads, want.StaticShared}, []int{regs, maxThreads, shared}, k)
		assert.Positive(t, regs, k)
	}
	// emu_shared's tile is 256 uints.
	assert.Equal(t, 1024, res["emu_shared"].StaticShared)
	assert.Equal(t, 128, res["emu_warp"].MaxThreads)
}

// TestDeviceRunsBehind: queued work runs only when the host waits, so a
// staging buffer overwritten before the wait delivers the new bytes (the
// hazard golf's double-buffered staging avoids), an event is not ready
// until then, and a copy from pageable memory is refused.
func TestDeviceRunsBehind(t *testing.T) {
	r := newRig(t)
	dev := r.alloc(16)
	before := r.h.Stats()
	err := r.ctx.Do(func(d cuda.Driver) error {
		h, err := d.MemAllocHost(16)
		if err != nil {
			return err
		}
		staging := unsafe.Slice((*byte)(h), 16)
		copy(staging, "first bytes.....")
		if err := d.MemcpyHtoDAsync(dev, h, 16, r.stream); err != nil {
			return err
		}
		copy(staging, "second bytes....")
		ev, err := d.EventCreate(cuda.EventDisableTiming)
		if err != nil {
			return err
		}
		if err := d.EventRecord(ev, r.stream); err != nil {
			return err
		}
		if err := d.EventQuery(ev); !errors.Is(err, cuda.ErrNotReady) {
			return errors.New("the event was ready before the host waited: " + errString(err))
		}
		if err := d.EventSynchronize(ev); err != nil {
			return err
		}
		if err := d.EventQuery(ev); err != nil {
			return err
		}
		pageable := make([]byte, 16)
		err = d.MemcpyHtoDAsync(dev, unsafe.Pointer(&pageable[0]), 16, r.stream)
		if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_VALUE") {
			return errors.New("a copy from pageable memory was accepted: " + errString(err))
		}
		return nil
	})
	require.NoError(t, err)
	assert.Contains(t, r.h.LastError(), "page-locked")
	assert.Equal(t, "second bytes....", string(r.read(dev, 16)))
	d := r.h.Stats().Sub(before)
	assert.EqualValues(t, 1, d.NotReady)
	assert.EqualValues(t, 2, d.BlockingSyncs, "the event's wait and read's")
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

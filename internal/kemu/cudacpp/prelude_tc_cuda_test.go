//go:build cuda

package cudacpp

import (
	"math"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
)

var (
	preludeTCOnce  sync.Once
	preludeTCBin   []byte
	preludeTCErr   error
	preludeTCPTXOK bool
)

// preludeTCCubin compiles testdata/prelude_tc.cu with the real NVRTC for
// sm_80 (the prelude's PTX path: ldmatrix, cp.async), and checks that the
// PTX holds those instructions.
func preludeTCCubin(t *testing.T) []byte {
	t.Helper()
	preludeTCOnce.Do(func() {
		n, err := cuda.LoadNVRTC()
		if err != nil {
			preludeTCErr = err
			return
		}
		srcs, err := preludeTCSources()
		if err != nil {
			preludeTCErr = err
			return
		}
		prog := cuda.Program{Name: "prelude_tc.cu", Source: string(srcs["prelude_tc.cu"]), Headers: []cuda.Header{
			{Name: "golf_prelude.cuh", Source: string(srcs["golf_prelude.cuh"])},
			{Name: "golf_args.h", Source: string(srcs["golf_args.h"])},
		}}
		res, err := n.Compile(prog, []string{"--gpu-architecture=sm_80", "-std=c++17"})
		if err != nil {
			preludeTCErr = err
			return
		}
		preludeTCBin = res.CUBIN
		ptx, err := n.Compile(prog, []string{"--gpu-architecture=compute_80", "-std=c++17"})
		if err != nil {
			preludeTCErr = err
			return
		}
		preludeTCPTXOK = containsAll(ptx.PTX, "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
			"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "cp.async.cg.shared.global", "cp.async.commit_group",
			"cp.async.wait_group 2", "cp.async.wait_group 0")
	})
	if preludeTCErr != nil {
		skipOrFail(t, preludeTCErr)
	}
	require.True(t, preludeTCPTXOK, "NVRTC's PTX of prelude_tc.cu lacks an ldmatrix or cp.async instruction")
	return preludeTCBin
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// launchTC launches kernel name of prelude_tc.cu (its own module).
func (r *rig) launchTC(name string, grid, block [3]uint32, args ...any) error {
	var mod cuda.Module
	require.NoError(r.t, r.ctx.Do(func(d cuda.Driver) error {
		var err error
		mod, err = d.ModuleLoadData(preludeTCCubin(r.t))
		return err
	}))
	saved := r.mod
	r.mod = mod
	defer func() { r.mod = saved }()
	return r.launch(name, grid, block, 0, args...)
}

// write copies b to device memory at p through page-locked memory.
func (r *rig) write(p cuda.DevicePtr, b []byte) {
	require.NoError(r.t, r.ctx.Do(func(d cuda.Driver) error {
		h, err := d.MemAllocHost(uint64(len(b)))
		if err != nil {
			return err
		}
		defer d.MemFreeHost(h)
		copy(unsafe.Slice((*byte)(h), len(b)), b)
		if err := d.MemcpyHtoDAsync(p, h, uint64(len(b)), r.stream); err != nil {
			return err
		}
		return d.StreamSynchronize(r.stream)
	}))
}

// TestLdmatrix: golf_ldmatrix_x4 and its .trans against the fragment
// layout of PTX's ldmatrix (PTX ISA, "Warp-level matrix load instruction:
// ldmatrix"), written out here: with g = lane/4 and q = lane%4, register i
// holds elements (g, 2q), (g, 2q+1) of matrix i, and with .trans elements
// (2q, g), (2q+1, g); the lower one in the low 16 bits.
func TestLdmatrix(t *testing.T) {
	r := newRig(t)
	in := make([]byte, 2*256)
	val := func(i, row, col int) uint32 { return uint32(1000*i + 10*row + col + 1) }
	for i := 0; i < 4; i++ {
		for row := 0; row < 8; row++ {
			for col := 0; col < 8; col++ {
				e := 64*i + 8*row + col
				v := val(i, row, col)
				in[2*e], in[2*e+1] = byte(v), byte(v>>8)
			}
		}
	}
	dIn, dOut := r.alloc(len(in)), r.alloc(4*8*32)
	r.write(dIn, in)
	require.NoError(t, r.launchTC("emu_ldmatrix", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, dIn, dOut))
	require.NoError(t, r.sync())
	got := u32s(r.read(dOut, 4*8*32))
	for lane := 0; lane < 32; lane++ {
		g, q := lane/4, lane%4
		for i := 0; i < 4; i++ {
			want := val(i, g, 2*q) | val(i, g, 2*q+1)<<16
			assert.Equal(t, want, got[8*lane+i], "ldmatrix lane %d matrix %d", lane, i)
			wantT := val(i, 2*q, g) | val(i, 2*q+1, g)<<16
			assert.Equal(t, wantT, got[8*lane+4+i], "ldmatrix.trans lane %d matrix %d", lane, i)
		}
	}
}

// TestCpAsync: copies arrive at the wait that covers their group. With
// the waits in place every thread reads its neighbour's copy of all three
// stages; a wait left out, one that leaves too many groups pending, or a
// wait by one thread only (which covers only that thread's copies) reads
// NaN where the copy had not arrived.
func TestCpAsync(t *testing.T) {
	r := newRig(t)
	in := make([]byte, 4*768)
	for e := 0; e < 768; e++ {
		u := math.Float32bits(float32(e) + 0.5)
		in[4*e], in[4*e+1], in[4*e+2], in[4*e+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	dIn := r.alloc(len(in))
	r.write(dIn, in)
	run := func(mode uint32) []float32 {
		dOut := r.alloc(4 * 768)
		require.NoError(t, r.launchTC("emu_cp_async", [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, dIn, dOut, mode))
		require.NoError(t, r.sync())
		u := u32s(r.read(dOut, 4*768))
		out := make([]float32, len(u))
		for i, x := range u {
			out[i] = math.Float32frombits(x)
		}
		return out
	}
	// want(s, t, k): what thread t reads of stage s, element k: its
	// neighbour t^1's copy.
	want := func(s, th, k int) float32 { return float32(256*s+4*(th^1)+k) + 0.5 }
	check := func(mode uint32, nanStage0 func(th int) bool, nanLater func(th int) bool) {
		got := run(mode)
		for s := 0; s < 3; s++ {
			for th := 0; th < 64; th++ {
				for k := 0; k < 4; k++ {
					v := got[256*s+4*th+k]
					nan := (s == 0 && nanStage0(th)) || (s > 0 && nanLater(th))
					if nan {
						assert.True(t, math.IsNaN(float64(v)), "mode %d stage %d thread %d: %v, want NaN", mode, s, th, v)
					} else {
						assert.Equal(t, want(s, th, k), v, "mode %d stage %d thread %d element %d", mode, s, th, k)
					}
				}
			}
		}
	}
	never := func(int) bool { return false }
	always := func(int) bool { return true }
	check(0, never, never)
	check(1, always, never)
	check(2, always, never)
	// Mode 3: thread 0 waited for all its copies; the others never did,
	// so only thread 1 (which reads thread 0's copy) sees data.
	notOne := func(th int) bool { return th != 1 }
	check(3, notOne, notOne)
}

//go:build darwin && cgo

package metal

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gpuOpen opens the darwin runtime, or skips where the machine has no
// Metal device golf can use (none, an Intel Mac's GPU, macOS before 14).
func gpuOpen(t *testing.T) *darwinRuntime {
	t.Helper()
	rt, err := NewDarwinRuntime()
	if errors.Is(err, errNoDevice) {
		t.Skipf("not supported: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "use --backend cpu") {
		t.Skipf("not supported: %v", err)
	}
	require.NoError(t, err, "NewDarwinRuntime")
	t.Cleanup(func() { assert.NoError(t, rt.Close(), "Close") })
	return rt.(*darwinRuntime)
}

// gpuPipeline returns the pipeline for name, or skips when the library lacks it.
func gpuPipeline(t *testing.T, r *darwinRuntime, name string) Pipeline {
	t.Helper()
	p, err := r.Pipeline(name)
	if errors.Is(err, errNoKernel) {
		t.Skipf("not supported: %v", err)
	}
	require.NoError(t, err, "Pipeline(%s)", name)
	require.GreaterOrEqual(t, p.MaxThreads(), 32, "%s: maxTotalThreadsPerThreadgroup", name)
	return p
}

func gpuF32s(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func gpuEltwiseArgs(n int) []byte {
	return binary.LittleEndian.AppendUint32(nil, uint32(n))
}

// gpuReluSq is the float64 oracle of relu_sq_fwd rounded once to float32: the
// product of two float32 values is exact in float64.
func gpuReluSq(x float32) float32 {
	if !(x > 0) && !math.IsNaN(float64(x)) {
		return 0
	}
	v := float64(x)
	return float32(v * v)
}

func gpuSameFloat(a, b float32) bool {
	if math.IsNaN(float64(a)) || math.IsNaN(float64(b)) {
		return math.IsNaN(float64(a)) && math.IsNaN(float64(b))
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// gpuRequireSame stops the test unless got is want bit for bit (any NaN
// matching any NaN); format and args name the element.
func gpuRequireSame(t *testing.T, want, got float32, format string, args ...any) {
	t.Helper()
	if !gpuSameFloat(got, want) {
		require.Equal(t, math.Float32bits(want), math.Float32bits(got),
			append([]any{format + " = %g, want %g (bits)"}, append(args, got, want)...)...)
	}
}

// gpuInputs returns n float32 values with both signs, zeros of both
// signs, infinities, NaN and squares that overflow; no value or square is
// subnormal.
func gpuInputs(n int, seed uint32) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e20, -1e20, 1e-10, 3.5e18}
	x := make([]float32, n)
	s := seed
	for i := range x {
		if i < len(special) {
			x[i] = special[i]
			continue
		}
		s = s*1664525 + 1013904223
		x[i] = (float32(s>>8)/(1<<24) - 0.5) * 8
	}
	return x
}

func TestGPUCaps(t *testing.T) {
	r := gpuOpen(t)
	c := r.Caps()
	t.Logf("%+v", c)
	assert.NotEmpty(t, c.Name, "caps: name")
	assert.GreaterOrEqual(t, c.MaxThreadsPerGroup, 256, "caps: threads per group")
	assert.GreaterOrEqual(t, c.ThreadgroupMemory, 16<<10, "caps: threadgroup memory")
	assert.NotZero(t, c.RecommendedWorkingSet, "caps: recommended working set")
	assert.True(t, c.UnifiedMemory, "caps: unified memory")
	if chip, ok := ChipOf(c.Name); ok {
		t.Logf("peak table: %+v", chip)
	} else {
		t.Logf("%q is not in the peak table: no peak, command buffers planned for the %s", c.Name, slowestChip.Name)
	}
}

// TestGPUPipelines logs every pipeline NewDarwinRuntime built (the
// registry in the device's flavour and element types) with its
// maxTotalThreadsPerThreadgroup, and checks each allows the threads its op
// dispatches. The emulator's tests run the host against low limits
// (EmuConfig.MaxThreads); this is where the real ones are seen.
func TestGPUPipelines(t *testing.T) {
	r := gpuOpen(t)
	c := r.Caps()
	n := 0
	for _, k := range Kernels {
		for _, e := range ElemTypes {
			if e == "bfloat" && !c.BFloat {
				continue
			}
			name := KernelName(k.Op, k.Dir, c.Flavour, e)
			p, ok := r.pipes[name]
			if !assert.True(t, ok, "pipeline %s was not built at start-up", name) {
				continue
			}
			n++
			t.Logf("%-36s maxTotalThreadsPerThreadgroup %4d (op dispatches %d)", name, p.MaxThreads(), requiredThreads(k, c.Flavour))
			assert.GreaterOrEqual(t, p.MaxThreads(), max(32, requiredThreads(k, c.Flavour)), "%s: threads per threadgroup against what its op needs", name)
		}
	}
	t.Logf("%d pipelines of flavour %s", n, c.Flavour)
	_, err := Open(r)
	assert.NoError(t, err, "Open")
}

func TestGPUBuffers(t *testing.T) {
	r := gpuOpen(t)
	b, err := r.NewBuffer(1001)
	require.NoError(t, err, "NewBuffer(1001)")
	require.Equal(t, 1001, b.Len(), "Len")
	require.Len(t, b.Bytes(), 1001, "Bytes")
	require.Equal(t, make([]byte, 1001), b.Bytes(), "a new buffer's bytes")
	want := make([]byte, 1001)
	for i := range b.Bytes() {
		b.Bytes()[i] = byte(i * 7)
		want[i] = byte(i * 7)
	}
	require.Equal(t, want, b.Bytes(), "bytes after a write")
	r.Free(b)
	assert.Panics(t, func() { b.Bytes() }, "Bytes after Free")
	assert.Panics(t, func() { r.Free(b) }, "double Free")
	z, err := r.NewBuffer(0)
	require.NoError(t, err, "NewBuffer(0)")
	require.Equal(t, 0, z.Len(), "NewBuffer(0): Len")
	require.Empty(t, z.Bytes(), "NewBuffer(0): Bytes")
	r.Free(z)
	_, err = r.NewBuffer(-1)
	assert.Error(t, err, "NewBuffer(-1)")
}

// TestGPUReluSq runs relu_sq forward and backward on an awkward size and
// compares every element with the float64 oracle, bit for bit (fast math
// is off and each result is rounded once).
func TestGPUReluSq(t *testing.T) {
	r := gpuOpen(t)
	fwd := gpuPipeline(t, r, KernelName("relu_sq", "fwd", r.Caps().Flavour, "float"))
	bwd := gpuPipeline(t, r, KernelName("relu_sq", "bwd", r.Caps().Flavour, "float"))
	const n = 1003
	x := gpuInputs(n, 1)
	dout := gpuInputs(n, 2)
	bx, bdout, bout, bdx := gpuNewF32(t, r, x), gpuNewF32(t, r, dout), gpuNewF32(t, r, make([]float32, n)), gpuNewF32(t, r, make([]float32, n))
	group := min(256, fwd.MaxThreads(), bwd.MaxThreads())
	grid := [3]int{(n + group - 1) / group, 1, 1}
	require.NoError(t, r.Dispatch(fwd, grid, [3]int{group, 1, 1}, []Arg{{Buf: bx}, {Buf: bout}, {Bytes: gpuEltwiseArgs(n)}}, nil), "dispatch fwd")
	require.NoError(t, r.Dispatch(bwd, grid, [3]int{group, 1, 1}, []Arg{{Buf: bdout}, {Buf: bx}, {Buf: bdx}, {Bytes: gpuEltwiseArgs(n)}}, nil), "dispatch bwd")
	require.NoError(t, r.Sync(), "Sync")
	out, dx := gpuF32s(bout.Bytes()), gpuF32s(bdx.Bytes())
	for i := range n {
		gpuRequireSame(t, gpuReluSq(x[i]), out[i], "fwd[%d]: relu_sq(%g)", i, x[i])
		r := float64(0)
		if x[i] > 0 || math.IsNaN(float64(x[i])) {
			r = float64(x[i])
		}
		gpuRequireSame(t, float32(2*r*float64(dout[i])), dx[i], "bwd[%d]: x %g dout %g: dx", i, x[i], dout[i])
	}
}

func gpuNewF32(t *testing.T, r *darwinRuntime, v []float32) Buffer {
	t.Helper()
	b, err := r.NewBuffer(4 * len(v))
	require.NoError(t, err, "NewBuffer(%d)", 4*len(v))
	copy(gpuF32s(b.Bytes()), v)
	t.Cleanup(func() { r.Free(b) })
	return b
}

// TestGPUBatchedDispatches encodes enough dispatches to span many command
// buffers and the in-flight limit, each on its own slice of two buffers
// (bound at offsets), without allocating in Go and with one Objective-C
// call per dispatch.
func TestGPUBatchedDispatches(t *testing.T) {
	r := gpuOpen(t)
	fwd := gpuPipeline(t, r, KernelName("relu_sq", "fwd", r.Caps().Flavour, "float"))
	const chunk = 64
	dispatches := defaultMaxDispatches*(defaultMaxInFlight+3) + 7
	x := gpuInputs(chunk*dispatches, 3)
	bx, bout := gpuNewF32(t, r, x), gpuNewF32(t, r, make([]float32, len(x)))
	args := []Arg{{Buf: bx}, {Buf: bout}, {Bytes: gpuEltwiseArgs(chunk)}}
	i := 0
	allocs := testing.AllocsPerRun(dispatches-1, func() {
		args[0].Offset, args[1].Offset = 4*chunk*i, 4*chunk*i
		// Checked before asserting: the success path must not allocate.
		if err := r.Dispatch(fwd, [3]int{1, 1, 1}, [3]int{chunk, 1, 1}, args, nil); err != nil {
			require.NoError(t, err, "dispatch %d", i)
		}
		i++
	})
	require.NoError(t, r.Sync(), "Sync")
	require.Equal(t, dispatches, i, "dispatches")
	assert.Zero(t, allocs, "Dispatch allocations per call")
	assert.Equal(t, 1.0, ObjCCallsPerDispatch(r), "ObjCCallsPerDispatch")
	st := r.Stats()
	t.Logf("%+v", st)
	assert.Equal(t, uint64(dispatches), st.Dispatches, "stats: dispatches")
	assert.LessOrEqual(t, st.MaxBufferDispatches, defaultMaxDispatches, "stats: most dispatches in a command buffer")
	assert.GreaterOrEqual(t, st.CommandBuffers, uint64(dispatches/defaultMaxDispatches), "stats: command buffers after %d dispatches", dispatches)
	assert.Equal(t, uint64(1), st.Drains, "stats: drains after one Sync")
	out := gpuF32s(bout.Bytes())
	for k := range x {
		gpuRequireSame(t, gpuReluSq(x[k]), out[k], "dispatch %d element %d: relu_sq(%g)", k/chunk, k%chunk, x[k])
	}
}

// TestGPUDispatchErrors checks the misuse Dispatch reports instead of
// letting Metal skip or fault.
func TestGPUDispatchErrors(t *testing.T) {
	r := gpuOpen(t)
	fwd := gpuPipeline(t, r, KernelName("relu_sq", "fwd", r.Caps().Flavour, "float"))
	b := gpuNewF32(t, r, make([]float32, 16))
	ok := []Arg{{Buf: b}, {Buf: b}, {Bytes: gpuEltwiseArgs(16)}}
	one := [3]int{1, 1, 1}
	for _, tc := range []struct {
		name        string
		grid, group [3]int
		args        []Arg
		tg          []int
		want        string
	}{
		{"group too large", one, [3]int{fwd.MaxThreads() + 1, 1, 1}, ok, nil, "threads per group"},
		{"zero group", one, [3]int{0, 1, 1}, ok, nil, "grid"},
		{"negative grid", [3]int{-1, 1, 1}, one, ok, nil, "grid"},
		{"buffer and bytes", one, one, []Arg{{Buf: b, Bytes: []byte{1}}}, nil, "both"},
		{"too many bytes", one, one, []Arg{{Bytes: make([]byte, dwMaxBytes+1)}}, nil, "inline bytes"},
		{"empty bytes", one, one, []Arg{{Bytes: []byte{}}}, nil, "inline bytes"},
		{"offset past end", one, one, []Arg{{Buf: b, Offset: 64}}, nil, "offset"},
		{"negative offset", one, one, []Arg{{Buf: b, Offset: -4}}, nil, "offset"},
		{"foreign buffer", one, one, []Arg{{Buf: gpuFakeBuffer{}}}, nil, "another runtime"},
		{"too many args", one, one, make([]Arg, dwMaxArgs+1), nil, "at most"},
		{"threadgroup memory", one, one, ok, []int{r.Caps().ThreadgroupMemory + 1}, "threadgroup memory"},
		{"negative threadgroup memory", one, one, ok, []int{-1}, "threadgroup memory"},
	} {
		err := r.Dispatch(fwd, tc.grid, tc.group, tc.args, tc.tg)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	assert.Error(t, r.Dispatch(gpuFakePipeline{}, one, one, ok, nil), "Dispatch of a foreign pipeline")
	require.NoError(t, r.Sync(), "Sync")
}

type gpuFakeBuffer struct{}

func (gpuFakeBuffer) Len() int      { return 4 }
func (gpuFakeBuffer) Bytes() []byte { return make([]byte, 4) }

type gpuFakePipeline struct{}

func (gpuFakePipeline) Name() string    { return "fake" }
func (gpuFakePipeline) MaxThreads() int { return 1024 }

// TestGPUCommandBufferError checks that a command buffer failure is fatal
// for the runtime: Sync returns it, and so does every later call. A real
// GPU fault cannot be provoked portably (shader validation reports
// out-of-bounds stores on stderr, not in the command buffer's error), so
// the failure is recorded the way the shim records Metal's own: an NSError
// in MTLCommandBufferErrorDomain, between real dispatches.
func TestGPUCommandBufferError(t *testing.T) {
	r := gpuOpen(t)
	fwd := gpuPipeline(t, r, KernelName("relu_sq", "fwd", r.Caps().Flavour, "float"))
	x := []float32{-2, 3}
	bx, bout := gpuNewF32(t, r, x), gpuNewF32(t, r, make([]float32, 2))
	args := []Arg{{Buf: bx}, {Buf: bout}, {Bytes: gpuEltwiseArgs(2)}}
	require.NoError(t, r.Dispatch(fwd, [3]int{1, 1, 1}, [3]int{32, 1, 1}, args, nil), "dispatch")
	r.injectFailure("Impacting Interactivity (0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)", 2)
	err := r.Sync()
	require.ErrorIs(t, err, errFaulted, "Sync after the failure")
	require.ErrorContains(t, err, "Impacting Interactivity", "Sync: the fatal preemption error")
	require.ErrorContains(t, err, "--max-microbatch-tokens", "Sync: the preemption error's hint")
	for name, call := range map[string]func() error{
		"Sync":     r.Sync,
		"Wait":     func() error { return r.Wait(r.LastSerial()) },
		"Dispatch": func() error { return r.Dispatch(fwd, [3]int{1, 1, 1}, [3]int{32, 1, 1}, args, nil) },
		"NewBuffer": func() error {
			_, err := r.NewBuffer(16)
			return err
		},
		"Pipeline": func() error {
			_, err := r.Pipeline(fwd.Name())
			return err
		},
	} {
		got := call()
		assert.True(t, got == err, "%s after the failure = %v, want the same fatal error %v", name, got, err)
	}
}

// TestGPUCompileError checks that a library that does not compile is an
// error carrying the compiler's message.
func TestGPUCompileError(t *testing.T) {
	r := gpuOpen(t)
	_, err := r.compile("#include <metal_stdlib>\nkernel void broken(device float* x [[buffer(0)]]) { x[0] = undeclared_name; }\n")
	require.ErrorContains(t, err, "undeclared_name", "compile of a broken source: the compiler log")
	_, err = r.Pipeline("no_such_kernel")
	assert.ErrorIs(t, err, errNoKernel, "Pipeline(no_such_kernel)")
}

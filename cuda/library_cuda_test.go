//go:build cuda

package cuda

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestArchs are the architectures the library is checked on: A100 (sm_80),
// the RTX 30 series and A10/A40 (sm_86), L4/L40/RTX 40 (sm_89) and H100/H200
// (sm_90).
var TestArchs = []string{"sm_80", "sm_86", "sm_89", "sm_90"}

var (
	libOnce  sync.Once
	libFiles []*CompiledFile
	libErr   error
)

// compiledLibrary compiles every kernel file for TestArchs × ElemTypes once
// per test binary, through the production path (FileProgram,
// CompileOptions, the NVRTC binding, KernelResources). Without a cache,
// unless GOLF_CUDA_CACHE_DIR names one: a developer's repeated runs, and
// CI, whose `golf kernels --backend cuda` has just compiled the same
// programs into it with the same NVRTC (CompileJobs, under keys of the
// sources' hash, the options and NVRTC's version), so every tagged test
// package reads them instead of compiling the library again.
func compiledLibrary(t *testing.T) []*CompiledFile {
	t.Helper()
	n := requireNVRTC(t)
	libOnce.Do(func() {
		libFiles, libErr = n.CompileJobs(context.Background(), LibraryJobs(TestArchs, ElemTypes), testCache(), 0, 0)
	})
	require.NoError(t, libErr)
	return libFiles
}

// Every kernel × flavour × dtype compiles for sm_80..sm_90 without errors
// or spills, the library holds exactly the registry, every kernel's launch
// bounds are its table entry's threads, and every launch fits (threads,
// registers, shared memory).
func TestLibraryCompilesAndFits(t *testing.T) {
	files := compiledLibrary(t)
	rows, err := Report(files)
	require.NoError(t, err)
	assert.Len(t, rows, len(TestArchs)*len(Kernels)*len(Flavours)*len(ElemTypes))
	spills := 0
	for _, r := range rows {
		spills += r.Resources.SpillStores + r.Resources.SpillLoads
		assert.Zero(t, r.Resources.StackFrame, "%s on %s uses local memory", r.Function, r.Arch)
	}
	assert.Zero(t, spills)
	// Each (arch, elem) compiled every kernel file once.
	assert.Len(t, files, len(TestArchs)*len(ElemTypes)*len(KernelFiles()))
}

// The tc kernels are tensor-core code and the portable ones are not: in
// the PTX of linear.cu for bf16 and fp16, every tc entry issues mma.sync
// m16n8k16 in its type and no portable entry does; in float there is no tc
// function (its name resolves to the portable kernel).
func TestLibraryFlavours(t *testing.T) {
	n := requireNVRTC(t)
	p, err := FileProgram("linear")
	require.NoError(t, err)
	for elem, ptxType := range map[string]string{"bfloat": "bf16", "half": "f16", "float": ""} {
		r, err := n.Compile(p, CompileOptions("compute_80", elem))
		require.NoError(t, err)
		entries := strings.Split(r.PTX, ".entry ")[1:]
		require.Len(t, entries, countLinear(elem))
		for _, e := range entries {
			name := e[:strings.IndexAny(e, "( \n")]
			hasMMA := strings.Contains(e, "mma.sync.aligned.m16n8k16.row.col.f32."+ptxType+"."+ptxType+".f32")
			assert.Equal(t, strings.Contains(name, "_tc_"), hasMMA && ptxType != "", "%s: mma.sync %v", name, hasMMA)
		}
	}
}

// countLinear is the number of linear.cu kernels for elem.
func countLinear(elem string) int {
	n := 0
	for _, name := range HostNames(elem) {
		if strings.HasPrefix(name, "gemm") {
			n++
		}
	}
	return n
}

// The CPU emulator's code paths (no PTX: integer conversions, the
// warp-shuffle matrix product) are valid CUDA C++ too: compiled by NVRTC
// with -DGOLF_NO_PTX, the library is still exactly the registry. They are
// not meant to run on a GPU, so they are compiled to PTX (compute_80)
// without device optimisation (-G): the front end checks the source and the
// PTX lists every entry, in a second where the optimised cubin of the
// unrolled shuffle products takes a minute per file.
func TestLibraryCompilesWithoutPTX(t *testing.T) {
	n := requireNVRTC(t)
	type job struct{ file, elem string }
	var jobs []job
	for _, e := range ElemTypes {
		for _, f := range KernelFiles() {
			jobs = append(jobs, job{f, e})
		}
	}
	entries := make([][]string, len(jobs))
	errs := make([]error, len(jobs))
	stderr := captureStderr(t, func() {
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for i, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				p, err := FileProgram(j.file)
				if err != nil {
					errs[i] = err
					return
				}
				r, err := n.Compile(p, CompileOptions("compute_80", j.elem, "-DGOLF_NO_PTX", "-G"))
				if err != nil {
					errs[i] = err
					return
				}
				for _, e := range strings.Split(r.PTX, ".entry ")[1:] {
					entries[i] = append(entries[i], e[:strings.IndexAny(e, "( \n")])
				}
			}()
		}
		wg.Wait()
	})
	require.NoError(t, errors.Join(errs...))
	// With -G, NVVM 11.8's verifier warns on stderr about every call in a
	// macro-expanded kernel body (each kernel here): a debug location it
	// does not give such calls itself. The PTX is unaffected. Anything else
	// printed there is an error.
	warned := 0
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		switch {
		case line == "":
		case line == "inlinable function call in a function with debug info must have a !dbg location":
			warned++
		case strings.HasPrefix(line, "  call "):
		default:
			t.Errorf("NVRTC printed on stderr: %q", line)
		}
	}
	if warned > 0 {
		t.Logf("NVVM's verifier warned %d times about the debug locations of calls in macro-expanded kernels (-G only)", warned)
	}
	for _, e := range ElemTypes {
		var got []string
		for i, j := range jobs {
			if j.elem == e {
				got = append(got, entries[i]...)
			}
		}
		assert.ElementsMatch(t, HostNames(e), got, e)
	}
}

// testCache is the cache of GOLF_CUDA_CACHE_DIR, or nil (compile
// everything).
func testCache() *Cache {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return &Cache{Dir: d}
	}
	return nil
}

func TestCompileFileCache(t *testing.T) {
	n := requireNVRTC(t)
	c := &Cache{Dir: t.TempDir()}
	a, err := n.CompileFile("relu_sq", "sm_80", "float", c, 0)
	require.NoError(t, err)
	assert.False(t, a.Cached)
	b, err := n.CompileFile("relu_sq", "sm_80", "float", c, 0)
	require.NoError(t, err)
	assert.True(t, b.Cached)
	assert.True(t, bytes.Equal(a.CUBIN, b.CUBIN))
	assert.Equal(t, a.Kernels, b.Kernels)
	d, err := n.CompileFile("relu_sq", "sm_80", "float", c, 12040)
	require.NoError(t, err)
	assert.False(t, d.Cached, "another driver version must not hit")
}

// fixture compiles testdata/<name> with the kernel headers for arch.
func fixture(t *testing.T, n *NVRTC, name, arch string, extra ...string) (*CompileResult, error) {
	t.Helper()
	src, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	hdrs, err := kernelHeaders()
	require.NoError(t, err)
	return n.Compile(Program{Name: name, Source: string(src), Headers: hdrs}, CompileOptions(arch, "float", extra...))
}

// Planted violation: a syntax error is reported with the file and line.
func TestFixtureSyntaxErrorNamesFileAndLine(t *testing.T) {
	n := requireNVRTC(t)
	_, err := fixture(t, n, "syntax_error.cu", "sm_80")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "syntax_error.cu(6): error: expected an expression")
}

// Planted violation: more static shared memory than a kernel may declare.
func TestFixtureTooMuchSharedMemory(t *testing.T) {
	n := requireNVRTC(t)
	_, err := fixture(t, n, "too_much_shared.cu", "sm_90")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hog_portable_float")
	assert.Contains(t, err.Error(), "too much shared data")
}

// Planted violation: bf16 needs sm_80; the same file compiles in float for
// sm_75, so the failure is the bf16 conversions' (PTX cvt.rn.bf16.f32).
func TestFixtureBF16OnSM75(t *testing.T) {
	n := requireNVRTC(t)
	_, err := n.CompileFile("elementwise", "sm_75", "bfloat", nil, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "requires .target sm_80 or higher")
	_, err = n.CompileFile("elementwise", "sm_75", "float", nil, 0)
	require.NoError(t, err)
}

// Planted violations of the launch rules, on real compiled kernels: a
// kernel squeezed into too few registers spills; a launch beyond the launch
// bounds, one whose registers overflow the block, and one asking for more
// dynamic shared memory than sm_86 has are each refused.
func TestFixtureLaunchViolations(t *testing.T) {
	n := requireNVRTC(t)
	a86, err := Limits("sm_86")
	require.NoError(t, err)

	r, err := fixture(t, n, "resources.cu", "sm_86", "--maxrregcount=24")
	require.NoError(t, err)
	res, err := KernelResources(r.CUBIN, r.Log, "sm_86")
	require.NoError(t, err)
	require.Greater(t, res["bar"].SpillStores, 0, "bar should spill at 24 registers:\n%s", r.Log)
	err = CheckFit("bar", res["bar"], Launch{Threads: 64}, a86)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bar on sm_86: spills registers")

	r, err = fixture(t, n, "resources.cu", "sm_86")
	require.NoError(t, err)
	res, err = KernelResources(r.CUBIN, r.Log, "sm_86")
	require.NoError(t, err)
	require.NoError(t, CheckFit("foo", res["foo"], Launch{Threads: 256}, a86))

	err = CheckFit("foo", res["foo"], Launch{Threads: 512}, a86)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeds the kernel's launch bounds (256)")

	bar := res["bar"]
	require.Greater(t, bar.Registers, 64, "bar should need many registers")
	err = CheckFit("bar", bar, Launch{Threads: 1024}, a86)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "registers per block")

	err = CheckFit("foo", res["foo"], Launch{Threads: 256, DynamicShared: 99 << 10}, a86)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "the limit is 101376"), err.Error())
}

//go:build cuda

package cuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// EnvRequireLibs, set to 1 (CI does), turns a missing NVRTC or cuBLASLt
// from a skip into a failure.
const EnvRequireLibs = "GOLF_REQUIRE_CUDA_LIBS"

// needLib fails (under GOLF_REQUIRE_CUDA_LIBS=1) or skips a test whose
// library did not load.
func needLib(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv(EnvRequireLibs) == "1" {
		t.Fatalf("%v\n(%s=1: install the libraries with scripts/ci/cuda_libs.sh)", err, EnvRequireLibs)
	}
	t.Skipf("%v\n(set %s=1 to make this a failure)", err, EnvRequireLibs)
}

func requireNVRTC(t testing.TB) *NVRTC {
	t.Helper()
	n, err := LoadNVRTC()
	needLib(t, err)
	return n
}

func TestNVRTCLoads(t *testing.T) {
	n := requireNVRTC(t)
	assert.True(t, n.Major > 11 || n.Major == 11 && n.Minor >= 8, "NVRTC %d.%d", n.Major, n.Minor)
	assert.True(t, filepath.IsAbs(n.Path), "NVRTC path %q", n.Path)
	assert.Equal(t, filepath.Dir(n.Path), filepath.Dir(n.BuiltinsPath), "builtins from another directory")
	assert.Contains(t, filepath.Base(n.BuiltinsPath), "libnvrtc-builtins.so.")
	archs, err := n.SupportedArchs()
	require.NoError(t, err)
	for _, a := range []string{"sm_80", "sm_86", "sm_89", "sm_90"} {
		assert.Contains(t, archs, a)
	}
}

// The fixture of cubin_test.go, compiled again through the binding: the
// cubin reader and the log agree with the source's numbers.
func TestNVRTCCompileResourcesFixture(t *testing.T) {
	n := requireNVRTC(t)
	src, err := os.ReadFile("testdata/resources.cu")
	require.NoError(t, err)
	res, err := n.Compile(Program{Name: "resources.cu", Source: string(src)},
		[]string{"--gpu-architecture=sm_86", "--ptxas-options=-v"})
	require.NoError(t, err)
	assert.Contains(t, res.Log, "Compiling entry function 'foo' for 'sm_86'")
	kr, err := KernelResources(res.CUBIN, res.Log, "sm_86")
	require.NoError(t, err)
	assert.Equal(t, 256, kr["foo"].MaxThreads)
	assert.Equal(t, 1200, kr["foo"].StaticShared)
	assert.Equal(t, 0, kr["bar"].MaxThreads)
}

// A syntax error in a header is reported with the header's name and line.
func TestNVRTCCompileErrorNamesFileAndLine(t *testing.T) {
	n := requireNVRTC(t)
	p := Program{
		Name:    "main.cu",
		Source:  "#include \"helper.cuh\"\nextern \"C\" __global__ void k(float* x) { x[0] = helper(); }\n",
		Headers: []Header{{"helper.cuh", "__device__ float helper() {\n  return 1.0f\n}\n"}},
	}
	_, err := n.Compile(p, []string{"--gpu-architecture=sm_80"})
	require.Error(t, err)
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Log, "helper.cuh(3): error")
	assert.True(t, strings.HasPrefix(err.Error(), "cuda: compiling main.cu (--gpu-architecture=sm_80): NVRTC_ERROR_COMPILATION"), err.Error())
}

func TestNVRTCCompilePTX(t *testing.T) {
	n := requireNVRTC(t)
	res, err := n.Compile(Program{Name: "p.cu", Source: "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n"},
		[]string{"--gpu-architecture=compute_80"})
	require.NoError(t, err)
	assert.Nil(t, res.CUBIN)
	assert.Contains(t, res.PTX, ".target sm_80")
	assert.Contains(t, res.PTX, ".entry k(")
}

// A library file that is not a shared object is recorded with dlopen's
// reason, and the search ends in one error listing every path (the
// sonames are changed so that the loader finds nothing real).
func TestOpenNVRTCMissingListsEveryPath(t *testing.T) {
	dir := t.TempDir()
	lib := LibNVRTC
	lib.Sonames = []string{"libnvrtc-golf-test.so.99"}
	require.NoError(t, os.WriteFile(filepath.Join(dir, lib.Sonames[0]), []byte("not an ELF"), 0o644))
	env := DefaultSearchEnv()
	getenv := env.Getenv
	env.Getenv = func(k string) string {
		if k == EnvLibPath {
			return dir
		}
		return getenv(k)
	}
	_, err := openNVRTC(lib, env)
	require.Error(t, err)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "cuda: NVRTC not found; tried:\n  "+filepath.Join(dir, lib.Sonames[0])+": file too short\n"), msg)
	assert.Contains(t, msg, "\n  libnvrtc-golf-test.so.99: cannot open shared object file")
	assert.Contains(t, msg, "/usr/lib64/libnvrtc-golf-test.so.99: no such file")
	assert.Contains(t, msg, "scripts/ci/cuda_libs.sh")
}

func TestVersionLess(t *testing.T) {
	assert.True(t, versionLess("libnvrtc-builtins.so.12.9", "libnvrtc-builtins.so.12.10"))
	assert.False(t, versionLess("libnvrtc-builtins.so.12.10", "libnvrtc-builtins.so.12.9"))
	assert.True(t, versionLess("/a/libx.so.12", "/b/libx.so.12.1"))
}

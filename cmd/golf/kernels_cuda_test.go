//go:build cuda

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
)

// cudaLibsMissing matches the error of a golf command that could not load
// NVRTC or cuBLASLt (cuda.LoadError's first line).
var cudaLibsMissing = regexp.MustCompile(`cuda: (NVRTC|cuBLASLt) (not found|too old)`)

// skipWithoutLibs skips the test when a golf command failed because NVRTC
// or cuBLASLt is missing, or fails it under GOLF_REQUIRE_CUDA_LIBS=1 (CI).
// The test process never loads the libraries itself: a child's peak
// memory (ru_maxrss) starts from its parent's at exec, so NVRTC's pages in
// this process would count against the refusal tests' memory bound.
func skipWithoutLibs(t *testing.T, code int, out string) {
	t.Helper()
	if code == 0 || !cudaLibsMissing.MatchString(out) {
		return
	}
	if os.Getenv("GOLF_REQUIRE_CUDA_LIBS") == "1" {
		t.Fatal(out)
	}
	t.Skip(out)
}

func TestKernelsCommandReport(t *testing.T) {
	env := []string{cuda.EnvCacheDir + "=" + t.TempDir()}
	code, out := golf(t, env, "kernels", "--arch", "sm_80", "--dtype", "fp32")
	skipWithoutLibs(t, code, out)
	require.Equal(t, 0, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// A header, one row per kernel × flavour, and the summary line.
	assert.Len(t, lines, 1+len(cuda.Kernels)*len(cuda.Flavours)+1, out)
	assert.Regexp(t, `(?m)^attention_fwd +portable +float +sm_80 +attention_fwd_portable_float +\d+ +0 +0 +\d+ +128 +\| 128 +0 +\(⌈T/32⌉, H, B\)$`, out)
	assert.Contains(t, out, "golf kernels: 14 programs (0 from the cache)")

	// The second run reads every program from the cache, and writes each
	// program's log, ptxas's report in it, where --log-dir says.
	logs := filepath.Join(t.TempDir(), "logs")
	code, out = golf(t, env, "kernels", "--arch", "sm_80", "--dtype", "fp32", "--log-dir", logs)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "golf kernels: 14 programs (14 from the cache)")
	names, err := filepath.Glob(filepath.Join(logs, "*.log"))
	require.NoError(t, err)
	assert.Len(t, names, 14)
	b, err := os.ReadFile(filepath.Join(logs, "attention.sm_80.float.log"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "Compiling entry function 'attention_fwd_portable_float' for 'sm_80'")
}

// A compile error fails the command with NVRTC's log: bf16 needs sm_80.
func TestKernelsCommandCompileError(t *testing.T) {
	code, out := golf(t, []string{cuda.EnvCacheDir + "=" + t.TempDir()}, "kernels", "--arch", "sm_75", "--dtype", "bf16")
	skipWithoutLibs(t, code, out)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "requires .target sm_80 or higher")
	assert.Contains(t, out, "cuda: compiling elementwise.cu (--gpu-architecture=sm_75")
}

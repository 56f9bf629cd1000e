//go:build cuda

package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
)

// needNVRTC skips (or, under GOLF_REQUIRE_CUDA_LIBS=1, fails) without NVRTC.
func needNVRTC(t *testing.T) {
	t.Helper()
	if _, err := cuda.LoadNVRTC(); err != nil {
		if os.Getenv("GOLF_REQUIRE_CUDA_LIBS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

func TestKernelsCommandReport(t *testing.T) {
	needNVRTC(t)
	env := []string{cuda.EnvCacheDir + "=" + t.TempDir()}
	code, out := golf(t, env, "kernels", "--arch", "sm_80", "--dtype", "fp32")
	require.Equal(t, 0, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// A header, one row per kernel × flavour, and the summary line.
	assert.Len(t, lines, 1+len(cuda.Kernels)*len(cuda.Flavours)+1, out)
	assert.Regexp(t, `(?m)^attention_fwd +portable +float +sm_80 +attention_fwd_portable_float +\d+ +0 +0 +\d+ +128 +\| 128 +0 +\(⌈T/32⌉, H, B\)$`, out)
	assert.Contains(t, out, "golf kernels: 13 programs (0 from the cache)")

	// The second run reads every program from the cache.
	code, out = golf(t, env, "kernels", "--arch", "sm_80", "--dtype", "fp32")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "golf kernels: 13 programs (13 from the cache)")
}

// A compile error fails the command with NVRTC's log: bf16 needs sm_80.
func TestKernelsCommandCompileError(t *testing.T) {
	needNVRTC(t)
	code, out := golf(t, []string{cuda.EnvCacheDir + "=" + t.TempDir()}, "kernels", "--arch", "sm_75", "--dtype", "bf16")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "requires .target sm_80 or higher")
	assert.Contains(t, out, "cuda: compiling elementwise.cu (--gpu-architecture=sm_75")
}

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/kemu/msl/strict"
	"github.com/golf-ml/golf/metal"
)

// `golf kernels --backend metal` prints the structure report from the
// shaders and the strict metal_stdlib the binary embeds: run here from an
// empty directory, away from the source tree.
func TestKernelsMetalReport(t *testing.T) {
	if _, err := metal.StructureClang(); err != nil {
		if os.Getenv(strict.EnvRequireClang) == "1" {
			t.Fatalf("%s=1: %v", strict.EnvRequireClang, err)
		}
		t.Skip(err)
	}
	bin, err := filepath.Abs(os.Args[0])
	require.NoError(t, err)
	cmd := exec.Command(bin, "kernels", "--backend", "metal", "--dtype", "bf16")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOLF_TEST_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr:\n%s", stderr.String())

	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.NotEmpty(t, lines)
	assert.Equal(t, []string{"KERNEL", "FLAVOUR", "ELEM", "THREADS", "TG", "BYTES", "LOAD", "B", "STORE", "B",
		"MMA/ITER", "BARRIERS/ITER", "TILES", "MAIN", "LOOP"}, strings.Fields(lines[0]))
	// One row per registry kernel × flavour, bfloat only.
	assert.Len(t, lines, 1+2*len(metal.Kernels))
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		rows[f[0]] = f
		assert.Equal(t, "bfloat", f[2], "%s", l)
	}
	// gemm_simd: 128 threads, atile and btile bfloat[2][1536] (double
	// buffered: 2·2·1536·2 = 12288 bytes), 16-byte operand loads, bfloat
	// pairs stored from registers (4 bytes), 32 MMAs at each of the fast
	// and the edge k-step's call sites (64) and 1 barrier per k-step,
	// constant tiles; the main loop in the shared body, gemm_simd_body
	// with its template arguments (no transposes, not f32, not symmetric,
	// the plain epilogue).
	assert.Equal(t, []string{"gemm_nn_simd_bfloat", "simd", "bfloat", "128", "12288", "16", "4", "64", "1", "const",
		"gemm_simd_body<0,0,0,0>", "loop", "3"}, rows["gemm_nn_simd_bfloat"])
	assert.Contains(t, stderr.String(), fmt.Sprintf("golf kernels: %d Metal kernel instantiations", 2*len(metal.Kernels)))
}

// Without clang the report fails, naming what to install.
func TestKernelsMetalNeedsClang(t *testing.T) {
	code, out := golf(t, []string{"PATH=", "GOLF_CLANG="}, "kernels", "--backend", "metal")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "found none on PATH (clang++, clang++-14")
	assert.Contains(t, out, "install clang (Debian/Ubuntu: apt-get install clang)")
}

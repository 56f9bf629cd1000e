//go:build cuda

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/cuda/standin"
	"github.com/golf-ml/golf/data"
)

var (
	cudaCacheOnce sync.Once
	cudaCacheDir  string
)

// standinEnv builds the stand-in CUDA driver and returns the environment
// that makes golf load it: GOLF_CUDA_LIB_PATH, and a kernel cache shared by
// this test binary's runs (GOLF_CUDA_CACHE_DIR when set). Without a C++
// compiler the test is skipped, or fails under GOLF_REQUIRE_CUDA_LIBS=1;
// the commands' own errors say whether NVRTC is missing (skipWithoutLibs).
func standinEnv(t *testing.T) []string {
	t.Helper()
	lib, err := standin.Build()
	if err != nil {
		if os.Getenv("GOLF_REQUIRE_CUDA_LIBS") == "1" {
			t.Fatal(err)
		}
		t.Skipf("not supported: %v", err)
	}
	cudaCacheOnce.Do(func() {
		if cudaCacheDir = os.Getenv(cuda.EnvCacheDir); cudaCacheDir == "" {
			cudaCacheDir, _ = os.MkdirTemp("", "golf-cuda-cache-")
		}
	})
	return []string{cuda.EnvLibPath + "=" + lib.Dir, cuda.EnvCacheDir + "=" + cudaCacheDir}
}

// smallData writes the embedded tokenizer and a few thousand tokens of its
// shards (one validation batch), for short runs.
func smallData(t *testing.T) (dataPath, tokPath string) {
	t.Helper()
	src, tok, err := data.ExtractEmbedded(t.TempDir())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "small")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, s := range []struct {
		name string
		n    int
	}{{"fineweb_val_000000.bin", 2049}, {"fineweb_train_000000.bin", 20000}} {
		toks, err := data.ReadShard(filepath.Join(src, s.name))
		require.NoError(t, err)
		require.NoError(t, data.WriteShard(filepath.Join(dir, s.name), toks[:s.n]))
	}
	return dir, tok
}

var finalRe = regexp.MustCompile(`(?m)^final_int8_zlib_roundtrip_exact val_loss:(\S+) val_bpb:(\S+)$`)

// TestTrainCUDAStandin trains a small model with `golf train --backend
// cuda` over the stand-in driver (the real NVRTC's cubins, golf's purego
// bindings, every kernel on the emulator, GEMMs through the stand-in
// cuBLASLt) and, from the same data, seed and flags, with --backend cpu:
// both finish with the artifacts, and the int8 round trip's val_bpb agree
// within 0.01 (the bf16 runs round alike; the tc attention kernels round P
// and dS to bf16 where the CPU keeps float32). The learning rate must not
// depend on the clock: with a wall-clock cap the warmdown is scaled by the
// measured step time (the reference's lr_mul), and the emulated device's
// steps are a hundred times the CPU's, so both runs go without the cap and
// without warmdown.
func TestTrainCUDAStandin(t *testing.T) {
	env := standinEnv(t)
	dp, tp := smallData(t)
	flags := []string{"--data-path", dp, "--tokenizer-path", tp,
		"--num-layers", "2", "--model-dim", "32", "--num-heads", "4", "--num-kv-heads", "2",
		"--train-seq-len", "64", "--train-batch-tokens", "512", "--grad-accum-steps", "1",
		"--val-batch-size", "2048", "--iterations", "4", "--warmup-steps", "0", "--train-log-every", "2",
		"--max-wallclock-seconds", "0", "--warmdown-iters", "0"}
	bpb := map[string]float64{}
	for _, be := range []string{"cuda", "cpu"} {
		out := filepath.Join(t.TempDir(), "out")
		args := append([]string{"train", "--backend", be, "--out-dir", out, "--run-id", be}, flags...)
		code, output := golf(t, env, args...)
		skipWithoutLibs(t, code, output)
		require.Equal(t, 0, code, output)
		assert.Contains(t, output, "backend_choice:requested with --backend "+be)
		assert.Regexp(t, `(?m)^step:4/4 train_loss:\d`, output)
		m := finalRe.FindStringSubmatch(output)
		require.NotNil(t, m, output)
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		bpb[be] = v
		for _, f := range []string{be + "_model.npz", be + "_model.int8.ptz", be + ".txt"} {
			st, err := os.Stat(filepath.Join(out, f))
			require.NoError(t, err)
			assert.Positive(t, st.Size(), f)
		}
		if be == "cuda" {
			assert.Contains(t, output, "golf stand-in (emulated sm_80)")
		}
	}
	t.Logf("final val_bpb: cuda %.6f, cpu %.6f", bpb["cuda"], bpb["cpu"])
	assert.InDelta(t, bpb["cpu"], bpb["cuda"], 0.01)
}

// TestInfoCUDAStandin: `golf info --backend cuda` prints the device, its
// memory and the plan of a step: the cuBLASLt plans of its GEMMs.
func TestInfoCUDAStandin(t *testing.T) {
	env := standinEnv(t)
	code, out := golf(t, env, "info", "--backend", "cuda", "--smoke")
	skipWithoutLibs(t, code, out)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "backend: cuda (requested with --backend cuda)")
	assert.Regexp(t, `device:  golf stand-in \(emulated sm_80\) \(sm_80, 108 SMs, 16\.0 GiB, tc kernels, GEMMs by cuBLASLt\)`, out)
	assert.Contains(t, out, "device plan:")
	assert.Regexp(t, `device 0: golf stand-in \(emulated sm_80\), sm_80, 108 SMs, 16\.0 GiB of memory \(golf plans within 14\.4 GiB\), driver 12\.4`, out)
	// The smoke model: 4 layers × 6 matrices, forward, dx and dw each,
	// plus the head's three and the Newton–Schulz products.
	assert.Regexp(t, `GEMMs: \d+ cuBLASLt plans \(one per shape, created on first use\), \d+ matmuls per step, 32 MiB workspace`, out)
	assert.Regexp(t, `(?m)^ +attn\.c_q forward +4096×256 +× +256 +A Bᵀ +bf16→bf16 +×4$`, out)
}

//go:build cuda

package gputest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/cuda/cudatest"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/modeltest"
	"github.com/golf-ml/golf/train"
)

// EnvRequireGPU, set to 1, fails a test that finds no GPU instead of
// skipping it.
const EnvRequireGPU = "GOLF_REQUIRE_GPU"

// standinName starts the device name of golf's stand-in driver, which is
// not a GPU.
const standinName = "golf stand-in"

// EnvAcceptStandin, set to 1, lets the tests run on the stand-in driver
// (GOLF_CUDA_LIB_PATH at a built stand-in): a check of these tests' own
// code on a machine without a GPU, not a GPU check.
const EnvAcceptStandin = "GOLF_GPUTEST_ACCEPT_STANDIN"

var (
	cacheOnce sync.Once
	cache     *cuda.Cache
)

// testCache is GOLF_CUDA_CACHE_DIR's cache, else the user's (DefaultCache),
// else one for this process, so that the library compiles once.
func testCache(t *testing.T) *cuda.Cache {
	cacheOnce.Do(func() {
		var err error
		if cache, err = cuda.DefaultCache(); err == nil {
			return
		}
		d, err := os.MkdirTemp("", "golf-cuda-cache-")
		if err != nil {
			panic(err)
		}
		cache = &cuda.Cache{Dir: d}
	})
	return cache
}

// noGPU skips the test with why (a missing GPU is not a pass), or fails it
// under GOLF_REQUIRE_GPU=1.
func noGPU(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(EnvRequireGPU) == "1" {
		t.Fatalf("%s=1 but no GPU: %s", EnvRequireGPU, why)
	}
	t.Skipf("no GPU: %s", why)
}

var (
	probeOnce sync.Once
	probeWhy  string // why no GPU opens; "" when one does
)

// requireGPU skips the test (fails it under GOLF_REQUIRE_GPU=1) unless a
// real device opens: a driver, device 0, and not the stand-in. Each test
// calls it first, so that a test without a GPU is skipped as a whole, not
// passed with skipped subtests.
func requireGPU(t *testing.T) {
	t.Helper()
	probeOnce.Do(func() {
		drv, err := cuda.LoadDriver()
		if err != nil {
			probeWhy = cuda.Summary(err)
			return
		}
		c, err := cuda.OpenContext(drv, 0)
		if err != nil {
			probeWhy = cuda.Summary(err)
			return
		}
		defer c.Close()
		if strings.HasPrefix(c.Info.Name, standinName) && os.Getenv(EnvAcceptStandin) != "1" {
			probeWhy = fmt.Sprintf("the driver found is golf's stand-in (%s) at %s", c.Info.Name, cuda.DriverPath(drv))
		}
	})
	if probeWhy != "" {
		noGPU(t, probeWhy)
	}
}

// open opens the CUDA backend on device 0 with o, compiling through
// testCache (cacheOverride when not nil), and closes it when the test ends.
func open(t *testing.T, o cuda.Options, cacheOverride *cuda.Cache, progress func(string)) *cuda.Backend {
	t.Helper()
	requireGPU(t)
	c := cacheOverride
	if c == nil {
		c = testCache(t)
	}
	if progress == nil {
		progress = func(s string) { t.Log(s) }
	}
	b, err := cuda.OpenDevice(cuda.DeviceOptions{Options: o, Cache: c, Progress: progress})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	return b
}

// The three ways the backend runs: the portable kernels; the tc kernels
// (mma.sync) with golf's own GEMM kernels; the tc kernels with cuBLASLt's
// GEMMs (what `golf train --backend cuda` runs).
var flavours = []struct {
	name string
	o    cuda.Options
}{
	{"portable", cuda.Options{Flavour: cuda.PortableFlavour, GEMM: cuda.GEMMKernels}},
	{"tc", cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMKernels}},
	{"tc_cublaslt", cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMCublasLt}},
}

// TestGPUConformance runs the conformance suite on the GPU, every op in
// every dtype against the float64 oracles, in each flavour (the tc
// flavour's 16-bit attention through cudatest.AttentionTC, with the error
// model of its design), so that the portable and tc kernels, and golf's
// GEMMs and cuBLASLt's, are each held to the same oracles on the hardware.
func TestGPUConformance(t *testing.T) {
	requireGPU(t)
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			b := open(t, f.o, nil, nil)
			t.Logf("%s: flavour %s, GEMMs by %s", b.Device(), b.Flavour(), b.GEMMPath())
			if f.o.Flavour == cuda.TCFlavour {
				backendtest.RunAll(t, cudatest.NoTCAttention(b))
				t.Run("attention_tc", func(t *testing.T) { cudatest.AttentionTC(t, b) })
				return
			}
			backendtest.RunAll(t, b)
		})
	}
}

// TestGPUTrainingStep: two full training steps of a tiny model (loss,
// every gradient, the updated weights) on the GPU match the CPU backend
// within the dtype's tolerance, in every dtype and flavour.
func TestGPUTrainingStep(t *testing.T) {
	requireGPU(t)
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) { modeltest.RunTrainingStep(t, open(t, f.o, nil, nil), cpu.New()) })
	}
}

// smallDataset writes the embedded tokenizer and a few thousand tokens of
// its shards.
func smallDataset(t *testing.T) (dataPath, tokPath string) {
	t.Helper()
	src, tok, err := data.ExtractEmbedded(t.TempDir())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "small")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, s := range []struct {
		name string
		n    int
	}{{"fineweb_val_000000.bin", 1025}, {"fineweb_train_000000.bin", 20000}} {
		toks, err := data.ReadShard(filepath.Join(src, s.name))
		require.NoError(t, err)
		require.NoError(t, data.WriteShard(filepath.Join(dir, s.name), toks[:s.n]))
	}
	return dir, tok
}

// statsAtLines records the backend's counts at each train_loss line.
type statsAtLines struct {
	b  *cuda.Backend
	mu sync.Mutex
	at map[int]cuda.Stats
}

var trainLine = regexp.MustCompile(`^step:(\d+)/\d+ train_loss:`)

func (c *statsAtLines) Write(p []byte) (int, error) {
	if m := trainLine.FindSubmatch([]byte(strings.TrimSpace(string(p)))); m != nil {
		var step int
		fmt.Sscan(string(m[1]), &step)
		c.mu.Lock()
		c.at[step] = c.b.Stats()
		c.mu.Unlock()
	}
	return len(p), nil
}

// TestGPUTrainLoopHostWaits runs golf's real training loop (train.Run) on
// the GPU (tc kernels, cuBLASLt) and counts the host's waits for the device
// and the device allocations: the five steps 11–15 between the lines of
// steps 10 and 15 (TRAIN_LOG_EVERY=5) wait once, at step 15's read of the
// losses, with no staging wait; every step up to 10 logs and waits once;
// no step after the first allocates device memory.
func TestGPUTrainLoopHostWaits(t *testing.T) {
	requireGPU(t)
	b := open(t, cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMCublasLt}, nil, nil)
	dataPath, tokPath := smallDataset(t)
	c := train.Defaults()
	c.DataPath, c.TokenizerPath, c.DataPathSet, c.TokenizerPathSet = dataPath, tokPath, true, true
	c.OutDir = t.TempDir()
	c.RunID = "waits"
	c.Iterations = 15
	c.TrainLogEvery = 5
	c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 2, 32, 4, 2
	c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 32, 256, 2, 64
	c.ValBatchSize = 2048
	c.WarmupSteps, c.WarmdownIters, c.MaxWallclockSeconds = 0, 4, 0
	c.Checkpoint.EverySeconds = 0
	c.DType = backend.BF16
	rec := &statsAtLines{b: b, at: map[int]cuda.Stats{}}
	_, err := train.Run(context.Background(), c, b, rec)
	require.NoError(t, err)
	for _, s := range []int{1, 10, 15} {
		require.Contains(t, rec.at, s)
	}
	d := rec.at[15].Sub(rec.at[10])
	t.Logf("steps 11-15: %d launches, %d matmuls, %d syncs, %d staging waits, %d allocations",
		d.Launches, d.Matmuls, d.Syncs, d.StagingWaits, d.Allocs)
	assert.EqualValues(t, 1, d.Syncs, "one host wait in five steps: step 15's read of the losses")
	assert.EqualValues(t, 0, d.StagingWaits)
	assert.Positive(t, d.Launches)
	assert.Positive(t, d.Matmuls)
	for step := 2; step <= 10; step++ {
		d := rec.at[step].Sub(rec.at[step-1])
		assert.EqualValues(t, 1, d.Syncs+d.StagingWaits, "step %d logs and waits once", step)
	}
	assert.EqualValues(t, 0, rec.at[15].Sub(rec.at[1]).Allocs, "device allocations in steps 2-15")
}

var progressRe = regexp.MustCompile(`^cuda: (\d+) kernel programs for (sm_\d+a?) \((\d+) from the cache\)`)

// TestGPUKernelCacheSecondStart: a first start with an empty cache compiles
// every program of the library for the device's architecture; the second
// reads them all from the cache.
func TestGPUKernelCacheSecondStart(t *testing.T) {
	requireGPU(t)
	c := &cuda.Cache{Dir: t.TempDir()}
	for i, wantCached := range []bool{false, true} {
		var line string
		b := open(t, cuda.Options{}, c, func(s string) {
			t.Log(s)
			if progressRe.MatchString(s) {
				line = s
			}
		})
		m := progressRe.FindStringSubmatch(line)
		require.NotNil(t, m, "start %d: no compile line", i+1)
		assert.Equal(t, b.Info().Arch(), m[2])
		if wantCached {
			assert.Equal(t, m[1], m[3], "start %d: %s", i+1, line)
		} else {
			assert.Equal(t, "0", m[3], "start %d: %s", i+1, line)
		}
		require.NoError(t, b.Close())
	}
}

package train

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/data"
)

// smallData cuts the embedded data set down to 1,025 validation and 20,000
// training tokens, so that a run's start-up and validation cost little.
func smallData(t *testing.T) (dataPath, tokPath string) {
	t.Helper()
	src, tok, err := data.ExtractEmbedded(t.TempDir())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "small")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, n := range map[string]int{"fineweb_val_000000.bin": 1025, "fineweb_train_000000.bin": 20000} {
		toks, err := data.ReadShard(filepath.Join(src, name))
		require.NoError(t, err)
		require.NoError(t, data.WriteShard(filepath.Join(dir, name), toks[:n]))
	}
	return dir, tok
}

// reproConfig is a small run that still takes every parallel path of the
// CPU backend at 8 threads: GEMMs above the parallel threshold (the logits
// are 128×1024×64), elementwise ops and Adam over tok_emb's 65,536
// elements in 16,384-element pieces, attention over 2 sequences × 2 KV
// heads, and the fixed 32-chunk reductions of parameter gradients. Two
// chunks per microbatch and two microbatches per step accumulate
// gradients; gradient clipping adds the global sum of squares.
func reproConfig(t *testing.T, dataPath, tokPath string, dt backend.DType) Config {
	c := Defaults()
	c.DataPath, c.TokenizerPath, c.DataPathSet, c.TokenizerPathSet = dataPath, tokPath, true, true
	c.RunID = "repro"
	c.Seed = 11
	c.Iterations = 3
	c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 2, 64, 4, 2
	c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 32, 512, 2, 128
	c.ValBatchSize = 2048 // one batch of the 32 validation sequences
	c.WarmupSteps, c.WarmdownIters, c.MaxWallclockSeconds = 1, 2, 0
	c.TrainLogEvery = 1
	c.Optim.GradClipNorm = 1
	c.DType = dt
	return c
}

// reproRun is what a run must reproduce: every train loss, the final and
// round-trip validation figures, and every artifact's bytes (the .npz
// holds the fp32 master weights bit for bit).
type reproRun struct {
	Losses    []uint64 // math.Float64bits of each step's train loss
	Val       [4]uint64
	Artifacts map[string][]byte
}

// runRepro trains cfg on a fresh backend with GOMAXPROCS set to procs, in
// a fresh OUT_DIR.
func runRepro(t *testing.T, cfg Config, procs int, newBackend func() backend.Backend) reproRun {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	cfg.OutDir = t.TempDir()
	res, err := Run(context.Background(), cfg, newBackend(), nil)
	require.NoError(t, err)
	require.Len(t, res.TrainLosses, cfg.Iterations)
	out := reproRun{Artifacts: map[string][]byte{}}
	for _, p := range res.TrainLosses {
		out.Losses = append(out.Losses, math.Float64bits(p.Loss))
	}
	for i, v := range []float64{res.ValLoss, res.ValBPB, res.QValLoss, res.QValBPB} {
		out.Val[i] = math.Float64bits(v)
	}
	for _, p := range []string{res.ModelPath, res.QuantPath, res.SummaryPath, res.PlotPath} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		out.Artifacts[filepath.Base(p)] = b
	}
	return out
}

// reproDiff lists where b differs from a, bit for bit.
func reproDiff(a, b reproRun) []string {
	var d []string
	for i := range max(len(a.Losses), len(b.Losses)) {
		if i >= len(a.Losses) || i >= len(b.Losses) || a.Losses[i] != b.Losses[i] {
			d = append(d, fmt.Sprintf("train loss of step %d", i+1))
		}
	}
	for i, name := range []string{"val_loss", "val_bpb", "round-trip val_loss", "round-trip val_bpb"} {
		if a.Val[i] != b.Val[i] {
			d = append(d, fmt.Sprintf("%s %v vs %v", name, math.Float64frombits(a.Val[i]), math.Float64frombits(b.Val[i])))
		}
	}
	for name, x := range a.Artifacts {
		if y, ok := b.Artifacts[name]; !ok || string(x) != string(y) {
			d = append(d, "artifact "+name)
		}
	}
	return d
}

// TestReproducibleAcrossThreads trains the same configuration and seed at
// GOMAXPROCS 1, 2 and 8 on the CPU backend, in each compute dtype, and
// requires every train loss, the validation figures, the weights and every
// artifact to be bit-identical to the single-threaded run's.
func TestReproducibleAcrossThreads(t *testing.T) {
	dp, tp := smallData(t)
	newCPU := func() backend.Backend { return cpu.New() }
	for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			cfg := reproConfig(t, dp, tp, dt)
			ref := runRepro(t, cfg, 1, newCPU)
			for _, procs := range []int{2, 8} {
				got := runRepro(t, cfg, procs, newCPU)
				assert.Empty(t, reproDiff(ref, got), "GOMAXPROCS=%d against GOMAXPROCS=1", procs)
			}
			// Another seed changes the losses and every artifact: the
			// comparison sees the runs, not constants.
			other := cfg
			other.Seed++
			diff := reproDiff(ref, runRepro(t, other, 2, newCPU))
			assert.Contains(t, diff, "artifact repro_model.npz")
			assert.Contains(t, diff, fmt.Sprintf("train loss of step %d", cfg.Iterations))
		})
	}
}

// threadSumBackend is a planted fault: its sum of squares (the global
// gradient norm of clipping) adds float32 partial sums over one piece per
// thread, so its rounding, and after clipping the weights, depend on
// GOMAXPROCS, as a reduction split by the thread count would.
type threadSumBackend struct{ *cpu.Backend }

func (b threadSumBackend) Reduce(dst, x *backend.Tensor, kind backend.ReduceKind) {
	if kind != backend.ReduceSumSquares {
		b.Backend.Reduce(dst, x, kind)
		return
	}
	v, w := b.Download(x), runtime.GOMAXPROCS(0)
	var total float32
	for k := range w {
		var s float32
		for _, e := range v[k*len(v)/w : (k+1)*len(v)/w] {
			s += e * e
		}
		total += s
	}
	acc := b.Download(dst)
	acc[0] += total
	b.Upload(dst, acc)
}

// The check of TestReproducibleAcrossThreads catches a backend whose
// results depend on the thread count.
func TestReproducibleCatchesThreadDependence(t *testing.T) {
	dp, tp := smallData(t)
	cfg := reproConfig(t, dp, tp, backend.F32)
	cfg.Optim.GradClipNorm = 1e-3 // every step clips, so the norm's rounding reaches the weights
	planted := func() backend.Backend { return threadSumBackend{cpu.New()} }
	same := reproDiff(runRepro(t, cfg, 1, planted), runRepro(t, cfg, 1, planted))
	assert.Empty(t, same, "the planted backend is deterministic at a fixed thread count")
	diff := reproDiff(runRepro(t, cfg, 1, planted), runRepro(t, cfg, 8, planted))
	assert.Contains(t, diff, "artifact repro_model.npz", "the weights differ between 1 and 8 threads")
}

// golf info says what each backend promises; the CPU's promise is the one
// TestReproducibleAcrossThreads checks.
func TestInfoSaysDeterminism(t *testing.T) {
	dp, tp := smallData(t)
	var out strings.Builder
	require.NoError(t, WriteInfo(&out, reproConfig(t, dp, tp, backend.BF16), cpu.New(), "test"))
	assert.Regexp(t, `(?m)^device: .*\ndeterminism: bitwise: the same configuration and seed give the same losses, weights and artifacts at any GOMAXPROCS and in every dtype `, out.String())
	assert.Equal(t, "unknown: this backend makes no promise", Determinism(&countingBackend{}))
}

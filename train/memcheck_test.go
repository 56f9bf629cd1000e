package train

import (
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
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// withMachine makes the memory check see a machine with avail bytes
// available for the rest of the test.
func withMachine(t *testing.T, avail uint64) {
	saved := hostMemory
	hostMemory = func() (HostMemory, bool) { return HostMemory{Bytes: avail, Source: "test machine"}, true }
	t.Cleanup(func() { hostMemory = saved })
}

func writeFile(t *testing.T, path, text string) {
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func TestAvailableMemory(t *testing.T) {
	const meminfo = "MemTotal:       24683656 kB\nMemFree:        22396816 kB\nMemAvailable:   24177292 kB\nBuffers: 1 kB\n"
	dir := t.TempDir()
	proc, cg := filepath.Join(dir, "proc"), filepath.Join(dir, "cgroup")
	writeFile(t, filepath.Join(proc, "meminfo"), meminfo)

	// No cgroup information: MemAvailable.
	m, ok := availableMemory(proc, cg)
	require.True(t, ok)
	assert.Equal(t, uint64(24177292*1024), m.Bytes)
	assert.Contains(t, m.Source, "MemAvailable")

	// cgroup v2 with a limit below MemAvailable: the room under the limit.
	writeFile(t, filepath.Join(proc, "self", "cgroup"), "0::/job\n")
	writeFile(t, filepath.Join(cg, "job", "memory.max"), "8589934592\n")
	writeFile(t, filepath.Join(cg, "job", "memory.current"), "1073741824\n")
	m, ok = availableMemory(proc, cg)
	require.True(t, ok)
	assert.Equal(t, uint64(7<<30), m.Bytes)
	assert.Contains(t, m.Source, "memory.max")

	// v2 without a limit ("max"): MemAvailable again.
	writeFile(t, filepath.Join(cg, "job", "memory.max"), "max\n")
	m, _ = availableMemory(proc, cg)
	assert.Equal(t, uint64(24177292*1024), m.Bytes)

	// cgroup v1: a limit, and v1's "unlimited" (a number near 2^63).
	writeFile(t, filepath.Join(proc, "self", "cgroup"), "12:cpu,cpuacct:/x\n7:memory:/job1\n")
	writeFile(t, filepath.Join(cg, "memory", "job1", "memory.limit_in_bytes"), "2147483648\n")
	writeFile(t, filepath.Join(cg, "memory", "job1", "memory.usage_in_bytes"), "3221225472\n") // over the limit: no room
	m, _ = availableMemory(proc, cg)
	assert.Equal(t, uint64(0), m.Bytes)
	writeFile(t, filepath.Join(cg, "memory", "job1", "memory.limit_in_bytes"), "9223372036854771712\n")
	m, _ = availableMemory(proc, cg)
	assert.Equal(t, uint64(24177292*1024), m.Bytes)

	// Nothing readable (another system): unknown.
	_, ok = availableMemory(filepath.Join(dir, "none"), filepath.Join(dir, "none"))
	assert.False(t, ok)
}

// TestEstimateIsALowerBound: the closed-form estimate never exceeds the
// counting pass's peak (the exact plan), and is not vacuous (at least half
// of it), over shapes that stress each term.
func TestEstimateIsALowerBound(t *testing.T) {
	base := Defaults()
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"baseline", func(*Config) {}},
		{"fp32", func(c *Config) { c.DType = backend.F32 }},
		{"long chunks", func(c *Config) { c.MaxMicrobatchTokens = 65536 }},
		{"logit chunks", func(c *Config) { c.Model.LogitChunkTokens = 512 }},
		{"deep and narrow", func(c *Config) {
			c.Model = model.Config{VocabSize: 64, NumLayers: 40, ModelDim: 32, NumHeads: 4, NumKVHeads: 2, MLPMult: 3,
				LogitSoftcap: 30, RopeBase: 10000, QKGainInit: 1.5}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			plan, err := PlanMemory(c)
			require.NoError(t, err)
			e := EstimateMemory(c)
			lower := e.Total() - e.Bookkeeping // the plan counts backend bytes only
			assert.LessOrEqual(t, lower, float64(plan.Peak))
			assert.GreaterOrEqual(t, lower, 0.5*float64(plan.Peak))
			assert.InDelta(t, float64(plan.Params), e.Params, 0, "parameters are exact")
			assert.InDelta(t, float64(plan.WeightCopies), e.WeightCopies, 0, "weight copies are exact")
		})
	}
}

// TestBookkeepingPerTensor measures the host bytes a parameter costs on the
// counting backend (model and optimizer) and checks that the estimate's
// constant is a lower bound of it, and not far below.
func TestBookkeepingPerTensor(t *testing.T) {
	cfg := Defaults()
	cfg.Model = model.Config{VocabSize: 8, NumLayers: 2000, ModelDim: 4, NumHeads: 2, NumKVHeads: 1, MLPMult: 1,
		LogitSoftcap: 30, RopeBase: 10000, QKGainInit: 1.5}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cb := &countingBackend{}
	m, err := model.New(cb, cfg.Model, 0)
	require.NoError(t, err)
	opt, err := optim.NewSplit(cb, m.Params(), cfg.Optim)
	require.NoError(t, err)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTensor := float64(after.HeapAlloc-before.HeapAlloc) / float64(len(m.Params()))
	runtime.KeepAlive(opt)
	t.Logf("%.0f live bytes per parameter tensor", perTensor)
	assert.GreaterOrEqual(t, perTensor, float64(bookkeepingPerTensor))
	assert.Less(t, perTensor, 4.0*bookkeepingPerTensor)
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestCheckMemoryRefusesAbsurdSizes: sizes no machine holds are refused by
// the closed form, allocating (almost) nothing: no counting pass, no
// initial values.
func TestCheckMemoryRefusesAbsurdSizes(t *testing.T) {
	withMachine(t, 16<<30)
	b := cpu.New()
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"2^20-token chunks", func(c *Config) {
			c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 1<<20, 1, 1<<20
		}, []string{"MAX_MICROBATCH_TOKENS", "training activations"}},
		{"2^31 chunks of one token", func(c *Config) {
			c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens, c.ValBatchSize = 1, 1<<31-1, 1, 1, 1
		}, []string{"chunk list"}},
		{"100 million layers", func(c *Config) {
			c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads, c.Model.VocabSize = 100_000_000, 4, 2, 1, 8
		}, []string{"NUM_LAYERS", "bookkeeping"}},
		{"4 GiB matrices", func(c *Config) {
			c.Model.VocabSize, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads, c.Model.MLPMult = 32768, 32768, 256, 128, 1
			c.Model.NumLayers, c.Model.LogitChunkTokens, c.ValBatchSize = 1, 16, 1<<16
		}, []string{"VOCAB_SIZE", "parameters"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.edit(&c)
			require.NoError(t, c.Validate())
			var err error
			n := allocated(func() { _, err = CheckMemory(c, b) })
			require.Error(t, err)
			for _, w := range append(tc.want, "16.0 GiB is available (test machine)") {
				assert.Contains(t, err.Error(), w)
			}
			assert.Less(t, n, uint64(1<<20), "CheckMemory allocated %d bytes", n)
		})
	}
}

// TestCheckMemoryPlan: a configuration that passes the closed form but not
// the exact plan is refused with the plan's parts; one that fits passes;
// GPU backends are left to CheckBackend.
func TestCheckMemoryPlan(t *testing.T) {
	c := Defaults()
	plan, err := PlanMemory(c)
	require.NoError(t, err)
	e := EstimateMemory(c)
	between := uint64(e.Total()) + 1
	require.Less(t, between, uint64(plan.Peak))

	withMachine(t, between)
	_, err = CheckMemory(c, cpu.New())
	require.Error(t, err)
	for _, w := range []string{"the run needs", "training activations", "validation activations", "VAL_BATCH_SIZE", "cpu matmul panels"} {
		assert.Contains(t, err.Error(), w)
	}
	assert.NotContains(t, err.Error(), "lower bound")

	withMachine(t, 64<<30)
	got, err := CheckMemory(c, cpu.New())
	require.NoError(t, err)
	assert.Equal(t, plan, got)

	withMachine(t, 64<<20)
	_, err = CheckMemory(c, &countingBackend{}) // not the CPU: no host budget
	assert.NoError(t, err)
}

// TestPlanMemoryRefusesUnplannable: the counting pass draws the largest
// parameter's initial values on the host; PlanMemory refuses to start it
// when the machine cannot hold them, for any backend.
func TestPlanMemoryRefusesUnplannable(t *testing.T) {
	withMachine(t, 1<<30)
	c := Defaults()
	c.Model.VocabSize, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads, c.Model.MLPMult = 65536, 16384, 128, 64, 1
	c.Model.NumLayers, c.Model.LogitChunkTokens = 1, 16
	require.NoError(t, c.Validate())
	var err error
	n := allocated(func() { _, err = PlanMemory(c) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "largest parameter's initial values 4.0 GiB")
	assert.Less(t, n, uint64(1<<20))
}

// TestWriteInfoRefusal: golf info prints the lower bound and refuses,
// instead of planning, when the sizes cannot fit.
func TestWriteInfoRefusal(t *testing.T) {
	withMachine(t, 8<<30)
	c := Defaults()
	c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 1<<20, 1, 1<<20
	var out strings.Builder
	err := WriteInfo(&out, c, cpu.New(), "test")
	require.Error(t, err)
	assert.Contains(t, out.String(), "memory lower bound")
	assert.Contains(t, out.String(), "available (test machine)")
	assert.Contains(t, err.Error(), "at least")

	withMachine(t, 64<<30)
	out.Reset()
	require.NoError(t, WriteInfo(&out, Defaults(), cpu.New(), "test"))
	assert.Contains(t, out.String(), "total with the plan")
}

// TestChunksMatchTokenChunks: the closed-form chunking equals
// data.TokenChunks (the port of token_chunks) over a sweep.
func TestChunksMatchTokenChunks(t *testing.T) {
	for _, seq := range []int{1, 3, 64, 100} {
		for _, micro := range []int{seq, seq + 1, 7 * seq, 1000} {
			for _, maxChunk := range []int{1, seq - 1, seq, 2*seq + 5, 4096} {
				if micro < seq {
					continue
				}
				c := validBase()
				c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = seq, micro, 1, max(maxChunk, 1)
				chunks, err := data.TokenChunks(micro, seq, max(maxChunk, 1))
				require.NoError(t, err)
				assert.Equal(t, chunks[0], c.ChunkTokens(), "seq %d micro %d max %d", seq, micro, maxChunk)
				assert.Equal(t, len(chunks), c.NumChunks(), "seq %d micro %d max %d", seq, micro, maxChunk)
			}
		}
	}
}

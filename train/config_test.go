package train

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// knob sets one hyperparameter of a Config; the names and ranges below are
// the reference's variables and the ranges this test expects, written out
// independently of Validate's own tables.
type floatSetter struct {
	env string
	set func(*Config, float64)
	// unit: the value must lie in [0, 1); positive: > 0; else >= 0 (or any
	// finite sign, for signed).
	unit, positive, signed bool
	// f64: used in float64 only, so 1e39 is a valid value.
	f64 bool
}

var floatSetters = []floatSetter{
	{env: "MAX_WALLCLOCK_SECONDS", set: func(c *Config, v float64) { c.MaxWallclockSeconds = v }, f64: true},
	{env: "TIED_EMBED_LR", set: func(c *Config, v float64) { c.Optim.TiedEmbedLR = v }},
	{env: "MATRIX_LR", set: func(c *Config, v float64) { c.Optim.MatrixLR = v }},
	{env: "SCALAR_LR", set: func(c *Config, v float64) { c.Optim.ScalarLR = v }},
	{env: "BETA1", set: func(c *Config, v float64) { c.Optim.Beta1 = v }, unit: true},
	{env: "BETA2", set: func(c *Config, v float64) { c.Optim.Beta2 = v }, unit: true},
	{env: "ADAM_EPS", set: func(c *Config, v float64) { c.Optim.AdamEps = v }, positive: true},
	{env: "MUON_MOMENTUM", set: func(c *Config, v float64) { c.Optim.MuonMomentum = v }, unit: true},
	{env: "MUON_MOMENTUM_WARMUP_START", set: func(c *Config, v float64) { c.Optim.MuonMomentumWarmupStart = v }, unit: true},
	{env: "GRAD_CLIP_NORM", set: func(c *Config, v float64) { c.Optim.GradClipNorm = v }},
	{env: "LOSS_SCALE", set: func(c *Config, v float64) { c.LossScale = v }},
	{env: "LOGIT_SOFTCAP", set: func(c *Config, v float64) { c.Model.LogitSoftcap = v }, positive: true},
	{env: "ROPE_BASE", set: func(c *Config, v float64) { c.Model.RopeBase = v }, positive: true},
	{env: "QK_GAIN_INIT", set: func(c *Config, v float64) { c.Model.QKGainInit = v }, signed: true},
	{env: "TIED_EMBED_INIT_STD", set: func(c *Config, v float64) { c.Model.TiedEmbedInitStd = v }},
}

// TestValidateFloatKnobs plants every kind of bad number in every float
// knob and checks that Validate names the variable and the value; then that
// the edges of each range are accepted.
func TestValidateFloatKnobs(t *testing.T) {
	base := validBase()
	require.NoError(t, base.Validate())
	for _, k := range floatSetters {
		bad := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
		if !k.f64 || k.unit {
			bad = append(bad, 1e39) // +Inf in float32, or ≥ 1
		}
		if !k.signed {
			bad = append(bad, -1, -1e-300)
		}
		if k.positive {
			bad = append(bad, 0, 1e-50) // 1e-50 is 0 in float32
		}
		if k.unit {
			bad = append(bad, 1, 1.5, 0.99999999999) // the last is 1 in float32
		}
		for _, v := range bad {
			c := validBase()
			k.set(&c, v)
			err := c.Validate()
			if assert.Error(t, err, "%s=%g accepted", k.env, v) {
				assert.Contains(t, err.Error(), k.env)
				assert.Contains(t, err.Error(), fmt.Sprintf("%g", v), "the message gives the value")
			}
		}
		good := []float64{0.5, 1e-30}
		if !k.positive {
			good = append(good, 0)
		}
		if !k.unit {
			good = append(good, 1e30)
		}
		if k.signed {
			good = append(good, -2)
		}
		for _, v := range good {
			c := validBase()
			k.set(&c, v)
			assert.NoError(t, c.Validate(), "%s=%g refused", k.env, v)
		}
	}
}

// TestValidateIntKnobs plants below-range and above-range values in every
// integer knob.
func TestValidateIntKnobs(t *testing.T) {
	for _, k := range []struct {
		env    string
		set    func(*Config, int)
		lo, hi int // inclusive range the test expects
	}{
		{"SEED", func(c *Config, v int) { c.Seed = v }, 0, math.MaxInt64},
		{"ITERATIONS", func(c *Config, v int) { c.Iterations = v }, 0, math.MaxInt32},
		{"VAL_LOSS_EVERY", func(c *Config, v int) { c.ValLossEvery = v }, 0, math.MaxInt32},
		{"TRAIN_LOG_EVERY", func(c *Config, v int) { c.TrainLogEvery = v }, 0, math.MaxInt32},
		{"WARMUP_STEPS", func(c *Config, v int) { c.WarmupSteps = v }, 0, math.MaxInt32},
		{"WARMDOWN_ITERS", func(c *Config, v int) { c.WarmdownIters = v }, 0, math.MaxInt32},
		{"MUON_BACKEND_STEPS", func(c *Config, v int) { c.Optim.MuonBackendSteps = v }, 0, math.MaxInt32},
		{"MUON_MOMENTUM_WARMUP_STEPS", func(c *Config, v int) { c.Optim.MuonMomentumWarmupSteps = v }, 0, math.MaxInt32},
		{"TRAIN_BATCH_TOKENS", func(c *Config, v int) { c.TrainBatchTokens = v }, 1, math.MaxInt32},
		{"GRAD_ACCUM_STEPS", func(c *Config, v int) { c.GradAccumSteps = v }, 1, math.MaxInt32},
		{"MAX_MICROBATCH_TOKENS", func(c *Config, v int) { c.MaxMicrobatchTokens = v }, 1, math.MaxInt32},
		{"VAL_BATCH_SIZE", func(c *Config, v int) { c.ValBatchSize = v }, 1, math.MaxInt32},
		{"TRAIN_SEQ_LEN", func(c *Config, v int) { c.TrainSeqLen = v }, 1, 1 << 24},
		{"VOCAB_SIZE", func(c *Config, v int) { c.Model.VocabSize = v }, 1, 1 << 16},
		{"NUM_LAYERS", func(c *Config, v int) { c.Model.NumLayers = v }, 1, math.MaxInt32},
		{"MODEL_DIM", func(c *Config, v int) { c.Model.ModelDim = v }, 1, math.MaxInt32},
		{"NUM_HEADS", func(c *Config, v int) { c.Model.NumHeads = v }, 1, math.MaxInt32},
		{"NUM_KV_HEADS", func(c *Config, v int) { c.Model.NumKVHeads = v }, 1, math.MaxInt32},
		{"MLP_MULT", func(c *Config, v int) { c.Model.MLPMult = v }, 1, math.MaxInt32},
		{"LOGIT_CHUNK_TOKENS", func(c *Config, v int) { c.Model.LogitChunkTokens = v }, 0, math.MaxInt32},
	} {
		bad := []int{k.lo - 1, math.MinInt64}
		if k.hi < math.MaxInt64 {
			bad = append(bad, k.hi+1, math.MaxInt64)
		}
		for _, v := range bad {
			c := validBase()
			k.set(&c, v)
			err := c.Validate()
			if assert.Error(t, err, "%s=%d accepted", k.env, v) {
				assert.Contains(t, err.Error(), k.env)
				assert.Contains(t, err.Error(), fmt.Sprint(v))
			}
		}
	}
}

// validBase is a small valid configuration whose batch knobs leave room
// for the range tests (every knob can move without tripping another check
// first).
func validBase() Config {
	c := Defaults()
	c.RunID = "base"
	c.Model.NumLayers, c.Model.ModelDim, c.Model.NumHeads, c.Model.NumKVHeads = 2, 32, 2, 1
	c.TrainSeqLen, c.TrainBatchTokens, c.GradAccumSteps, c.MaxMicrobatchTokens = 1, 1, 1, 1
	c.ValBatchSize = 1
	return c
}

func TestValidateShapesAndSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"dim not divisible by heads", func(c *Config) { c.Model.ModelDim, c.Model.NumHeads = 34, 4 }, []string{"MODEL_DIM=34", "NUM_HEADS=4"}},
		{"heads not divisible by kv heads", func(c *Config) { c.Model.NumHeads, c.Model.NumKVHeads = 4, 3 }, []string{"NUM_HEADS=4", "NUM_KV_HEADS=3"}},
		{"odd head dim", func(c *Config) { c.Model.ModelDim, c.Model.NumHeads = 6, 2 }, []string{"must be even for RoPE"}},
		{"embedding over 2^31 elements", func(c *Config) { c.Model.ModelDim, c.Model.NumHeads = 1<<16, 1<<15 }, []string{"MODEL_DIM=65536", "MLP_MULT=2", "8589934592"}},
		{"mlp over 2^31 elements", func(c *Config) { c.Model.MLPMult = 1 << 30 }, []string{"MLP_MULT=1073741824"}},
		{"2^40 parameters", func(c *Config) { c.Model.NumLayers = 1 << 31 / 2 }, []string{"NUM_LAYERS=1073741824", "parameters"}},
		{"batch below a sequence", func(c *Config) { c.TrainSeqLen, c.TrainBatchTokens = 64, 63 }, []string{"TRAIN_SEQ_LEN=64", "63"}},
		{"val batch below a sequence", func(c *Config) { c.TrainSeqLen, c.TrainBatchTokens, c.ValBatchSize = 64, 64, 63 }, []string{"VAL_BATCH_SIZE=63"}},
		{"chunk activation over 2^31", func(c *Config) {
			c.TrainBatchTokens, c.MaxMicrobatchTokens = 1<<24, 1<<24 // (2^24, 1024) logits
		}, []string{"training chunk", "16777216", "logits", "LOGIT_CHUNK_TOKENS"}},
		{"validation batch over 2^31", func(c *Config) { c.ValBatchSize = 1 << 27 }, []string{"validation batch", "134217728", "VAL_BATCH_SIZE"}},
		{"untied", func(c *Config) { c.TieEmbeddings = false }, []string{"TIE_EMBEDDINGS"}},
		{"empty out dir", func(c *Config) { c.OutDir = "" }, []string{"OUT_DIR"}},
		{"tokenizer not .model", func(c *Config) { c.TokenizerPath = "x.vocab" }, []string{"TOKENIZER_PATH", "x.vocab"}},
		{"backend", func(c *Config) { c.Backend = "tpu" }, []string{"--backend", "tpu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validBase()
			tc.edit(&c)
			err := c.Validate()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	// Logit chunking brings the same batch back under the limit, and the
	// longest sequence RoPE allows is accepted when the shapes fit.
	c := validBase()
	c.TrainBatchTokens, c.MaxMicrobatchTokens, c.Model.LogitChunkTokens = 1<<24, 1<<24, 1024
	assert.NoError(t, c.Validate())
	c = validBase()
	c.TrainSeqLen, c.TrainBatchTokens, c.MaxMicrobatchTokens, c.ValBatchSize = 1<<24, 1<<24, 1<<24, 1<<24
	c.Model.LogitChunkTokens, c.Model.MLPMult = 1024, 1
	assert.NoError(t, c.Validate())
}

func TestCheckRunID(t *testing.T) {
	for _, id := range []string{"", "run1", "a", "0-a.b_c", "3f1c2d4e-0b1a-4c2d-9e8f-0123456789ab", strings.Repeat("x", 128)} {
		assert.NoError(t, CheckRunID(id), "%q", id)
	}
	for _, id := range []string{"../x", "a/b", "/abs", "..", ".", ".hidden", "-flag", "a\\b", "a b", "a\x00b", "é", "a:b",
		strings.Repeat("x", 129), "x/../../y", "_under"} {
		err := CheckRunID(id)
		if assert.Error(t, err, "%q accepted", id) {
			assert.Contains(t, err.Error(), "RUN_ID")
			assert.Contains(t, err.Error(), fmt.Sprintf("%q", id))
		}
		c := validBase()
		c.RunID = id
		assert.Error(t, c.Validate(), "Validate accepted RUN_ID %q", id)
	}
}

// TestChunkArithmetic checks ChunkTokens, NumChunks and EvalTokens against
// token_chunks' definition written out by hand.
func TestChunkArithmetic(t *testing.T) {
	for _, tc := range []struct {
		batch, accum, seq, maxChunk int
		chunk, chunks, eval, val    int
	}{
		{524288, 8, 1024, 8192, 8192, 8, 65536, 524288},
		{2048, 1, 64, 1024, 1024, 2, 16384, 16384},
		{1000, 1, 64, 100, 64, 15, 960, 1000},    // 960 usable tokens in 64-token chunks
		{1000, 1, 64, 10, 64, 15, 960, 1000},     // the cap is at least one sequence
		{1000, 3, 64, 5000, 320, 1, 320, 1000},   // ⌊1000/3⌋ = 333 → 320
		{4096, 2, 256, 1536, 1536, 2, 512, 1024}, // 2048 = 1536 + 512
	} {
		c := validBase()
		c.TrainBatchTokens, c.GradAccumSteps, c.TrainSeqLen, c.MaxMicrobatchTokens, c.ValBatchSize = tc.batch, tc.accum, tc.seq, tc.maxChunk, tc.val
		assert.Equal(t, tc.chunk, c.ChunkTokens(), "%+v", tc)
		assert.Equal(t, tc.chunks, c.NumChunks(), "%+v", tc)
		assert.Equal(t, tc.eval, c.EvalTokens(), "%+v", tc)
	}
}

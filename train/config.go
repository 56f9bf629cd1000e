// Package train is golf's training program: the workflow of
// train_gpt_mlx.py's main() (tokenizer and validation set-up, the model and
// split optimizer, warm-up, the training loop with gradient accumulation,
// validation and the wall-clock cap, then the raw and int8 artifacts and the
// round-trip evaluation), over any backend.
package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// Config is every hyperparameter of the reference, one field each. Field
// comments give the environment variable and the reference's default; the
// CLI's flag table (cmd/golf) is built from Params.
type Config struct {
	DataPath      string // DATA_PATH ./data/datasets/fineweb10B_sp1024
	TokenizerPath string // TOKENIZER_PATH ./data/tokenizers/fineweb_1024_bpe.model
	RunID         string // RUN_ID (a random UUID)
	Seed          int    // SEED 1337

	Iterations          int     // ITERATIONS 20000
	ValLossEvery        int     // VAL_LOSS_EVERY 0
	ValBatchSize        int     // VAL_BATCH_SIZE 524288
	TrainLogEvery       int     // TRAIN_LOG_EVERY 200
	TrainBatchTokens    int     // TRAIN_BATCH_TOKENS 524288
	GradAccumSteps      int     // GRAD_ACCUM_STEPS 8
	TrainSeqLen         int     // TRAIN_SEQ_LEN 1024
	MaxMicrobatchTokens int     // MAX_MICROBATCH_TOKENS (alias MLX_MAX_MICROBATCH_TOKENS) 8192
	WarmupSteps         int     // WARMUP_STEPS 20
	WarmdownIters       int     // WARMDOWN_ITERS 1200
	MaxWallclockSeconds float64 // MAX_WALLCLOCK_SECONDS 600

	Model         model.Config // VOCAB_SIZE, NUM_LAYERS, MODEL_DIM, ... (model.Baseline)
	TieEmbeddings bool         // TIE_EMBEDDINGS 1 (only tied embeddings are supported)
	Optim         optim.Hyper  // BETA1, ..., GRAD_CLIP_NORM, CONTROL_TENSOR_NAME_PATTERNS

	// Int8KeepFloatPatterns is INT8_KEEP_FLOAT_FP32_NAME_PATTERNS (default:
	// the control tensor patterns).
	Int8KeepFloatPatterns []string

	OutDir string // OUT_DIR logs

	Checkpoint CheckpointConfig // CHECKPOINT_EVERY, CHECKPOINT_EVERY_SECONDS, CHECKPOINT_KEEP, RESUME (resume.go)

	DType     backend.DType // COMPUTE_DTYPE bf16 (--dtype)
	LossScale float64       // LOSS_SCALE 0: dynamic for fp16, 1 otherwise (--loss-scale)
	Backend   string        // GOLF_BACKEND auto|cpu|metal|cuda (--backend)
	// BackendChoice says why the backend in use was chosen (logged).
	BackendChoice string

	// DataPathSet and TokenizerPathSet record whether the user gave the paths;
	// when neither is given and the default data set is absent, the embedded
	// default data set is used.
	DataPathSet, TokenizerPathSet bool

	// Overwrite (--overwrite, OVERWRITE) lets a fresh run replace an earlier
	// finished run of its RUN_ID in OUT_DIR (its log, metrics and
	// artifacts), which is otherwise refused. It belongs to one command,
	// not to the run: checkpoints and series files do not keep it.
	Overwrite bool `json:"-"`
}

// logConfig is a Config as the log's configuration block writes it: the
// compute dtype by name ("bf16"), not as backend.DType's number.
type logConfig struct {
	Config
	DType string
}

// configDump is the log's configuration block: cfg as indented JSON.
func configDump(cfg Config) string {
	b, _ := json.MarshalIndent(logConfig{Config: cfg, DType: cfg.DType.String()}, "", "  ")
	return string(b)
}

// FlatJSON flattens v's JSON encoding: each leaf under its dotted names
// ("Optim.MatrixLR"), as JSON text, numbers as encoded. Configurations are
// compared field by field through it.
func FlatJSON(v any) map[string]string {
	b, _ := json.Marshal(v)
	var m any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	d.Decode(&m)
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if sub, ok := v.(map[string]any); ok {
			for k, x := range sub {
				walk(prefix+k+".", x)
			}
			return
		}
		js, _ := json.Marshal(v)
		out[strings.TrimSuffix(prefix, ".")] = string(js)
	}
	walk("", m)
	return out
}

// configChanges lists, as "Name: old → new" by the log block's dotted JSON
// names, the settings where cfg differs from the configuration a
// checkpoint was saved with (a resumed run logs these instead of the
// whole block).
func configChanges(saved, cfg Config) []string {
	flat := func(c Config) map[string]string { return FlatJSON(logConfig{Config: c, DType: c.DType.String()}) }
	a, b := flat(saved), flat(cfg)
	var diffs []string
	for k, bv := range b {
		if av, ok := a[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: unset → %s", k, bv))
		} else if av != bv {
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", k, av, bv))
		}
	}
	for k, av := range a {
		if _, ok := b[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %s → unset", k, av))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// DefaultControlPatterns is CONTROL_TENSOR_NAME_PATTERNS' default.
const DefaultControlPatterns = "attn_scale,attn_scales,mlp_scale,mlp_scales,resid_mix,resid_mixes,q_gain,skip_weight,skip_weights"

// Defaults returns the reference's defaults.
func Defaults() Config {
	return Config{
		DataPath:              "./data/datasets/fineweb10B_sp1024",
		TokenizerPath:         "./data/tokenizers/fineweb_1024_bpe.model",
		Seed:                  1337,
		Iterations:            20000,
		ValBatchSize:          524288,
		TrainLogEvery:         200,
		TrainBatchTokens:      524288,
		GradAccumSteps:        8,
		TrainSeqLen:           1024,
		MaxMicrobatchTokens:   8192,
		WarmupSteps:           20,
		WarmdownIters:         1200,
		MaxWallclockSeconds:   600,
		Model:                 model.Baseline(),
		TieEmbeddings:         true,
		Optim:                 optim.DefaultHyper(),
		Int8KeepFloatPatterns: SplitPatterns(DefaultControlPatterns),
		OutDir:                "logs",
		Checkpoint:            DefaultCheckpoint(),
		DType:                 backend.BF16,
		Backend:               "auto",
	}
}

// SplitPatterns splits a comma-separated pattern list, dropping empty items
// as the reference does.
func SplitPatterns(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// MicrobatchTokens is TrainBatchTokens/GradAccumSteps.
func (c *Config) MicrobatchTokens() int { return c.TrainBatchTokens / c.GradAccumSteps }

// MaxCount bounds every token count, step count and size knob, and the
// element count of every activation: the GPU kernels take sizes and indices
// as 32-bit integers (shaders/golf_args.h) and a shard's header counts its
// tokens in an int32.
const MaxCount = math.MaxInt32

// MaxSeqLen is the longest TRAIN_SEQ_LEN, 2^24: train_gpt_mlx.py's RoPE
// (mx.fast.rope) turns positions into float32, which represents every
// integer only up to 2^24; beyond it neighbouring positions get the same
// rotation. (Whether the data holds a sequence of that length is checked
// when the validation split is read.)
const MaxSeqLen = 1 << 24

// MaxVocab is the largest VOCAB_SIZE: shards store token ids as uint16.
const MaxVocab = 1 << 16

// MaxRunIDLen bounds RUN_ID so that every file name built from it
// ("<run_id>_model.int8.ptz", temporary names) stays within the 255-byte
// limit of common file systems.
const MaxRunIDLen = 128

// Validate reports the first impossible setting, naming its variable and
// value, before any work starts: every integer knob in its range, every
// float knob finite (also as the float32 the kernels take) and in its range,
// shapes that divide, batches that hold a sequence, activations whose
// element counts fit MaxCount, and a RUN_ID that names files inside OUT_DIR.
// Memory is checked separately (CheckMemory), against the machine.
func (c *Config) Validate() error {
	for _, k := range c.intKnobs() {
		if k.v < k.lo || k.v > k.hi {
			return fmt.Errorf("%s must be in [%d, %d], got %d", k.name, k.lo, k.hi, k.v)
		}
	}
	for _, k := range c.floatKnobs() {
		if err := k.check(); err != nil {
			return err
		}
	}
	if err := c.Model.Validate(); err != nil {
		return err
	}
	switch {
	case !c.TieEmbeddings:
		return fmt.Errorf("TIE_EMBEDDINGS=0: only tied embeddings are supported")
	case c.Model.VocabSize > MaxVocab:
		return fmt.Errorf("VOCAB_SIZE must be at most %d (shards store token ids as uint16), got %d", MaxVocab, c.Model.VocabSize)
	case c.MicrobatchTokens() < c.TrainSeqLen:
		return fmt.Errorf("TRAIN_BATCH_TOKENS/GRAD_ACCUM_STEPS = %d/%d = %d tokens is smaller than one sequence (TRAIN_SEQ_LEN=%d)",
			c.TrainBatchTokens, c.GradAccumSteps, c.MicrobatchTokens(), c.TrainSeqLen)
	case c.ValBatchSize/c.GradAccumSteps < c.TrainSeqLen:
		return fmt.Errorf("VAL_BATCH_SIZE must provide at least one sequence; got VAL_BATCH_SIZE=%d, GRAD_ACCUM_STEPS=%d, TRAIN_SEQ_LEN=%d",
			c.ValBatchSize, c.GradAccumSteps, c.TrainSeqLen)
	case !c.DType.IsFloat():
		return fmt.Errorf("--dtype must be bf16, fp16 or fp32")
	case !strings.HasSuffix(c.TokenizerPath, ".model"):
		return fmt.Errorf("TOKENIZER_PATH must point to a SentencePiece .model file: %s", c.TokenizerPath)
	case c.OutDir == "":
		return fmt.Errorf("OUT_DIR must not be empty")
	}
	if err := c.checkActivations(); err != nil {
		return err
	}
	if err := CheckRunID(c.RunID); err != nil {
		return err
	}
	switch c.Backend {
	case "auto", "cpu", "metal", "cuda":
	default:
		return fmt.Errorf("--backend must be auto, cpu, metal or cuda, got %q", c.Backend)
	}
	return nil
}

// intKnob is an integer setting and its inclusive range.
type intKnob struct {
	name      string
	v, lo, hi int
}

func (c *Config) intKnobs() []intKnob {
	o := c.Optim
	return []intKnob{
		{"SEED", c.Seed, 0, math.MaxInt64}, // mx.random.seed takes an unsigned integer
		{"ITERATIONS", c.Iterations, 0, MaxCount},
		{"VAL_LOSS_EVERY", c.ValLossEvery, 0, MaxCount},
		{"VAL_BATCH_SIZE", c.ValBatchSize, 1, MaxCount},
		{"TRAIN_LOG_EVERY", c.TrainLogEvery, 0, MaxCount},
		{"TRAIN_BATCH_TOKENS", c.TrainBatchTokens, 1, MaxCount},
		{"GRAD_ACCUM_STEPS", c.GradAccumSteps, 1, MaxCount},
		{"TRAIN_SEQ_LEN", c.TrainSeqLen, 1, MaxSeqLen},
		{"MAX_MICROBATCH_TOKENS", c.MaxMicrobatchTokens, 1, MaxCount},
		{"WARMUP_STEPS", c.WarmupSteps, 0, MaxCount},
		{"WARMDOWN_ITERS", c.WarmdownIters, 0, MaxCount},
		{"MUON_BACKEND_STEPS", o.MuonBackendSteps, 0, MaxCount},
		{"MUON_MOMENTUM_WARMUP_STEPS", o.MuonMomentumWarmupSteps, 0, MaxCount},
	}
}

// floatRange is the set of values a float knob accepts.
type floatRange int

const (
	nonNegative floatRange = iota // [0, ∞)
	positive                      // (0, ∞)
	unitOpen                      // [0, 1): betas and momenta
)

// floatKnob is a float setting, its range and how the program uses it.
type floatKnob struct {
	name    string
	v       float64
	rng     floatRange
	float32 bool // handed to the kernels as float32: the rounded value must stay in range
}

func (c *Config) floatKnobs() []floatKnob {
	o := c.Optim
	return []floatKnob{
		{"MAX_WALLCLOCK_SECONDS", c.MaxWallclockSeconds, nonNegative, false},
		{"TIED_EMBED_LR", o.TiedEmbedLR, nonNegative, true},
		{"MATRIX_LR", o.MatrixLR, nonNegative, true},
		{"SCALAR_LR", o.ScalarLR, nonNegative, true},
		{"BETA1", o.Beta1, unitOpen, true},
		{"BETA2", o.Beta2, unitOpen, true},
		{"ADAM_EPS", o.AdamEps, positive, true},
		{"MUON_MOMENTUM", o.MuonMomentum, unitOpen, true},
		{"MUON_MOMENTUM_WARMUP_START", o.MuonMomentumWarmupStart, unitOpen, true},
		{"GRAD_CLIP_NORM", o.GradClipNorm, nonNegative, true},
		{"LOSS_SCALE", c.LossScale, nonNegative, true},
	}
}

// check reports a value outside the knob's range. A float32 knob is checked
// after rounding too: BETA2=0.999999999 becomes 1 in float32 (and Adam's
// bias correction 1−β2^t becomes 0), ADAM_EPS=1e-50 becomes 0, 1e39 becomes
// +Inf.
func (k floatKnob) check() error {
	in := func(v float64) (bool, string) {
		finite := !math.IsNaN(v) && !math.IsInf(v, 0)
		switch k.rng {
		case positive:
			return finite && v > 0, "a finite number > 0"
		case unitOpen:
			return finite && v >= 0 && v < 1, "in [0, 1)"
		default:
			return finite && v >= 0, "a finite number >= 0"
		}
	}
	ok, want := in(k.v)
	if !ok {
		return fmt.Errorf("%s must be %s, got %g", k.name, want, k.v)
	}
	if v32 := float64(float32(k.v)); k.float32 {
		if ok, _ := in(v32); !ok {
			return fmt.Errorf("%s must be %s (as float32), got %g (float32: %g)", k.name, want, k.v, v32)
		}
	}
	return nil
}

// checkActivations refuses batch shapes whose largest activation (a chunk's
// rows times the widest row: the MLP hidden, the logits or the model width)
// has more than MaxCount elements.
func (c *Config) checkActivations() error {
	m := c.Model
	width := max(m.MLPMult*m.ModelDim, m.ModelDim)
	for _, r := range []struct {
		what, lower string
		rows        int
	}{
		{"training chunk", "MAX_MICROBATCH_TOKENS (or TRAIN_BATCH_TOKENS, or raise GRAD_ACCUM_STEPS)", c.ChunkTokens()},
		{"validation batch", "VAL_BATCH_SIZE (or raise GRAD_ACCUM_STEPS)", c.EvalTokens()},
	} {
		logitRows := r.rows
		if k := m.LogitChunkTokens; k > 0 && k < r.rows {
			logitRows = k
		}
		n, what, fix := float64(r.rows)*float64(width), fmt.Sprintf("(%d, %d) activation", r.rows, width), "lower "+r.lower
		if l := float64(logitRows) * float64(m.VocabSize); l > n {
			n, what = l, fmt.Sprintf("(%d, %d) logits", logitRows, m.VocabSize)
			fix = "set LOGIT_CHUNK_TOKENS (logits in chunks of that many rows) or " + fix
		}
		if n > MaxCount {
			return fmt.Errorf("the %s of %d tokens needs a %s tensor of %.0f elements, more than %d: %s",
				r.what, r.rows, what, n, MaxCount, fix)
		}
	}
	return nil
}

// ChunkTokens is the row count of one training chunk (token_chunks' first
// chunk): the microbatch cut to whole sequences, at most
// max(⌊MAX_MICROBATCH_TOKENS/TRAIN_SEQ_LEN⌋, 1) sequences.
func (c *Config) ChunkTokens() int {
	T := c.TrainSeqLen
	usable := c.MicrobatchTokens() / T * T
	return min(usable, max(c.MaxMicrobatchTokens/T*T, T))
}

// NumChunks is the number of chunks of one microbatch.
func (c *Config) NumChunks() int {
	usable := c.MicrobatchTokens() / c.TrainSeqLen * c.TrainSeqLen
	return (usable + c.ChunkTokens() - 1) / c.ChunkTokens()
}

// EvalTokens is the row count of one validation batch:
// ⌊VAL_BATCH_SIZE/GRAD_ACCUM_STEPS/TRAIN_SEQ_LEN⌋ sequences.
func (c *Config) EvalTokens() int {
	return c.ValBatchSize / c.GradAccumSteps / c.TrainSeqLen * c.TrainSeqLen
}

// CheckRunID refuses a RUN_ID that could name a file outside OUT_DIR or a
// hidden one: it must be empty (a fresh UUID is drawn) or 1 to MaxRunIDLen
// characters of [A-Za-z0-9._-] starting with a letter or a digit, so it has
// no path separator, is not "." or "..", and cannot be read as a flag.
func CheckRunID(id string) error {
	if id == "" {
		return nil
	}
	ok := len(id) <= MaxRunIDLen && isAlnum(id[0])
	for i := 0; ok && i < len(id); i++ {
		ok = isAlnum(id[i]) || id[i] == '.' || id[i] == '_' || id[i] == '-'
	}
	if !ok {
		return fmt.Errorf("RUN_ID=%q is not a plain file name: use 1 to %d of the characters A-Z a-z 0-9 . _ -, starting with a letter or digit (it names files inside OUT_DIR)",
			id, MaxRunIDLen)
	}
	return nil
}

func isAlnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

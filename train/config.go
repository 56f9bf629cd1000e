// Package train is golf's training program: the workflow of
// train_gpt_mlx.py's main() (tokenizer and validation set-up, the model and
// split optimizer, warm-up, the training loop with gradient accumulation,
// validation and the wall-clock cap, then the raw and int8 artifacts and the
// round-trip evaluation), over any backend.
package train

import (
	"fmt"
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

	DType     backend.DType // COMPUTE_DTYPE bf16 (--dtype)
	LossScale float64       // LOSS_SCALE 0: dynamic for fp16, 1 otherwise (--loss-scale)
	Backend   string        // GOLF_BACKEND auto|cpu|metal|cuda (--backend)
	// BackendChoice says why the backend in use was chosen (logged).
	BackendChoice string

	// DataPathSet and TokenizerPathSet record whether the user gave the paths;
	// when neither is given and the default data set is absent, the embedded
	// default data set is used.
	DataPathSet, TokenizerPathSet bool
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

// Validate reports the first impossible setting, naming its variable, before
// any work starts.
func (c *Config) Validate() error {
	if err := c.Model.Validate(); err != nil {
		return err
	}
	switch {
	case !c.TieEmbeddings:
		return fmt.Errorf("TIE_EMBEDDINGS=0: only tied embeddings are supported")
	case c.Iterations < 0:
		return fmt.Errorf("ITERATIONS must be >= 0, got %d", c.Iterations)
	case c.TrainSeqLen <= 0:
		return fmt.Errorf("TRAIN_SEQ_LEN must be positive, got %d", c.TrainSeqLen)
	case c.GradAccumSteps <= 0:
		return fmt.Errorf("GRAD_ACCUM_STEPS must be positive, got %d", c.GradAccumSteps)
	case c.TrainBatchTokens <= 0:
		return fmt.Errorf("TRAIN_BATCH_TOKENS must be positive, got %d", c.TrainBatchTokens)
	case c.MicrobatchTokens() < c.TrainSeqLen:
		return fmt.Errorf("TRAIN_BATCH_TOKENS/GRAD_ACCUM_STEPS = %d/%d = %d tokens is smaller than one sequence (TRAIN_SEQ_LEN=%d)",
			c.TrainBatchTokens, c.GradAccumSteps, c.MicrobatchTokens(), c.TrainSeqLen)
	case c.ValBatchSize/c.GradAccumSteps < c.TrainSeqLen:
		return fmt.Errorf("VAL_BATCH_SIZE must provide at least one sequence; got VAL_BATCH_SIZE=%d, GRAD_ACCUM_STEPS=%d, TRAIN_SEQ_LEN=%d",
			c.ValBatchSize, c.GradAccumSteps, c.TrainSeqLen)
	case c.MaxMicrobatchTokens <= 0:
		return fmt.Errorf("MAX_MICROBATCH_TOKENS must be positive, got %d", c.MaxMicrobatchTokens)
	case c.WarmupSteps < 0:
		return fmt.Errorf("WARMUP_STEPS must be >= 0, got %d", c.WarmupSteps)
	case c.TrainLogEvery < 0 || c.ValLossEvery < 0:
		return fmt.Errorf("TRAIN_LOG_EVERY and VAL_LOSS_EVERY must be >= 0")
	case c.Optim.MuonBackendSteps < 0:
		return fmt.Errorf("MUON_BACKEND_STEPS must be >= 0, got %d", c.Optim.MuonBackendSteps)
	case c.LossScale < 0:
		return fmt.Errorf("--loss-scale must be >= 0 (0 chooses dynamic scaling for fp16), got %g", c.LossScale)
	case !c.DType.IsFloat():
		return fmt.Errorf("--dtype must be bf16, fp16 or fp32")
	case !strings.HasSuffix(c.TokenizerPath, ".model"):
		return fmt.Errorf("TOKENIZER_PATH must point to a SentencePiece .model file: %s", c.TokenizerPath)
	case c.OutDir == "":
		return fmt.Errorf("OUT_DIR must not be empty")
	}
	switch c.Backend {
	case "auto", "cpu", "metal", "cuda":
	default:
		return fmt.Errorf("--backend must be auto, cpu, metal or cuda, got %q", c.Backend)
	}
	return nil
}

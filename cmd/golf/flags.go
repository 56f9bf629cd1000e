package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/train"
)

// hyperFlags binds every hyperparameter of train.Config to a flag whose
// environment variable is the reference's name, with the reference's
// default. Strings that need parsing (dtype, pattern lists) are resolved by
// applyParsed after the flags are read.
type hyperFlags struct {
	cfg              train.Config
	dtype            string
	controlPatterns  string
	keepFloatPattern string
	smoke            bool
}

func newHyperFlags() *hyperFlags {
	return &hyperFlags{cfg: train.Defaults(), dtype: "bf16", controlPatterns: train.DefaultControlPatterns}
}

// The categories of the flags of train, eval and info, in the order
// their help lists them (helpTemplate), with each one's heading.
const (
	catData        = "data"
	catModel       = "model"
	catOptimizer   = "optimizer"
	catSchedule    = "schedule"
	catEvaluation  = "evaluation"
	catCheckpoints = "checkpoints"
	catOutput      = "output"
	catBackend     = "backend"
	catParallel    = "parallel"
)

var flagCategories = []struct{ name, heading string }{
	{catData, "DATA"},
	{catModel, "MODEL"},
	{catOptimizer, "OPTIMIZER"},
	{catSchedule, "SCHEDULE"},
	{catEvaluation, "EVALUATION"},
	{catCheckpoints, "CHECKPOINTS"},
	{catOutput, "OUTPUT"},
	{catBackend, "BACKEND"},
	{catParallel, "DATA PARALLEL"},
}

func (h *hyperFlags) flags() []cli.Flag {
	c := &h.cfg
	m := &c.Model
	o := &c.Optim
	str := func(cat, name, env string, dst *string, usage string) cli.Flag {
		return &cli.StringFlag{Name: name, Category: cat, EnvVars: []string{env}, Value: *dst, Destination: dst, Usage: usage}
	}
	intf := func(cat, name string, envs []string, dst *int, usage string) cli.Flag {
		return &cli.IntFlag{Name: name, Category: cat, EnvVars: envs, Value: *dst, Destination: dst, Usage: usage}
	}
	flt := func(cat, name, env string, dst *float64, usage string) cli.Flag {
		return &cli.Float64Flag{Name: name, Category: cat, EnvVars: []string{env}, Value: *dst, Destination: dst, Usage: usage}
	}
	env := func(s ...string) []string { return s }
	return []cli.Flag{
		str(catData, "data-path", "DATA_PATH", &c.DataPath, "`DIR` of the fineweb_{train,val}_*.bin shards (embedded data if unset and absent)"),
		str(catData, "tokenizer-path", "TOKENIZER_PATH", &c.TokenizerPath, "SentencePiece `FILE`.model"),
		intf(catSchedule, "seed", env("SEED"), &c.Seed, "random seed"),
		intf(catSchedule, "iterations", env("ITERATIONS"), &c.Iterations, "optimizer steps"),
		intf(catEvaluation, "val-loss-every", env("VAL_LOSS_EVERY"), &c.ValLossEvery, "validate every N steps (0: only at the end)"),
		intf(catEvaluation, "val-batch-size", env("VAL_BATCH_SIZE"), &c.ValBatchSize, "validation tokens per batch × GRAD_ACCUM_STEPS"),
		intf(catOutput, "train-log-every", env("TRAIN_LOG_EVERY"), &c.TrainLogEvery, "log the train loss every N steps"),
		intf(catSchedule, "train-batch-tokens", env("TRAIN_BATCH_TOKENS"), &c.TrainBatchTokens, "tokens per optimizer step"),
		intf(catSchedule, "grad-accum-steps", env("GRAD_ACCUM_STEPS"), &c.GradAccumSteps, "microbatches per optimizer step"),
		intf(catSchedule, "train-seq-len", env("TRAIN_SEQ_LEN", "TRAIN_MAX_SEQ_LEN"), &c.TrainSeqLen, "sequence length"),
		intf(catBackend, "max-microbatch-tokens", env("MAX_MICROBATCH_TOKENS", "MLX_MAX_MICROBATCH_TOKENS"), &c.MaxMicrobatchTokens,
			"microbatch chunk in tokens (the peak-memory knob)"),
		intf(catSchedule, "warmup-steps", env("WARMUP_STEPS"), &c.WarmupSteps, "kernel warm-up steps before training, then reset"),
		intf(catSchedule, "warmdown-iters", env("WARMDOWN_ITERS"), &c.WarmdownIters, "linear LR warm-down length"),
		flt(catSchedule, "max-wallclock-seconds", "MAX_WALLCLOCK_SECONDS", &c.MaxWallclockSeconds, "stop after this much train time (0: no cap)"),
		intf(catModel, "vocab-size", env("VOCAB_SIZE"), &m.VocabSize, "vocabulary size (the tokenizer's)"),
		intf(catModel, "num-layers", env("NUM_LAYERS"), &m.NumLayers, "transformer blocks"),
		intf(catModel, "model-dim", env("MODEL_DIM"), &m.ModelDim, "model width"),
		intf(catModel, "num-heads", env("NUM_HEADS"), &m.NumHeads, "query heads"),
		intf(catModel, "num-kv-heads", env("NUM_KV_HEADS"), &m.NumKVHeads, "key/value heads"),
		intf(catModel, "mlp-mult", env("MLP_MULT"), &m.MLPMult, "MLP expansion"),
		&cli.BoolFlag{Name: "tie-embeddings", Category: catModel, EnvVars: env("TIE_EMBEDDINGS"), Value: true, Destination: &c.TieEmbeddings,
			Usage: "tied input/output embedding (the only mode)"},
		flt(catModel, "tied-embed-init-std", "TIED_EMBED_INIT_STD", &m.TiedEmbedInitStd, "embedding init std"),
		intf(catBackend, "logit-chunk-tokens", env("LOGIT_CHUNK_TOKENS"), &m.LogitChunkTokens, "logits in chunks of this many tokens (0: one)"),
		flt(catModel, "logit-softcap", "LOGIT_SOFTCAP", &m.LogitSoftcap, "logit softcap c in c·tanh(z/c)"),
		flt(catModel, "rope-base", "ROPE_BASE", &m.RopeBase, "RoPE base"),
		flt(catModel, "qk-gain-init", "QK_GAIN_INIT", &m.QKGainInit, "initial per-head query gain"),
		flt(catOptimizer, "beta1", "BETA1", &o.Beta1, "Adam β1"),
		flt(catOptimizer, "beta2", "BETA2", &o.Beta2, "Adam β2"),
		flt(catOptimizer, "adam-eps", "ADAM_EPS", &o.AdamEps, "Adam ε"),
		flt(catOptimizer, "tied-embed-lr", "TIED_EMBED_LR", &o.TiedEmbedLR, "Adam LR of the tied embedding"),
		flt(catOptimizer, "matrix-lr", "MATRIX_LR", &o.MatrixLR, "Muon LR of block matrices"),
		flt(catOptimizer, "scalar-lr", "SCALAR_LR", &o.ScalarLR, "Adam LR of control tensors, skip weights"),
		flt(catOptimizer, "muon-momentum", "MUON_MOMENTUM", &o.MuonMomentum, "Muon momentum"),
		intf(catOptimizer, "muon-backend-steps", env("MUON_BACKEND_STEPS"), &o.MuonBackendSteps, "Newton–Schulz iterations"),
		flt(catOptimizer, "muon-momentum-warmup-start", "MUON_MOMENTUM_WARMUP_START", &o.MuonMomentumWarmupStart, "Muon momentum at step 0"),
		intf(catOptimizer, "muon-momentum-warmup-steps", env("MUON_MOMENTUM_WARMUP_STEPS"), &o.MuonMomentumWarmupSteps, "Muon momentum warm-up length"),
		flt(catOptimizer, "grad-clip-norm", "GRAD_CLIP_NORM", &o.GradClipNorm, "global gradient-norm clip (0: off)"),
		str(catOutput, "out-dir", "OUT_DIR", &c.OutDir, "`DIR` of the log and artifacts"),
		str(catOutput, "run-id", "RUN_ID", &c.RunID, "`NAME` of the run's files (default: a random UUID)"),
		str(catOptimizer, "control-tensor-name-patterns", "CONTROL_TENSOR_NAME_PATTERNS", &h.controlPatterns,
			"comma-separated name patterns of the control tensors (Adam, fp32 in int8)"),
		str(catOutput, "int8-keep-float-fp32-name-patterns", "INT8_KEEP_FLOAT_FP32_NAME_PATTERNS", &h.keepFloatPattern,
			"kept fp32 in int8 (default: the control patterns)"),
		str(catBackend, "dtype", "COMPUTE_DTYPE", &h.dtype, "bf16, fp16 or fp32"),
		flt(catBackend, "loss-scale", "LOSS_SCALE", &c.LossScale, "static loss scale (0: dynamic for fp16, else 1)"),
		str(catBackend, "backend", "GOLF_BACKEND", &c.Backend, "auto, cpu, metal or cuda"),
		&cli.BoolFlag{Name: "smoke", Category: catSchedule, Destination: &h.smoke, DisableDefaultText: true,
			Usage: "one-minute preset (4 layers, dim 256, seq 256); flags given win"},
	}
}

// resolve finishes the configuration after parsing: parsed strings, the
// smoke preset for flags the user left alone, and which paths were given.
func (h *hyperFlags) resolve(ctx *cli.Context) (train.Config, error) {
	c := h.cfg
	if err := checkEmptyValues(ctx); err != nil {
		return c, err
	}
	dt, err := backend.ParseDType(h.dtype)
	if err != nil {
		return c, fmt.Errorf("--dtype (COMPUTE_DTYPE): %w", err)
	}
	c.DType = dt
	c.Optim.ControlPatterns = train.SplitPatterns(h.controlPatterns)
	if ctx.IsSet("int8-keep-float-fp32-name-patterns") {
		c.Int8KeepFloatPatterns = train.SplitPatterns(h.keepFloatPattern)
	} else {
		c.Int8KeepFloatPatterns = c.Optim.ControlPatterns
	}
	c.DataPathSet = ctx.IsSet("data-path")
	c.TokenizerPathSet = ctx.IsSet("tokenizer-path")
	if h.smoke {
		preset := []struct {
			flag string
			set  func()
		}{
			{"num-layers", func() { c.Model.NumLayers = 4 }},
			{"model-dim", func() { c.Model.ModelDim = 256 }},
			{"num-heads", func() { c.Model.NumHeads = 4 }},
			{"num-kv-heads", func() { c.Model.NumKVHeads = 2 }},
			{"train-seq-len", func() { c.TrainSeqLen = 256 }},
			{"train-batch-tokens", func() { c.TrainBatchTokens = 4096 }},
			{"grad-accum-steps", func() { c.GradAccumSteps = 1 }},
			{"max-microbatch-tokens", func() { c.MaxMicrobatchTokens = 4096 }},
			{"iterations", func() { c.Iterations = 60 }},
			{"val-batch-size", func() { c.ValBatchSize = 16384 }},
			{"train-log-every", func() { c.TrainLogEvery = 10 }},
			{"warmup-steps", func() { c.WarmupSteps = 2 }},
			{"warmdown-iters", func() { c.WarmdownIters = 20 }},
			{"max-wallclock-seconds", func() { c.MaxWallclockSeconds = 0 }},
		}
		for _, p := range preset {
			if !ctx.IsSet(p.flag) {
				p.set()
			}
		}
	}
	return c, nil
}

// checkEmptyValues refuses, for every flag of the command, an environment
// variable that is set but empty or blank (ITERATIONS=), which urfave/cli
// would silently take for "unset", and a string flag given an empty value
// on the command line (--run-id ""). Either is an error naming the variable
// and the flag; a pattern list that should be empty is written ",".
// resolve calls it; commands without hyperFlags (bench) run it as Before.
func checkEmptyValues(ctx *cli.Context) error {
	for _, f := range ctx.Command.Flags {
		name := f.Names()[0]
		hint := ""
		if strings.HasSuffix(name, "-patterns") {
			hint = `; write "," for no patterns`
		}
		if ef, ok := f.(interface{ GetEnvVars() []string }); ok {
			for _, env := range ef.GetEnvVars() {
				if v, set := os.LookupEnv(env); set && strings.TrimSpace(v) == "" {
					return fmt.Errorf("%s is set but empty: unset it for the default of --%s, or give a value%s", env, name, hint)
				}
			}
		}
		if _, isString := f.(*cli.StringFlag); isString && ctx.IsSet(name) && strings.TrimSpace(ctx.String(name)) == "" {
			return fmt.Errorf("--%s%s must not be empty%s", name, envNames(f), hint)
		}
	}
	return nil
}

// envNames is " (ENV)" for a flag with environment variables.
func envNames(f cli.Flag) string {
	if ef, ok := f.(interface{ GetEnvVars() []string }); ok && len(ef.GetEnvVars()) > 0 {
		return " (" + strings.Join(ef.GetEnvVars(), ", ") + ")"
	}
	return ""
}

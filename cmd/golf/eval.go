package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/train"
)

// evalKnob is a setting golf eval takes beside the model file: the
// hyperFlags flag that sets it and how it moves between configurations.
type evalKnob struct {
	flag, env string
	show      func(c *train.Config) string
	copy      func(dst, src *train.Config)
}

// evalKnobs are the settings an evaluation's numbers depend on that the
// artifact does not hold: the data, the batches the validation split is
// cut into, the model's non-parameter constants, the dtype and the backend.
// golf eval takes them from the run that wrote the artifact; a flag given
// overrides its value.
var evalKnobs = []evalKnob{
	{"train-seq-len", "TRAIN_SEQ_LEN", func(c *train.Config) string { return fmt.Sprint(c.TrainSeqLen) },
		func(d, s *train.Config) { d.TrainSeqLen = s.TrainSeqLen }},
	{"val-batch-size", "VAL_BATCH_SIZE", func(c *train.Config) string { return fmt.Sprint(c.ValBatchSize) },
		func(d, s *train.Config) { d.ValBatchSize = s.ValBatchSize }},
	{"grad-accum-steps", "GRAD_ACCUM_STEPS", func(c *train.Config) string { return fmt.Sprint(c.GradAccumSteps) },
		func(d, s *train.Config) { d.GradAccumSteps = s.GradAccumSteps }},
	{"logit-chunk-tokens", "LOGIT_CHUNK_TOKENS", func(c *train.Config) string { return fmt.Sprint(c.Model.LogitChunkTokens) },
		func(d, s *train.Config) { d.Model.LogitChunkTokens = s.Model.LogitChunkTokens }},
	{"logit-softcap", "LOGIT_SOFTCAP", func(c *train.Config) string { return fmt.Sprint(c.Model.LogitSoftcap) },
		func(d, s *train.Config) { d.Model.LogitSoftcap = s.Model.LogitSoftcap }},
	{"rope-base", "ROPE_BASE", func(c *train.Config) string { return fmt.Sprint(c.Model.RopeBase) },
		func(d, s *train.Config) { d.Model.RopeBase = s.Model.RopeBase }},
	{"dtype", "COMPUTE_DTYPE", func(c *train.Config) string { return c.DType.String() },
		func(d, s *train.Config) { d.DType = s.DType }},
	{"backend", "GOLF_BACKEND", func(c *train.Config) string { return c.Backend },
		func(d, s *train.Config) { d.Backend = s.Backend }},
	{"data-path", "DATA_PATH", func(c *train.Config) string { return c.DataPath },
		func(d, s *train.Config) { d.DataPath = s.DataPath }},
	{"tokenizer-path", "TOKENIZER_PATH", func(c *train.Config) string { return c.TokenizerPath },
		func(d, s *train.Config) { d.TokenizerPath = s.TokenizerPath }},
}

// evalShapeFlags are the model-shape flags eval accepts: the shape comes
// from the file, and a value given must agree with it.
var evalShapeFlags = []string{"vocab-size", "num-layers", "model-dim", "num-heads", "num-kv-heads", "mlp-mult"}

// evalUsage is eval's help for the flags whose training help does not say
// what they do in an evaluation (they are listed under evaluation).
var evalUsage = map[string]string{
	"train-seq-len":    "sequence length of the validation batches",
	"val-batch-size":   "validation tokens per batch × GRAD_ACCUM_STEPS",
	"grad-accum-steps": "a validation batch is VAL_BATCH_SIZE/GRAD_ACCUM_STEPS tokens, in whole sequences",
}

// evalFlags picks eval's flags out of hyperFlags' (same names, variables,
// defaults and help) and adds --run-config. trainOnly lists the others.
func evalFlags(h *hyperFlags) (flags []cli.Flag, trainOnly []string, runConfig *string) {
	keep := slices.Clone(evalShapeFlags)
	for _, k := range evalKnobs {
		keep = append(keep, k.flag)
	}
	for _, f := range h.flags() {
		name := f.Names()[0]
		if !slices.Contains(keep, name) {
			trainOnly = append(trainOnly, f.Names()...)
			continue
		}
		def := "the run's"
		if slices.Contains(evalShapeFlags, name) {
			def = "the file's"
		}
		usage, cat := evalUsage[name], ""
		if usage != "" {
			cat = catEvaluation
		}
		switch f := f.(type) {
		case *cli.IntFlag:
			f.DefaultText, f.Usage, f.Category = def, cmp.Or(usage, f.Usage), cmp.Or(cat, f.Category)
		case *cli.Float64Flag:
			f.DefaultText, f.Usage, f.Category = def, cmp.Or(usage, f.Usage), cmp.Or(cat, f.Category)
		case *cli.StringFlag:
			f.DefaultText, f.Usage, f.Category = def, cmp.Or(usage, f.Usage), cmp.Or(cat, f.Category)
		}
		flags = append(flags, f)
	}
	runConfig = new(string)
	flags = append(flags, &cli.StringFlag{Name: "run-config", Category: catEvaluation, Destination: runConfig,
		Usage: "the run's log `FILE` (<run>.txt) to take the configuration from; default: the one beside MODEL; \"none\": the reference's defaults"})
	return flags, trainOnly, runConfig
}

func evalCommand() *cli.Command {
	h := newHyperFlags()
	flags, trainOnly, runConfig := evalFlags(h)
	return &cli.Command{
		Name:      "eval",
		Usage:     "val_loss and val_bpb of a saved .npz or .int8.ptz, with the configuration of its run",
		ArgsUsage: "[flags] MODEL",
		Description: "The model's shape comes from the file. The rest of what the score depends on (TRAIN_SEQ_LEN, VAL_BATCH_SIZE, " +
			"GRAD_ACCUM_STEPS, LOGIT_CHUNK_TOKENS, LOGIT_SOFTCAP, ROPE_BASE, the dtype, the backend, the data and tokenizer) " +
			"comes from the run that wrote MODEL, as its log <run>.txt beside MODEL records it, " +
			"so that golf eval reproduces the run's final score; a flag given overrides the run's value, with a note. " +
			"Without a run configuration the reference's defaults apply, with a warning.",
		Flags: flags,
		OnUsageError: func(ctx *cli.Context, err error, sub bool) error {
			const undefined = "flag provided but not defined: -"
			if name, ok := strings.CutPrefix(err.Error(), undefined); ok {
				name = strings.TrimPrefix(name, "-")
				if slices.Contains(trainOnly, name) {
					return fmt.Errorf("eval: --%s is a training flag, which golf eval does not take: it evaluates with the configuration of the run that wrote MODEL (its log beside it); golf eval --help lists the flags that override it", name)
				}
			}
			return usageError(ctx, err, sub)
		},
		Action: func(ctx *cli.Context) error {
			// The flags and their environment first: a bad one is named
			// even without a model argument.
			given, err := h.resolve(ctx)
			if err != nil {
				return err
			}
			if ctx.NArg() != 1 {
				return fmt.Errorf("eval: want one model file (.npz or .int8.ptz) after the flags, got %d arguments %v", ctx.NArg(), ctx.Args().Slice())
			}
			path := ctx.Args().First()
			if err := train.CheckModelFile(path); err != nil {
				return err
			}
			cfg, rc, fromRun, err := evalConfig(ctx, given, path, *runConfig)
			if err != nil {
				return err
			}
			b, why, err := train.OpenBackend(cfg.Backend)
			if err != nil && fromRun && !ctx.IsSet("backend") {
				fmt.Printf("config: the run's backend %s does not open here (%v): evaluating on --backend auto; the last bits may differ from the run's\n", cfg.Backend, err)
				cfg.Backend = "auto"
				b, why, err = train.OpenBackend(cfg.Backend)
			}
			if err != nil {
				return err
			}
			fmt.Printf("backend:%s (%s)\n", b.Name(), why)
			progress := func(s string) { fmt.Fprintln(os.Stderr, s) }
			set := train.ShapeFlags{
				VocabSize: ctx.IsSet("vocab-size"), NumLayers: ctx.IsSet("num-layers"), ModelDim: ctx.IsSet("model-dim"),
				NumHeads: ctx.IsSet("num-heads"), NumKVHeads: ctx.IsSet("num-kv-heads"), MLPMult: ctx.IsSet("mlp-mult"),
			}
			loss, bpb, err := train.Evaluate(ctx.Context, cfg, set, b, path, progress)
			if err != nil {
				return err
			}
			fmt.Printf("val_loss:%.4f val_bpb:%.4f\n", loss, bpb)
			fmt.Printf("val_loss_exact:%.8f val_bpb_exact:%.8f\n", loss, bpb)
			if fromRun {
				if line := rc.CompareScore(loss, bpb); line != "" {
					fmt.Println(line)
				}
			}
			return nil
		},
	}
}

// evalConfig settles the configuration of an evaluation of path: the run's
// (from runConfig, or found beside path) with the knobs given overriding
// it, or, without one, the defaults with the knobs given. It prints where
// the configuration came from and the values in use.
func evalConfig(ctx *cli.Context, given train.Config, path, runConfig string) (cfg train.Config, run train.RunConfig, fromRun bool, err error) {
	switch runConfig {
	case "none":
		fmt.Println("config: --run-config none: the reference's defaults and the flags given")
	case "":
		var found bool
		var looked string
		if run, found, looked, err = train.FindRunConfig(path); err != nil {
			return cfg, run, false, err
		}
		if !found {
			fmt.Printf("WARNING: no configuration of the run that wrote %s (%s): evaluating with the reference's defaults and the flags given, "+
				"which give the run's score only if the run used them; --run-config FILE takes a run's log\n", path, looked)
		}
		fromRun = found
	default:
		if run, err = train.ReadRunConfig(runConfig, path); err != nil {
			return cfg, run, false, err
		}
		fromRun = true
	}
	cfg = given
	var overrides []string
	if fromRun {
		cfg = run.Config
		// Shape flags given are checked against the file (Evaluate).
		shape := []struct {
			flag string
			dst  *int
			v    int
		}{
			{"vocab-size", &cfg.Model.VocabSize, given.Model.VocabSize}, {"num-layers", &cfg.Model.NumLayers, given.Model.NumLayers},
			{"model-dim", &cfg.Model.ModelDim, given.Model.ModelDim}, {"num-heads", &cfg.Model.NumHeads, given.Model.NumHeads},
			{"num-kv-heads", &cfg.Model.NumKVHeads, given.Model.NumKVHeads}, {"mlp-mult", &cfg.Model.MLPMult, given.Model.MLPMult},
		}
		for _, f := range shape {
			if ctx.IsSet(f.flag) {
				*f.dst = f.v
			}
		}
		for _, k := range evalKnobs {
			if !ctx.IsSet(k.flag) {
				continue
			}
			before := k.show(&cfg)
			k.copy(&cfg, &given)
			if after := k.show(&cfg); after != before {
				overrides = append(overrides, fmt.Sprintf("--%s (%s) %s overrides the run's %s", k.flag, k.env, after, before))
			}
		}
		note, err := train.UseRunData(&cfg, run, ctx.IsSet("data-path"), ctx.IsSet("tokenizer-path"))
		if err != nil {
			return cfg, run, false, err
		}
		if note != "" {
			fmt.Println("config: " + note)
		}
	}
	var vals []string
	for _, k := range evalKnobs {
		vals = append(vals, k.env+"="+k.show(&cfg))
		if k.flag == "grad-accum-steps" && cfg.GradAccumSteps > 0 && cfg.TrainSeqLen > 0 {
			vals = append(vals, fmt.Sprintf("(validation batches of %d tokens)", cfg.ValBatchSize/cfg.GradAccumSteps/cfg.TrainSeqLen*cfg.TrainSeqLen))
		}
	}
	from := "the reference's defaults and the flags given"
	if fromRun {
		from = "the run's configuration in " + run.Source
	}
	fmt.Printf("config: %s: %s\n", from, strings.Join(vals, " "))
	for _, o := range overrides {
		fmt.Println("config: " + o + ": the score is not the run's")
	}
	for _, n := range run.Notes {
		fmt.Println("WARNING: " + n)
	}
	return cfg, run, fromRun, nil
}

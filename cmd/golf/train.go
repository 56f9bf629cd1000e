package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/dist"
	"github.com/golf-ml/golf/train"
)

// checkpointFlags binds train.CheckpointConfig to flags and env vars.
func checkpointFlags(c *train.CheckpointConfig) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "checkpoint-every", Category: catCheckpoints, EnvVars: []string{"CHECKPOINT_EVERY"}, Value: c.Every, Destination: &c.Every,
			Usage: "save the training state every N steps (0: off)"},
		&cli.Float64Flag{Name: "checkpoint-every-seconds", Category: catCheckpoints, EnvVars: []string{"CHECKPOINT_EVERY_SECONDS"}, Value: c.EverySeconds, Destination: &c.EverySeconds,
			Usage: "save the training state when this much wall time has passed since the last save (0: off)"},
		&cli.IntFlag{Name: "checkpoint-keep", Category: catCheckpoints, EnvVars: []string{"CHECKPOINT_KEEP"}, Value: c.Keep, Destination: &c.Keep,
			Usage: "how many of the newest checkpoints to keep (OUT_DIR/checkpoints/RUN_ID/)"},
		&cli.StringFlag{Name: "resume", Category: catCheckpoints, EnvVars: []string{"RESUME"}, Destination: &c.Resume,
			Usage: "continue a run from a checkpoint: its path, or 'latest' (of RUN_ID, or of any run in OUT_DIR when RUN_ID is unset)"},
	}
}

// overwriteFlag is --overwrite (OVERWRITE).
func overwriteFlag(dst *bool) cli.Flag {
	return &cli.BoolFlag{Name: "overwrite", Category: catOutput, EnvVars: []string{"OVERWRITE"}, Destination: dst,
		Usage: "replace an earlier finished run of RUN_ID in OUT_DIR (its log, metrics and artifacts) instead of refusing to start"}
}

// announcesStop is true while a command prints its own notice of the
// first signal (golf train: above its status line, with the step under
// way and the time it still needs), so that main leaves out its generic
// line.
var announcesStop atomic.Bool

func trainCommand() *cli.Command {
	h := newHyperFlags()
	ck := train.DefaultCheckpoint()
	var seeds string
	var overwrite bool
	var pf parallelFlags
	return &cli.Command{
		Name:  "train",
		Usage: "train the GPT (train_gpt_mlx.py's workflow); every flag also reads its env var",
		Flags: append(append(append(h.flags(), checkpointFlags(&ck)...), seedsFlag(&seeds), overwriteFlag(&overwrite)), pf.flags()...),
		Action: func(ctx *cli.Context) error {
			if ctx.NArg() > 0 {
				return fmt.Errorf("train: unexpected argument %q (flags start with --)", ctx.Args().First())
			}
			cfg, err := h.resolve(ctx)
			if err != nil {
				return err
			}
			cfg.Checkpoint = ck
			cfg.Overwrite = overwrite
			if err := cfg.Validate(); err != nil {
				return err
			}
			if pf.nproc > 0 && os.Getenv(dist.EnvLaunched) == "" {
				if seeds != "" {
					return errors.New("--seeds runs one training after another on one device; give it without --nproc-per-node")
				}
				if ranks := pf.nproc * max(pf.nnodes, 1); ranks > 0 && cfg.GradAccumSteps%ranks != 0 {
					return fmt.Errorf("--grad-accum-steps %d must be a multiple of the ranks (--nproc-per-node %d × --nnodes %d = %d): each rank takes GRAD_ACCUM_STEPS/WORLD_SIZE of a step's microbatches",
						cfg.GradAccumSteps, pf.nproc, max(pf.nnodes, 1), ranks)
				}
			}
			if launched, err := pf.launch(ctx.Context); launched || err != nil {
				return err // the ranks printed their own lines
			}
			w, err := dist.FromEnv(os.Getenv)
			if err != nil {
				return err
			}
			// torchrun (or golf's launcher) with one process still goes
			// through NCCL, as train_gpt.py does; a one-task Slurm or MPI
			// job is an ordinary run.
			if w.Distributed() || w.Source == "torchrun" || w.Source == "golf" {
				if seeds != "" {
					return errors.New("--seeds runs one training after another; give it without WORLD_SIZE > 1 or --nproc-per-node")
				}
				err := trainRank(ctx.Context, cfg, w, pf.timeout) // parallel.go
				var ie *train.Interrupted
				if errors.As(err, &ie) && w.Rank == 0 {
					if w.Source == "golf" { // this command line is the launcher's
						return fmt.Errorf("%w; resume with: %s --resume %s", err, resumeCommand(), shellQuote(ie.Checkpoint))
					}
					return fmt.Errorf("%w; resume with the same %s launch and --resume %s", err, w.Source, shellQuote(ie.Checkpoint))
				}
				return err
			}
			if seeds != "" {
				return trainSeries(ctx, cfg, seeds) // seeds.go
			}
			b, why, err := train.OpenBackend(cfg.Backend)
			if err != nil {
				return err
			}
			cfg.BackendChoice = why
			_, err = runTrain(ctx.Context, cfg, b)
			var ie *train.Interrupted
			if errors.As(err, &ie) {
				return fmt.Errorf("%w; resume with: %s --resume %s", err, resumeCommand(), shellQuote(ie.Checkpoint))
			}
			return err
		},
	}
}

// runTrain is train.Run on the console, which announces the first signal
// itself.
func runTrain(ctx context.Context, cfg train.Config, b backend.Backend) (*train.Result, error) {
	announcesStop.Store(true)
	defer announcesStop.Store(false)
	return train.Run(ctx, cfg, b, os.Stdout)
}

// resumeCommand is this process's command line without a --resume flag,
// quoted for a POSIX shell.
func resumeCommand() string {
	var out []string
	args := os.Args
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--resume" || a == "-resume" {
			i++
			continue
		}
		if strings.HasPrefix(a, "--resume=") || strings.HasPrefix(a, "-resume=") {
			continue
		}
		out = append(out, shellQuote(a))
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ',' || r == ':' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

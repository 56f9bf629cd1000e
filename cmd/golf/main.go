// Command golf trains the parameter-golf baseline GPT (train_gpt_mlx.py's
// model, optimizer, data format, metrics, log lines and artifacts) on Apple
// Silicon GPUs through Metal, on NVIDIA GPUs through CUDA, or on any CPU.
//
//	golf train [flags]       train (every hyperparameter is a flag and an env var)
//	golf eval [flags] MODEL  val_loss and val_bpb of a saved .npz or .int8.ptz
//	golf info [flags]        backend, precision policy and memory plan
//	golf data fetch          download the FineWeb shards and tokenizer
//	golf bench [flags]       per-op and training-step speed on a backend
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/urfave/cli/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	app := newApp()
	if err := app.RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "golf:", err)
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name:  "golf",
		Usage: "train the parameter-golf GPT on Metal, CUDA or the CPU",
		Commands: []*cli.Command{
			trainCommand(),
			evalCommand(),
			infoCommand(),
			dataCommand(),
			benchCommand(),
			reportCommand(),
		},
		HideHelpCommand: true,
	}
}

// Command golf trains the parameter-golf baseline GPT (train_gpt_mlx.py's
// model, optimizer, data format, metrics, log lines and artifacts) on Apple
// Silicon GPUs through Metal, on NVIDIA GPUs through CUDA, or on any CPU.
//
//	golf train [flags]       train (every hyperparameter is a flag and an env var)
//	golf eval [flags] MODEL  val_loss and val_bpb of a saved .npz or .int8.ptz
//	golf info [flags]        backend, precision policy and memory plan
//	golf data fetch          download the FineWeb shards and tokenizer
//	golf bench [flags]       per-op and training-step speed on a backend
//
// SIGINT, SIGTERM and SIGHUP stop a command at the next safe point: golf
// train finishes the current step, saves its state and the artifacts of
// the weights so far, says how to resume, and exits 130, 143 or 129. A
// second signal exits at once, removing any file it was writing.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/internal/atomicfile"
)

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string {
	switch e.sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return "signal " + e.sig.String()
}

// exitCode is the shell's convention for a process ended by the signal.
func (e signalError) exitCode() int { return 128 + int(e.sig) }

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		first := (<-sigs).(syscall.Signal)
		fmt.Fprintf(os.Stderr, "golf: %v: stopping at the next safe point (a second signal exits at once)\n", first)
		cancel(signalError{first})
		second := (<-sigs).(syscall.Signal)
		atomicfile.RemoveInFlight()
		fmt.Fprintf(os.Stderr, "golf: %v: exiting now\n", second)
		os.Exit(signalError{second}.exitCode())
	}()
	app := newApp()
	if err := app.RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "golf:", err)
		var se signalError
		if errors.As(err, &se) {
			os.Exit(se.exitCode())
		}
		if errors.Is(err, context.Canceled) {
			if se, ok := context.Cause(ctx).(signalError); ok {
				os.Exit(se.exitCode())
			}
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
			kernelsCommand(),
			reportCommand(),
		},
		HideHelpCommand: true,
	}
}

package main

import (
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/train"
)

func benchCommand() *cli.Command {
	var backendName, dtype string
	var noOps, noSteps bool
	var minTime time.Duration
	return &cli.Command{
		Name:   "bench",
		Usage:  "per-op times (GFLOP/s, GB/s) at the baseline shapes and training-step tokens/s on a backend",
		Before: checkEmptyValues,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", EnvVars: []string{"GOLF_BACKEND"}, Value: "auto", Destination: &backendName, Usage: "auto, cpu, metal or cuda"},
			&cli.StringFlag{Name: "dtype", EnvVars: []string{"COMPUTE_DTYPE"}, Value: "bf16", Destination: &dtype, Usage: "bf16, fp16 or fp32"},
			&cli.BoolFlag{Name: "no-ops", Destination: &noOps, Usage: "skip the per-op table"},
			&cli.BoolFlag{Name: "no-steps", Destination: &noSteps, Usage: "skip the training steps"},
			&cli.DurationFlag{Name: "min-time", Value: time.Second, Destination: &minTime, Usage: "time spent per measurement"},
		},
		Action: func(ctx *cli.Context) error {
			dt, err := backend.ParseDType(dtype)
			if err != nil {
				return err
			}
			b, _, err := train.OpenBackend(backendName)
			if err != nil {
				return err
			}
			return train.Bench(os.Stdout, b, dt, train.BenchOptions{Ops: !noOps, Steps: !noSteps, MinTime: minTime})
		},
	}
}

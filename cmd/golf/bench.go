package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/metal"
	"github.com/golf-ml/golf/train"
)

func benchCommand() *cli.Command {
	var backendName, dtype string
	var noOps, noSteps, predict bool
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
			&cli.BoolFlag{Name: "predict", Destination: &predict,
				Usage: "print the cost model of the Metal backend (--backend metal: predicted time per kernel, step and command buffer on each Apple chip) or of the CUDA backend (--backend cuda: bytes, FLOPs and roofline bound per kernel on an H100 and an H200), run over the real step's dispatches without a device, not a measurement"},
		},
		Action: func(ctx *cli.Context) error {
			dt, err := backend.ParseDType(dtype)
			if err != nil {
				return err
			}
			if predict {
				var b backend.Backend
				switch backendName {
				case "metal", "auto":
					b, err = metal.Open(metal.NewDryRuntime(metal.DryCaps(metal.Simd)))
				case "cuda":
					b, err = cuda.OpenDry(cuda.Options{})
				default:
					return fmt.Errorf("--predict models the Metal or the CUDA backend: use --backend metal or --backend cuda, not --backend %s", backendName)
				}
				if err != nil {
					return err
				}
				return train.Predict(os.Stdout, b, dt)
			}
			b, _, err := train.OpenBackend(backendName)
			if err != nil {
				return err
			}
			return train.Bench(os.Stdout, b, dt, train.BenchOptions{Ops: !noOps, Steps: !noSteps, MinTime: minTime})
		},
	}
}

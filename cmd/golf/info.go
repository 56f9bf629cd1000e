package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/train"
)

func infoCommand() *cli.Command {
	h := newHyperFlags()
	return &cli.Command{
		Name:  "info",
		Usage: "backend and device, the precision policy for --dtype, and the memory plan of the configured run",
		Flags: h.flags(),
		Action: func(ctx *cli.Context) error {
			cfg, err := h.resolve(ctx)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			b, why, err := train.OpenBackend(cfg.Backend)
			if err != nil {
				return err
			}
			return train.WriteInfo(os.Stdout, cfg, b, why)
		},
	}
}

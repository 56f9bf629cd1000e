package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/train"
)

func trainCommand() *cli.Command {
	h := newHyperFlags()
	return &cli.Command{
		Name:  "train",
		Usage: "train the GPT (train_gpt_mlx.py's workflow); every flag also reads its env var",
		Flags: h.flags(),
		Action: func(ctx *cli.Context) error {
			if ctx.NArg() > 0 {
				return fmt.Errorf("train: unexpected argument %q (flags start with --)", ctx.Args().First())
			}
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
			cfg.BackendChoice = why
			_, err = train.Run(ctx.Context, cfg, b, os.Stdout)
			return err
		},
	}
}

package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/train"
)

func evalCommand() *cli.Command {
	h := newHyperFlags()
	return &cli.Command{
		Name:      "eval",
		Usage:     "val_loss and val_bpb of a saved model (.npz or .int8.ptz): the model's shape comes from the file; data, TRAIN_SEQ_LEN, LOGIT_SOFTCAP, ROPE_BASE and --dtype as for train",
		ArgsUsage: "[flags] MODEL",
		Flags:     h.flags(),
		Action: func(ctx *cli.Context) error {
			cfg, err := h.resolve(ctx)
			if err != nil {
				return err
			}
			if ctx.NArg() != 1 {
				return fmt.Errorf("eval: want one model file (.npz or .int8.ptz) after the flags, got %d arguments %v", ctx.NArg(), ctx.Args().Slice())
			}
			b, why, err := train.OpenBackend(cfg.Backend)
			if err != nil {
				return err
			}
			fmt.Printf("backend:%s (%s)\n", b.Name(), why)
			progress := func(s string) { fmt.Fprintln(os.Stderr, s) }
			set := train.ShapeFlags{
				VocabSize: ctx.IsSet("vocab-size"), NumLayers: ctx.IsSet("num-layers"), ModelDim: ctx.IsSet("model-dim"),
				NumHeads: ctx.IsSet("num-heads"), NumKVHeads: ctx.IsSet("num-kv-heads"), MLPMult: ctx.IsSet("mlp-mult"),
			}
			loss, bpb, err := train.Evaluate(ctx.Context, cfg, set, b, ctx.Args().First(), progress)
			if err != nil {
				return err
			}
			fmt.Printf("val_loss:%.4f val_bpb:%.4f\n", loss, bpb)
			fmt.Printf("val_loss_exact:%.8f val_bpb_exact:%.8f\n", loss, bpb)
			return nil
		},
	}
}

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/data"
)

func dataCommand() *cli.Command {
	// Empty strings take Fetch's defaults (which read the MATCHED_FINEWEB_* env vars).
	opts := data.FetchOptions{TrainShards: data.DefaultTrainShards, Variant: data.DefaultVariant, LocalRoot: data.DefaultLocalRoot}
	return &cli.Command{
		Name:  "data",
		Usage: "dataset tools",
		Subcommands: []*cli.Command{{
			Name:  "fetch",
			Usage: "download the challenge's FineWeb shards and tokenizer, resuming partial files",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "variant", Value: opts.Variant, Destination: &opts.Variant, Usage: "tokenizer family: sp1024, sp4096, byte260, ..."},
				&cli.IntFlag{Name: "train-shards", Value: opts.TrainShards, Destination: &opts.TrainShards, Usage: "training shards to download"},
				&cli.StringFlag{Name: "root", Value: opts.LocalRoot, Destination: &opts.LocalRoot, Usage: "local root of datasets/, tokenizers/, manifest.json"},
				&cli.StringFlag{Name: "repo-id", EnvVars: []string{"MATCHED_FINEWEB_REPO_ID"}, Destination: &opts.RepoID, Usage: "dataset repository (default " + data.DefaultRepoID + ")"},
				&cli.StringFlag{Name: "remote-prefix", EnvVars: []string{"MATCHED_FINEWEB_REMOTE_ROOT_PREFIX"}, Destination: &opts.RemotePrefix, Usage: "export root inside the repository (default " + data.DefaultRemotePrefix + ")"},
				&cli.StringFlag{Name: "base-url", Destination: &opts.BaseURL, Usage: "download base URL (default: the repository's resolve URL)"},
				&cli.BoolFlag{Name: "skip-manifest", Destination: &opts.SkipManifest, DisableDefaultText: true, Usage: "use the local manifest.json only"},
				&cli.BoolFlag{Name: "with-docs", Destination: &opts.WithDocs, DisableDefaultText: true, Usage: "also download docs_selected.jsonl and its sidecar"},
				&cli.DurationFlag{Name: "connect-timeout", Value: data.DefaultConnectTimeout, Destination: &opts.ConnectTimeout, Usage: "give up making a connection after this long"},
				&cli.DurationFlag{Name: "idle-timeout", Value: data.DefaultIdleTimeout, Destination: &opts.IdleTimeout, Usage: "fail a transfer idle this long (retried, resumed)"},
				&cli.IntFlag{Name: "retries", Value: data.DefaultRetries, Destination: &opts.Retries, Usage: "retries per failed request or transfer (0: none)"},
			},
			Action: func(ctx *cli.Context) error {
				if ctx.NArg() > 1 {
					return fmt.Errorf("data fetch: unexpected arguments %v", ctx.Args().Slice())
				}
				if ctx.NArg() == 1 { // the reference's positional train-shards count
					if _, err := fmt.Sscan(ctx.Args().First(), &opts.TrainShards); err != nil {
						return fmt.Errorf("data fetch: train shard count %q: %w", ctx.Args().First(), err)
					}
				}
				if opts.ConnectTimeout <= 0 || opts.IdleTimeout <= 0 {
					return fmt.Errorf("data fetch: --connect-timeout and --idle-timeout must be positive, got %v and %v", opts.ConnectTimeout, opts.IdleTimeout)
				}
				if opts.Retries < 0 {
					return fmt.Errorf("data fetch: --retries must be 0 (no retry) or more, got %d", opts.Retries)
				}
				out := ctx.App.Writer
				opts.Log = func(s string) { fmt.Fprintln(out, s) }
				return data.Fetch(ctx.Context, opts)
			},
		}},
	}
}

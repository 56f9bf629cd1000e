package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/data"
)

// fetchLimits is data fetch's description: its limits, with their
// defaults, and what they add up to against a server that never answers.
func fetchLimits() string {
	def := data.NewFetchOptions()
	var waits []string
	var waited time.Duration
	for _, w := range def.RetryWaits() {
		waits, waited = append(waits, secs(w)), waited+w
	}
	return fmt.Sprintf("Limits per try: a connection, the response headers and the first body byte within\n"+
		"--first-byte-timeout (%s); all of manifest.json within --manifest-timeout (%s); then no\n"+
		"pause of --idle-timeout (%s) in a body. A failed try (connection error, timeout, 429, 5xx)\n"+
		"is retried --retries times (%d), waiting %s (or the server's Retry-After),\n"+
		"and a cut transfer resumes from its .part: a server that accepts and never answers fails\n"+
		"the fetch after about %s (%d × %s + %s of waits).",
		secs(def.FirstByteTimeout), secs(def.ManifestTimeout), secs(def.IdleTimeout), def.Retries, strings.Join(waits, ", "),
		def.UnansweredLimit(), def.Retries+1, secs(def.FirstByteTimeout), secs(waited))
}

// secs writes d in seconds: 60s, not 1m0s.
func secs(d time.Duration) string { return fmt.Sprintf("%gs", d.Seconds()) }

func dataCommand() *cli.Command {
	// Empty strings take Fetch's defaults (which read the MATCHED_FINEWEB_* env vars).
	opts := data.FetchOptions{TrainShards: data.DefaultTrainShards, Variant: data.DefaultVariant, LocalRoot: data.DefaultLocalRoot}
	return &cli.Command{
		Name:  "data",
		Usage: "dataset tools",
		Subcommands: []*cli.Command{{
			Name:        "fetch",
			Usage:       "download the challenge's FineWeb shards and tokenizer, resuming partial files",
			Description: fetchLimits(),
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "variant", Value: opts.Variant, Destination: &opts.Variant, Usage: "tokenizer family: sp1024, sp4096, byte260, ..."},
				&cli.IntFlag{Name: "train-shards", Value: opts.TrainShards, Destination: &opts.TrainShards, Usage: "training shards to download"},
				&cli.StringFlag{Name: "root", Value: opts.LocalRoot, Destination: &opts.LocalRoot, Usage: "local root of datasets/, tokenizers/, manifest.json"},
				&cli.StringFlag{Name: "repo-id", EnvVars: []string{"MATCHED_FINEWEB_REPO_ID"}, Destination: &opts.RepoID, Usage: "dataset repository (default " + data.DefaultRepoID + ")"},
				&cli.StringFlag{Name: "remote-prefix", EnvVars: []string{"MATCHED_FINEWEB_REMOTE_ROOT_PREFIX"}, Destination: &opts.RemotePrefix, Usage: "export root inside the repository (default " + data.DefaultRemotePrefix + ")"},
				&cli.StringFlag{Name: "base-url", Destination: &opts.BaseURL, Usage: "download base URL (default: the repository's resolve URL)"},
				&cli.BoolFlag{Name: "skip-manifest", Destination: &opts.SkipManifest, DisableDefaultText: true, Usage: "use the local manifest.json only"},
				&cli.BoolFlag{Name: "with-docs", Destination: &opts.WithDocs, DisableDefaultText: true, Usage: "also download docs_selected.jsonl and its sidecar"},
				&cli.DurationFlag{Name: "first-byte-timeout", Value: data.DefaultFirstByteTimeout, Destination: &opts.FirstByteTimeout, DefaultText: secs(data.DefaultFirstByteTimeout),
					Usage: "fail a try without a connection, response headers and first body byte this long after its start (retried)"},
				// The limit's name before first-byte-timeout, which took its place.
				&cli.DurationFlag{Name: "connect-timeout", Value: data.DefaultFirstByteTimeout, Destination: &opts.FirstByteTimeout, Hidden: true},
				&cli.DurationFlag{Name: "manifest-timeout", Value: data.DefaultManifestTimeout, Destination: &opts.ManifestTimeout, DefaultText: secs(data.DefaultManifestTimeout),
					Usage: "fail a try at manifest.json not complete this long after its start (retried)"},
				&cli.DurationFlag{Name: "idle-timeout", Value: data.DefaultIdleTimeout, Destination: &opts.IdleTimeout, DefaultText: secs(data.DefaultIdleTimeout),
					Usage: "fail a transfer whose body, after its first byte, stops this long (retried, resumed)"},
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
				if opts.FirstByteTimeout <= 0 || opts.ManifestTimeout <= 0 || opts.IdleTimeout <= 0 {
					return fmt.Errorf("data fetch: --first-byte-timeout, --manifest-timeout and --idle-timeout must be positive, got %v, %v and %v",
						opts.FirstByteTimeout, opts.ManifestTimeout, opts.IdleTimeout)
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

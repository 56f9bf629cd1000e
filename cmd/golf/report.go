package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/report"
)

func reportCommand() *cli.Command {
	def := report.DefaultOptions()
	return &cli.Command{
		Name:  "report",
		Usage: "tabulate runs (golf, train_gpt.py or train_gpt_mlx.py logs), test a record claim, write submission.json and a plot",
		Description: "A RUN is a log file or a folder of logs (*.txt, *.log). A run's score is its last\n" +
			"`NAME_exact val_loss:X val_bpb:Y` line (--score picks another). --against X tests\n" +
			"H1 \"mean < X - margin\" (one-sample t); --against-runs tests H1 \"mean < their mean - margin\"\n" +
			"(Welch's t, Welch-Satterthwaite df); both one-sided, as the challenge's rules ask.",
		ArgsUsage: "[flags] RUN...",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "score", Usage: "score line `NAME` (default: the last NAME_exact line)"},
			&cli.StringFlag{Name: "metric", Value: def.Metric, Usage: "the test's score: loss (val_loss, nats) or bpb (val_bpb)"},
			&cli.Float64Flag{Name: "against", Usage: "one-sample test against this score `X` (the current record)"},
			&cli.StringSliceFlag{Name: "against-runs", Usage: "Welch's test against these runs (`RUN`: log files or folders; repeat or comma-separate)"},
			&cli.Float64Flag{Name: "margin", Value: def.Margin, Usage: "the gain to show, in the metric's unit (0 allowed)"},
			&cli.Float64Flag{Name: "alpha", Value: def.Alpha, Usage: "significance level"},
			&cli.StringFlag{Name: "json", Usage: "write the challenge's submission.json to `FILE`"},
			&cli.StringFlag{Name: "plot", Usage: "write the runs' curves to `FILE.png`"},
			&cli.StringFlag{Name: "name", Usage: "submission.json: the record's name"},
			&cli.StringFlag{Name: "author", Usage: "submission.json: author"},
			&cli.StringFlag{Name: "github-id", Usage: "submission.json: GitHub id"},
		},
		Action: func(ctx *cli.Context) error {
			opts := def
			opts.Score = ctx.String("score")
			opts.Metric = ctx.String("metric")
			opts.Margin = ctx.Float64("margin")
			opts.Alpha = ctx.Float64("alpha")
			if ctx.IsSet("against") {
				x := ctx.Float64("against")
				opts.Against = &x
			}
			opts.AgainstRuns = ctx.StringSlice("against-runs")
			if err := opts.Validate(); err != nil {
				return err
			}
			if err := checkOutputs(ctx.String("json"), ctx.String("plot")); err != nil {
				return err
			}
			args := ctx.Args().Slice()
			for _, a := range args {
				if strings.HasPrefix(a, "-") {
					return fmt.Errorf("report: flags go before the runs: %q comes after a RUN", a)
				}
			}
			rep, err := report.Build(args, opts)
			if err != nil {
				return err
			}
			if err := rep.WriteText(os.Stdout); err != nil {
				return err
			}
			for _, w := range rep.Warnings {
				fmt.Fprintln(os.Stderr, "golf report: WARNING:", w)
			}
			if t := rep.Test; t != nil && t.Record && len(rep.Caveats) > 0 {
				fmt.Fprintf(os.Stderr, "golf report: the record verdict is the t-test's alone: caveats (%d) follow it, and --json writes them as \"caveats\"\n", len(rep.Caveats))
			}
			if f := ctx.String("json"); f != "" {
				meta := report.Meta{Name: ctx.String("name"), Author: ctx.String("author"), GitHubID: ctx.String("github-id")}
				if err := rep.WriteJSON(f, meta); err != nil {
					return fmt.Errorf("--json: %w", err)
				}
				fmt.Println("wrote", f)
			}
			if f := ctx.String("plot"); f != "" {
				if err := rep.WritePlot(f); err != nil {
					return err
				}
				fmt.Println("wrote", f)
			}
			return nil
		},
	}
}

// checkOutputs refuses, before any work, a --plot that is not a .png and
// an output whose folder does not exist.
func checkOutputs(jsonPath, plotPath string) error {
	if plotPath != "" && !strings.EqualFold(filepath.Ext(plotPath), ".png") {
		return fmt.Errorf("--plot %s: the plot is a PNG: give a FILE.png", plotPath)
	}
	for _, o := range []struct{ flag, path string }{{"--json", jsonPath}, {"--plot", plotPath}} {
		if o.path == "" {
			continue
		}
		dir := filepath.Dir(o.path)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("%s %s: folder %s does not exist", o.flag, o.path, dir)
		}
	}
	return nil
}

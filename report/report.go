// Package report turns training runs into a record claim for the
// parameter-golf challenge: it reads golf's logs and the reference scripts'
// (train_gpt.py, train_gpt_mlx.py), tabulates the runs, summarises their
// scores, runs the challenge's significance test (a gain of at least a
// margin, 0.005 nats, at p < 0.01) and writes the challenge's
// submission.json and a plot of the runs' curves.
//
// The score of a run is its last `NAME_exact val_loss:X val_bpb:Y` line
// (or the last line named by Options.Score). The tests are one-sided:
//
//	one sample (Options.Against = X):   H1 mean < X − margin
//	Welch (Options.AgainstRuns):         H1 mean < mean(baseline runs) − margin
//
// with Student's t distribution from gonum's stat/distuv.
package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Metrics a test can compare.
const (
	MetricLoss = "loss" // val_loss, nats per token: the challenge's margin is in nats
	MetricBPB  = "bpb"  // val_bpb, bits per byte
)

// Options are golf report's flags.
type Options struct {
	Score       string   // score line name (--score); "" for the last NAME_exact line
	Metric      string   // MetricLoss or MetricBPB (--metric)
	Against     *float64 // one-sample test against this score (--against)
	AgainstRuns []string // Welch's test against these runs (--against-runs)
	Margin      float64  // the gain the claim must show (--margin), in the metric's unit
	Alpha       float64  // significance level (--alpha)
}

// DefaultOptions are the challenge's rules: val_loss, 0.005 nats, p < 0.01.
func DefaultOptions() Options {
	return Options{Metric: MetricLoss, Margin: 0.005, Alpha: 0.01}
}

// Validate checks the options a user gives, naming the flag at fault.
func (o Options) Validate() error {
	if o.Metric != MetricLoss && o.Metric != MetricBPB {
		return fmt.Errorf("--metric must be loss or bpb, got %q", o.Metric)
	}
	if math.IsNaN(o.Alpha) || o.Alpha <= 0 || o.Alpha >= 1 {
		return fmt.Errorf("--alpha must be between 0 and 1 (exclusive), got %g", o.Alpha)
	}
	if math.IsNaN(o.Margin) || math.IsInf(o.Margin, 0) || o.Margin < 0 {
		return fmt.Errorf("--margin must be a finite number >= 0, got %g", o.Margin)
	}
	if o.Against != nil && (math.IsNaN(*o.Against) || math.IsInf(*o.Against, 0) || *o.Against <= 0) {
		return fmt.Errorf("--against must be a positive score, got %g", *o.Against)
	}
	if o.Against != nil && len(o.AgainstRuns) > 0 {
		return errors.New("give --against or --against-runs, not both")
	}
	if strings.ContainsAny(o.Score, " \t:") {
		return fmt.Errorf("--score must be a score line's name (as final_int8_zlib_roundtrip_exact), got %q", o.Score)
	}
	return nil
}

func (o Options) metricName() string {
	if o.Metric == MetricBPB {
		return "val_bpb"
	}
	return "val_loss"
}

func (o Options) unit() string {
	if o.Metric == MetricBPB {
		return "bits per byte"
	}
	return "nats"
}

// Summary is a group's count, mean and sample standard deviation (divisor
// n − 1; NaN for one run) of each metric over its scored runs.
type Summary struct {
	N                 int
	MeanLoss, StdLoss float64
	MeanBPB, StdBPB   float64
}

// Group is the runs of one side of a comparison.
type Group struct {
	Runs    []*Run
	Skipped []string // files in RUN folders that are not training logs
	Summary Summary
}

// Scored is the group's runs that count.
func (g *Group) Scored() []*Run {
	var out []*Run
	for _, r := range g.Runs {
		if r.Scored() {
			out = append(out, r)
		}
	}
	return out
}

func (g *Group) values(metric string) []float64 {
	var out []float64
	for _, r := range g.Scored() {
		if metric == MetricBPB {
			out = append(out, r.Score.ValBPB)
		} else {
			out = append(out, r.Score.ValLoss)
		}
	}
	return out
}

// Test is the significance test of a report and its verdict.
type Test struct {
	Kind   string  // "one-sample" or "Welch"
	Metric string  // val_loss or val_bpb
	Mean   float64 // the runs' mean
	Target float64 // --against, or the baseline runs' mean
	Margin float64
	Alpha  float64
	N      int // scored runs
	TTest
	Record bool // P < Alpha
	// SeedsNeeded estimates how many runs with the same mean and spread
	// would reach P < Alpha when the gain exceeds the margin but P does
	// not: 0 when not estimated, -1 when not within 64 runs.
	SeedsNeeded int
	Verdict     string
}

// Report is golf report's result.
type Report struct {
	Options  Options
	Runs     *Group
	Baseline *Group // --against-runs; nil otherwise
	Test     *Test  // nil without --against or --against-runs
	// Warnings are said loudly: the same seed with different scores.
	Warnings []string
	// Notes are worth a line: duplicates counted once, mixed configs.
	Notes []string
	// Caveats say plainly, whatever the test says, what a record claim
	// must still answer: a group of fewer than MinRecordSeeds scored runs,
	// validation data that is not FineWeb's validation split, a
	// configuration that is not the baseline record's. WriteText prints
	// them after the verdict; submission.json has them as its first field.
	Caveats []string
}

// Build reads the runs (log files or folders of logs), and the baseline
// runs of opts.AgainstRuns, and runs the test opts asks for. Errors name
// the file or flag at fault: no runs, unreadable files, no scored runs, too
// few scored runs for the test, bad options.
func Build(paths []string, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, errors.New("no runs: give log files or folders of logs after the flags")
	}
	rep := &Report{Options: opts}
	var err error
	if rep.Runs, err = rep.group(paths, "runs"); err != nil {
		return nil, err
	}
	if len(opts.AgainstRuns) > 0 {
		if rep.Baseline, err = rep.group(opts.AgainstRuns, "--against-runs"); err != nil {
			return nil, err
		}
		rep.sharedLogs()
	}
	if err := rep.test(); err != nil {
		return nil, err
	}
	rep.Caveats = rep.caveats()
	return rep, nil
}

// group reads one side's runs, flags duplicate seeds and summarises.
func (rep *Report) group(paths []string, what string) (*Group, error) {
	runs, skipped, err := expand(paths, rep.Options.Score)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	g := &Group{Runs: runs, Skipped: skipped}
	rep.duplicates(g)
	rep.mixedConfigs(g)
	scored := g.Scored()
	if len(scored) == 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: no scored runs among %d:", what, len(runs))
		for _, r := range runs {
			fmt.Fprintf(&b, "\n  %s: %s", r.Path, r.Problem)
		}
		return nil, errors.New(b.String())
	}
	loss, bpb := g.values(MetricLoss), g.values(MetricBPB)
	g.Summary.N = len(scored)
	g.Summary.MeanLoss, g.Summary.StdLoss = meanStd(loss)
	g.Summary.MeanBPB, g.Summary.StdBPB = meanStd(bpb)
	return g, nil
}

// duplicates flags runs of one group with the same seed and config: with
// the same score they are one run counted twice (the later is dropped);
// with different scores the runs do not reproduce, which a record claim
// must not hide.
func (rep *Report) duplicates(g *Group) {
	for j, b := range g.Runs {
		for _, a := range g.Runs[:j] {
			if a.SeedFrom == "" || b.SeedFrom == "" || a.Seed != b.Seed || !a.Scored() || !b.Scored() {
				continue
			}
			if a.Config != b.Config {
				rep.Notes = append(rep.Notes, fmt.Sprintf("seed %d: %s and %s have the same seed but different configurations", a.Seed, a.Path, b.Path))
				continue
			}
			if *a.Score == *b.Score {
				b.Problem = fmt.Sprintf("same seed, config and score as %s: counted once", a.Path)
				rep.Notes = append(rep.Notes, fmt.Sprintf("seed %d: %s repeats %s (same seed, config and score %s val_loss:%.8f): counted once", a.Seed, b.Path, a.Path, a.Score.Name, a.Score.ValLoss))
				break
			}
			rep.Warnings = append(rep.Warnings, fmt.Sprintf(
				"seed %d: %s (val_loss:%.8f val_bpb:%.8f) and %s (val_loss:%.8f val_bpb:%.8f) have the same seed and configuration but DIFFERENT SCORES: the runs do not reproduce, or are not the runs they seem. Both are counted; a record claim lists each seed once",
				a.Seed, a.Path, a.Score.ValLoss, a.Score.ValBPB, b.Path, b.Score.ValLoss, b.Score.ValBPB))
		}
	}
}

// mixedConfigs notes scored runs whose configuration differs from the first
// scored run's: a group should be one configuration over several seeds.
func (rep *Report) mixedConfigs(g *Group) {
	scored := g.Scored()
	if len(scored) < 2 {
		return
	}
	first := scored[0]
	for _, r := range scored[1:] {
		if r.Config == first.Config || r.Seed == first.Seed && r.SeedFrom != "" && first.SeedFrom != "" {
			continue
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s's configuration differs from %s's: %s", r.Path, first.Path, firstDiff(first.Config, r.Config)))
	}
}

// firstDiff names the first configuration line that differs.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("%q against %q", clip(x, 80), clip(y, 80))
		}
	}
	return "(none)"
}

// sharedLogs warns when the same log is on both sides of a comparison.
func (rep *Report) sharedLogs() {
	seen := map[string]string{}
	for _, r := range rep.Runs.Runs {
		if abs, err := filepath.Abs(r.Path); err == nil {
			seen[abs] = r.Path
		}
	}
	for _, r := range rep.Baseline.Runs {
		if abs, err := filepath.Abs(r.Path); err == nil && seen[abs] != "" {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s is both a run and an --against-runs run", r.Path))
		}
	}
}

// test runs the one-sample or Welch test the options ask for.
func (rep *Report) test() error {
	o := rep.Options
	if o.Against == nil && rep.Baseline == nil {
		return nil
	}
	x := rep.Runs.values(o.Metric)
	t := &Test{Metric: o.metricName(), Margin: o.Margin, Alpha: o.Alpha, N: len(x)}
	var err error
	if o.Against != nil {
		t.Kind, t.Target = "one-sample", *o.Against
		t.TTest, err = OneSampleLess(x, t.Target-o.Margin)
		if err != nil {
			return fmt.Errorf("--against: %w%s", err, rep.Runs.excludedList())
		}
	} else {
		y := rep.Baseline.values(o.Metric)
		t.Kind = "Welch"
		t.Target, _ = meanStd(y)
		if len(y) < 2 {
			return fmt.Errorf("--against-runs: Welch's test needs at least 2 scored baseline runs, got %d%s", len(y), rep.Baseline.excludedList())
		}
		t.TTest, err = WelchLess(x, y, o.Margin)
		if err != nil {
			return fmt.Errorf("--against-runs: %w%s", err, rep.Runs.excludedList())
		}
	}
	t.Mean, _ = meanStd(x)
	t.Record = t.P < o.Alpha
	if !t.Record && t.Target-t.Mean > t.Margin {
		if rep.Baseline == nil {
			t.SeedsNeeded = seedsNeededOne(x, t.Target-o.Margin, o.Alpha)
		} else {
			t.SeedsNeeded = seedsNeededWelch(x, rep.Baseline.values(o.Metric), o.Margin, o.Alpha)
		}
	}
	t.Verdict = t.verdict(o.unit())
	rep.Test = t
	return nil
}

// excludedList is ": excluded: path (why); ..." for an error message.
func (g *Group) excludedList() string {
	var parts []string
	for _, r := range g.Runs {
		if !r.Scored() {
			parts = append(parts, fmt.Sprintf("%s (%s)", r.Path, r.Problem))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; not counted: " + strings.Join(parts, "; ")
}

// verdict says in words whether the runs make a record and, if not, what
// is missing.
func (t *Test) verdict(unit string) string {
	gain := t.Target - t.Mean
	switch {
	case t.Record:
		return fmt.Sprintf("a record at p < %g: the mean %s %.8f is %.8f %s below %.8f (margin %g)", t.Alpha, t.Metric, t.Mean, gain, unit, t.Target, t.Margin)
	case gain <= 0:
		return fmt.Sprintf("not a record: the mean %s %.8f is not below %.8f; a gain of more than %g %s is needed", t.Metric, t.Mean, t.Target, t.Margin, unit)
	case gain <= t.Margin:
		return fmt.Sprintf("not a record: the gain %.8f %s is not more than the margin %g; more seeds will not help, a bigger gain is needed", gain, unit, t.Margin)
	case t.SeedsNeeded > 0:
		return fmt.Sprintf("not yet a record: the gain %.8f %s exceeds the margin %g but p = %.3g is not below %g with %d runs; about %d runs with the same mean and spread would reach it: more seeds",
			gain, unit, t.Margin, t.P, t.Alpha, t.N, t.SeedsNeeded)
	default:
		return fmt.Sprintf("not yet a record: the gain %.8f %s exceeds the margin %g but p = %.3g is not below %g, and more seeds with this spread would not get there: a bigger gain (or steadier runs) is needed",
			gain, unit, t.Margin, t.P, t.Alpha)
	}
}

// WriteText prints the report: warnings, each group's table and summary,
// the runs left out and why, the test with its verdict, and the caveats.
func (rep *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, s := range rep.Warnings {
		fmt.Fprintf(ew, "WARNING: %s\n", s)
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintln(ew)
	}
	rep.writeGroup(ew, "runs", rep.Runs)
	if rep.Baseline != nil {
		fmt.Fprintln(ew)
		rep.writeGroup(ew, "against runs", rep.Baseline)
	}
	for _, s := range rep.Notes {
		fmt.Fprintf(ew, "note: %s\n", s)
	}
	if t := rep.Test; t != nil {
		fmt.Fprintln(ew)
		if t.Kind == "Welch" {
			fmt.Fprintf(ew, "Welch's t-test, H1: mean %s < mean of the --against-runs (%.8f) - margin %g\n", t.Metric, t.Target, t.Margin)
		} else {
			fmt.Fprintf(ew, "one-sample t-test, H1: mean %s < %.8f - margin %g\n", t.Metric, t.Target, t.Margin)
		}
		fmt.Fprintf(ew, "t = %.4f  df = %.4f  p = %.4g  (one-sided, n = %d)\n", t.T, t.DF, t.P, t.N)
		fmt.Fprintf(ew, "verdict: %s\n", t.Verdict)
	}
	rep.writeCaveats(ew)
	return ew.err
}

// writeCaveats prints the caveats after the verdict; under a record
// verdict, as what the t-test alone does not answer.
func (rep *Report) writeCaveats(w io.Writer) {
	if len(rep.Caveats) == 0 {
		return
	}
	switch t := rep.Test; {
	case t != nil && t.Record:
		fmt.Fprintf(w, "caveats: the record verdict is the t-test's alone; a record claim must also answer these:\n")
	case t != nil:
		fmt.Fprintf(w, "caveats:\n")
	default:
		fmt.Fprintf(w, "\ncaveats (for a record claim):\n")
	}
	for _, c := range rep.Caveats {
		fmt.Fprintf(w, "  - %s\n", c)
	}
}

func (rep *Report) writeGroup(w io.Writer, title string, g *Group) {
	score := "the last NAME_exact line"
	if rep.Options.Score != "" {
		score = "the last " + rep.Options.Score + " line"
	}
	fmt.Fprintf(w, "%s: %d logs, %d scored (score: %s)\n", title, len(g.Runs), g.Summary.N, score)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tsource\tseed\tsteps\tstep_avg\ttrain_time\tcap\tpeak_mem\tmodel_bytes\tartifact_bytes\tval_loss\tval_bpb\tscore")
	fromName := false
	for _, r := range g.Runs {
		seed := "?"
		switch r.SeedFrom {
		case "log":
			seed = fmt.Sprint(r.Seed)
		case "file name":
			seed, fromName = fmt.Sprintf("%d*", r.Seed), true
		}
		loss, bpb, name := "-", "-", "-"
		if r.Scored() {
			loss, bpb, name = fmt.Sprintf("%.8f", r.Score.ValLoss), fmt.Sprintf("%.8f", r.Score.ValBPB), r.Score.Name
		}
		cap := "no"
		if r.WallclockCap {
			cap = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Path, r.Source, seed,
			orDash(r.Steps > 0, fmt.Sprintf("%d/%d", r.Steps, r.Iterations)),
			orDash(r.StepAvgMs > 0, fmt.Sprintf("%.2fms", r.StepAvgMs)),
			orDash(r.TrainTimeMs > 0, fmt.Sprintf("%.1fs", r.TrainTimeMs/1000)),
			cap,
			orDash(r.PeakMemMiB > 0, fmt.Sprintf("%dMiB", r.PeakMemMiB)),
			orDash(r.ModelBytes > 0, fmt.Sprint(r.ModelBytes)),
			orDash(r.ArtifactBytes > 0, fmt.Sprint(r.ArtifactBytes)),
			loss, bpb, name)
	}
	tw.Flush()
	if fromName {
		fmt.Fprintln(w, "* seed from the file name (the log has no seed:N line)")
	}
	s := g.Summary
	fmt.Fprintf(w, "n=%d  val_loss mean %.8f std %s  val_bpb mean %.8f std %s\n", s.N, s.MeanLoss, fmtStd(s.StdLoss), s.MeanBPB, fmtStd(s.StdBPB))
	for _, r := range g.Runs {
		if !r.Scored() {
			fmt.Fprintf(w, "not counted: %s: %s\n", r.Path, r.Problem)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", r.Path, n)
		}
	}
	for _, p := range g.Skipped {
		fmt.Fprintf(w, "skipped: %s (not a training log)\n", p)
	}
}

func fmtStd(s float64) string {
	if math.IsNaN(s) {
		return "- (one run)"
	}
	return fmt.Sprintf("%.8f", s)
}

func orDash(ok bool, s string) string {
	if ok {
		return s
	}
	return "-"
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

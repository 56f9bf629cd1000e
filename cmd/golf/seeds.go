package main

// golf train --seeds: one configuration, several seeds, one report.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/internal/atomicfile"
	"github.com/golf-ml/golf/internal/runlock"
	"github.com/golf-ml/golf/report"
	"github.com/golf-ml/golf/train"
	"github.com/golf-ml/golf/trainstate"
)

// seedsFlag is --seeds (SEEDS).
func seedsFlag(dst *string) cli.Flag {
	return &cli.StringFlag{Name: "seeds", Category: catSchedule, EnvVars: []string{"SEEDS"}, Destination: dst,
		Usage: "train once per seed (comma-separated: 1337,42,7) as runs RUN_ID_seedN, one after another, then print their golf report; " +
			"the same command run again continues the series (finished seeds are kept, an interrupted one resumes)"}
}

// parseSeeds reads a --seeds list: whole numbers ≥ 0 (SEED's range),
// separated by commas, each at most once.
func parseSeeds(s string) ([]int, error) {
	var seeds []int
	seen := map[int]bool{}
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("--seeds (SEEDS) %q: element %d is empty; give whole numbers separated by commas, e.g. 1337,42,7", s, i+1)
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds (SEEDS) %q: element %d (%q) is not a whole number; give whole numbers separated by commas, e.g. 1337,42,7", s, i+1, f)
		}
		if n < 0 {
			return nil, fmt.Errorf("--seeds (SEEDS) %q: seed %d is negative (a seed is in [0, %d], as SEED)", s, n, int64(math.MaxInt64))
		}
		if seen[int(n)] {
			return nil, fmt.Errorf("--seeds (SEEDS) %q: seed %d is listed twice; a series trains each seed once", s, n)
		}
		seen[int(n)] = true
		seeds = append(seeds, int(n))
	}
	return seeds, nil
}

// seriesFormat names the layout of a series file.
const seriesFormat = "golf-series/1"

// seriesFile is OUT_DIR/<run_id>_series.json: the configuration a series
// trains, so that running the command again continues the same series and
// a changed configuration is refused instead of mixed into it.
type seriesFile struct {
	Format string       `json:"format"`
	RunID  string       `json:"run_id"`
	Seeds  []int        `json:"seeds"`
	Config train.Config `json:"config"`
}

func seriesPath(outDir, base string) string  { return filepath.Join(outDir, base+"_series.json") }
func seedRunID(base string, seed int) string { return fmt.Sprintf("%s_seed%d", base, seed) }

// seriesMayDiffer are the settings a series may change between the
// commands that continue it, as a resumed run may: they decide how a run
// is carried out, not what it computes. Anything else (the model, dtype,
// batch geometry, optimizer, data, iterations, the wall-clock cap) would
// mix two configurations into one series.
var seriesMayDiffer = map[string]bool{
	"RunID": true, "Seed": true, "BackendChoice": true, "Backend": true, "MaxMicrobatchTokens": true,
	"TrainLogEvery": true, "ValLossEvery": true, "Checkpoint": true,
}

// seedState is where a seed of a series stands.
type seedState int

const (
	seedNew         seedState = iota // nothing of it yet, or an attempt that left no checkpoint
	seedInterrupted                  // checkpoints to resume from
	seedFinished                     // published, no checkpoints, the log ends with the score
)

// stateOf reads a seed's run from OUT_DIR. A run is finished when its
// artifacts are published, it has no checkpoints left (a finished run
// deletes them) and its log's last line is the final
// `final_int8_zlib_roundtrip_exact` score (an interrupted run publishes
// too, but logs `interrupted:` after it).
func stateOf(cfg train.Config) (seedState, string) {
	if cps, err := trainstate.List(trainstate.Dir(cfg.OutDir, cfg.RunID)); err == nil && len(cps) > 0 {
		return seedInterrupted, fmt.Sprintf("resuming from step %d (%s)", cps[len(cps)-1].Step, cps[len(cps)-1].Path)
	}
	log := filepath.Join(cfg.OutDir, cfg.RunID+".txt")
	last, err := lastLine(log)
	if errors.Is(err, os.ErrNotExist) {
		return seedNew, "starting"
	}
	published := true
	for _, s := range []string{"_model.npz", "_model.int8.ptz", "_model.summary.json", "_loss.png"} {
		if _, err := os.Stat(filepath.Join(cfg.OutDir, cfg.RunID+s)); err != nil {
			published = false
		}
	}
	if err == nil && published && strings.HasPrefix(last, "final_int8_zlib_roundtrip_exact ") {
		return seedFinished, "finished earlier (" + log + "): not rerun"
	}
	return seedNew, "starting over: " + log + " holds an attempt that left no checkpoint (the log is appended)"
}

// lastLine is the last non-empty line of the file at path.
func lastLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	last := ""
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	return last, sc.Err()
}

// trainSeries is golf train --seeds: cfg (validated, without a seed of its
// own) once per seed as run <RUN_ID>_seed<N>, one after another on one
// backend, then the golf report of the series, printed and written to
// OUT_DIR/<RUN_ID>_report.txt. OUT_DIR/<RUN_ID>_series.json records the
// configuration: the same command run again skips the finished seeds,
// resumes the interrupted one from its newest checkpoint and starts the
// rest. Without RUN_ID the series is named by a random UUID, or with
// --resume latest continues the newest series in OUT_DIR.
func trainSeries(ctx *cli.Context, cfg train.Config, list string) error {
	seeds, err := parseSeeds(list)
	if err != nil {
		return err
	}
	if ctx.IsSet("seed") {
		return errors.New("--seeds and --seed (SEED) are both set: --seeds gives every run its seed; unset one of them")
	}
	if cfg.Overwrite {
		return errors.New("--overwrite (OVERWRITE) does not go with --seeds: the same command continues a series, keeping its finished seeds; for a new series give another RUN_ID or OUT_DIR")
	}
	resume := cfg.Checkpoint.Resume
	if resume != "" && resume != "latest" {
		return fmt.Errorf("--resume (RESUME) %q: with --seeds only 'latest' is allowed (the series resumes its interrupted seed itself)", resume)
	}
	cfg.Checkpoint.Resume = ""
	base, given := cfg.RunID, ctx.IsSet("run-id")
	if base == "" {
		if resume == "latest" {
			if base, err = latestSeries(cfg.OutDir); err != nil {
				return err
			}
		} else {
			base = newSeriesID()
		}
	}
	runs := make([]train.Config, len(seeds))
	for i, s := range seeds {
		c := cfg
		c.Seed, c.RunID = s, seedRunID(base, s)
		if err := c.Validate(); err != nil {
			return fmt.Errorf("--seeds: seed %d: %w", s, err)
		}
		runs[i] = c
	}
	// One writer per series: its file and every seed's run are locked
	// before anything is written, and stay locked until the series ends,
	// so neither another series nor a lone run of one of its seeds can
	// write beside it.
	_, statErr := os.Stat(cfg.OutDir)
	outDirNew := errors.Is(statErr, os.ErrNotExist)
	ids := []string{base + "_series"}
	for _, c := range runs {
		ids = append(ids, c.RunID)
	}
	locks, err := lockRuns(cfg.OutDir, ids)
	if err != nil {
		if outDirNew {
			os.Remove(cfg.OutDir) // only if empty
		}
		return err
	}
	var made seriesMade
	undo := false
	defer func() {
		locks.release()
		if undo {
			made.undo()
		}
	}()
	ctx.Context = train.WithHeldLocks(ctx.Context, cfg.OutDir, ids...)
	made, err = checkSeries(cfg, base, seeds, runs)
	if outDirNew {
		made.dir = cfg.OutDir
	}
	if err != nil {
		undo = true
		return err
	}
	b, why, err := train.OpenBackend(cfg.Backend)
	if err != nil {
		undo = true
		return err
	}
	cont := resumeCommand()
	if !given {
		cont += " --run-id " + shellQuote(base)
	}
	out := os.Stdout
	var logs []string
	for i, c := range runs {
		c.BackendChoice = why
		state, what := stateOf(c)
		logs = append(logs, filepath.Join(c.OutDir, c.RunID+".txt"))
		fmt.Fprintf(out, "series %s: seed %d (%d/%d): %s\n", base, c.Seed, i+1, len(runs), what)
		if state == seedFinished {
			continue
		}
		if state == seedInterrupted {
			c.Checkpoint.Resume = "latest"
		}
		if err := ctx.Context.Err(); err != nil {
			return fmt.Errorf("%w: series %s stopped before seed %d; it continues with: %s", context.Cause(ctx.Context), base, c.Seed, cont)
		}
		_, err := runTrain(ctx.Context, c, b)
		var ie *train.Interrupted
		switch {
		case errors.As(err, &ie):
			return fmt.Errorf("%w; the series continues with: %s", err, cont)
		case err != nil && ctx.Context.Err() != nil:
			return fmt.Errorf("%w (series %s, seed %d); the series continues with: %s", err, base, c.Seed, cont)
		case err != nil:
			undo = true
			return fmt.Errorf("series %s: seed %d: %w", base, c.Seed, err)
		}
	}
	return seriesReport(out, cfg.OutDir, base, logs)
}

// runLocks are the run locks a series holds.
type runLocks []*runlock.Lock

// lockRuns takes the lock of every run id in outDir, or none: a run held
// by another process is refused, naming it.
func lockRuns(outDir string, ids []string) (runLocks, error) {
	var ls runLocks
	for _, id := range ids {
		l, err := runlock.Acquire(outDir, id)
		if err != nil {
			ls.release()
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func (ls runLocks) release() {
	for _, l := range ls {
		l.Release()
	}
}

// seriesMade is what checkSeries created: undone when the first seed
// fails before writing anything, so that bad input leaves no files.
type seriesMade struct {
	file, dir string // "" when it existed before
	logs      []string
}

func (m seriesMade) undo() {
	for _, l := range m.logs {
		if _, err := os.Stat(l); err == nil {
			return // a run started: the series file belongs to it now
		}
	}
	if m.file != "" {
		os.Remove(m.file)
	}
	if m.dir != "" {
		os.Remove(m.dir) // only if empty
	}
}

// checkSeries checks the series file of base against cfg and writes it
// (refreshing the seed list). A series file from another configuration is
// refused, naming every setting that differs; without a series file, a
// seed's run that already has a log or checkpoints is refused, as it was
// not trained by a series.
func checkSeries(cfg train.Config, base string, seeds []int, runs []train.Config) (seriesMade, error) {
	var made seriesMade
	path := seriesPath(cfg.OutDir, base)
	for _, c := range runs {
		made.logs = append(made.logs, filepath.Join(c.OutDir, c.RunID+".txt"))
	}
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		var s seriesFile
		if err := json.Unmarshal(old, &s); err != nil || s.Format != seriesFormat {
			return made, fmt.Errorf("%s: not a golf series file (%v); remove it or give another RUN_ID", path, err)
		}
		if diffs := diffSeries(s.Config, cfg); len(diffs) > 0 {
			return made, fmt.Errorf("series %s in %s was started with another configuration; it differs in:\n  %s\nrun it with its own settings, or give another RUN_ID or OUT_DIR for a new series",
				base, cfg.OutDir, strings.Join(diffs, "\n  "))
		}
	case errors.Is(err, os.ErrNotExist):
		for _, c := range runs {
			if cps, err := trainstate.List(trainstate.Dir(c.OutDir, c.RunID)); err == nil && len(cps) > 0 {
				return made, fmt.Errorf("RUN_ID %s has training state in %s but no series file %s: it was not started by --seeds; give another RUN_ID", c.RunID, trainstate.Dir(c.OutDir, c.RunID), path)
			}
			if _, err := os.Stat(filepath.Join(c.OutDir, c.RunID+".txt")); err == nil {
				return made, fmt.Errorf("RUN_ID %s already has a log in %s but no series file %s: it was not started by --seeds; give another RUN_ID", c.RunID, c.OutDir, path)
			}
		}
		made.file = path
	default:
		return made, fmt.Errorf("series file: %w", err)
	}
	if _, err := os.Stat(cfg.OutDir); errors.Is(err, os.ErrNotExist) {
		made.dir = cfg.OutDir
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return made, fmt.Errorf("OUT_DIR %s: %w", cfg.OutDir, err)
	}
	js, err := json.MarshalIndent(seriesFile{Format: seriesFormat, RunID: base, Seeds: seeds, Config: seriesConfig(cfg)}, "", "  ")
	if err != nil {
		return made, err
	}
	if err := atomicfile.WriteFile(path, append(js, '\n')); err != nil {
		made.undo()
		return made, fmt.Errorf("OUT_DIR %s: %w", cfg.OutDir, err)
	}
	return made, nil
}

// seriesConfig is cfg as a series file keeps it: without the settings that
// belong to one command (the backend's choice, the checkpoint cadence).
func seriesConfig(cfg train.Config) train.Config {
	cfg.RunID, cfg.Seed, cfg.BackendChoice = "", 0, ""
	cfg.Checkpoint = train.CheckpointConfig{}
	return cfg
}

// diffSeries lists the settings outside seriesMayDiffer where the series
// file's configuration and cfg differ, as "Field: then → now".
func diffSeries(saved, cfg train.Config) []string {
	flat := func(c train.Config) map[string]string {
		out := train.FlatJSON(c)
		for k := range out {
			top, _, _ := strings.Cut(k, ".")
			if seriesMayDiffer[top] {
				delete(out, k)
			}
		}
		out["DType"] = strconv.Quote(c.DType.String())
		return out
	}
	a, b := flat(saved), flat(seriesConfig(cfg))
	var diffs []string
	for k, av := range a {
		if bv := b[k]; av != bv {
			diffs = append(diffs, fmt.Sprintf("%s: %s then, %s now", k, av, bv))
		}
	}
	for k, bv := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: unset then, %s now", k, bv))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// latestSeries is the series of OUT_DIR whose series file was written last.
func latestSeries(outDir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(outDir, "*_series.json"))
	if err != nil {
		return "", err
	}
	best, bestTime := "", time.Time{}
	for _, f := range files {
		st, err := os.Stat(f)
		if err == nil && st.ModTime().After(bestTime) {
			best, bestTime = f, st.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("--resume latest with --seeds: no series in %s (no *_series.json); give RUN_ID to start one", outDir)
	}
	return strings.TrimSuffix(filepath.Base(best), "_series.json"), nil
}

// newSeriesID is a random RFC 4122 version-4 UUID, as RUN_ID's default.
func newSeriesID() string {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		panic(err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// seriesReport prints the golf report of the series' logs and writes it to
// OUT_DIR/<base>_report.txt.
func seriesReport(out io.Writer, outDir, base string, logs []string) error {
	rep, err := report.Build(logs, report.DefaultOptions())
	if err != nil {
		return fmt.Errorf("series %s: report: %w", base, err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		return err
	}
	path := filepath.Join(outDir, base+"_report.txt")
	if err := atomicfile.WriteFile(path, text.Bytes()); err != nil {
		return err
	}
	plural := "s"
	if len(logs) == 1 {
		plural = ""
	}
	fmt.Fprintf(out, "\ngolf report of series %s (%d seed%s):\n%s", base, len(logs), plural, text.String())
	for _, w := range rep.Warnings {
		fmt.Fprintln(os.Stderr, "golf report: WARNING:", w)
	}
	quoted := make([]string, len(logs))
	for i, l := range logs {
		quoted[i] = shellQuote(l)
	}
	fmt.Fprintf(out, "wrote %s\nto test a record claim and write submission.json: golf report --against SCORE --json submission.json %s\n",
		path, strings.Join(quoted, " "))
	return nil
}

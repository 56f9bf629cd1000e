package train

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golf-ml/golf/artifact"
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/internal/runlock"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
	"github.com/golf-ml/golf/trainstate"
)

// Result is what a run produced.
type Result struct {
	RunID             string
	LogPath           string
	ModelPath         string // raw .npz
	QuantPath         string // int8 + zlib container
	SummaryPath       string // JSON summary of the raw tensors (scripts/check_artifacts.py)
	PlotPath          string
	MetricsPath       string // per-step metrics, JSON lines (OUT_DIR/RUN_ID.metrics.jsonl)
	Steps             int
	Iterations        int     // ITERATIONS of the run
	WallMs            float64 // wall time of the run, across resumes, start-up included
	TrainTimeMs       float64 // training time (validation and checkpoints excluded)
	TrainLosses       []Point
	ValLoss, ValBPB   float64 // final, before quantization
	QValLoss, QValBPB float64 // after the int8 round trip
	Embedded          bool    // trained on the embedded default dataset
}

// inputs are the validated data set, tokenizer and metric tables.
type inputs struct {
	dataPath, tokenizerPath string
	embedded                bool
	datasetName             string
	actualTrain, expected   int
	valTokens               []int32
	luts                    data.ByteLUTs
	dataDigest              string // identity of the training shards (names, sizes, contents)
	tokenizerDigest         string // sha256 of the tokenizer file
}

// Interrupted is the error of a run stopped by a cancelled context (a
// signal) at a step boundary, after its state and the artifacts of the
// weights so far were saved. Unwrap gives context.Cause of the context.
type Interrupted struct {
	Cause      error
	RunID      string
	Step       int
	Iterations int
	Checkpoint string // the state file to resume from
}

func (e *Interrupted) Error() string {
	return fmt.Sprintf("interrupted by %v at step %d/%d of run %s; state saved to %s", e.Cause, e.Step, e.Iterations, e.RunID, e.Checkpoint)
}

func (e *Interrupted) Unwrap() error { return e.Cause }

// Run trains as train_gpt_mlx.py's main() does, on b, writing the log and
// artifacts under cfg.OutDir. Inputs are checked before anything is
// written; the artifacts are published together (see publish.go). The
// training state is saved as cfg.Checkpoint says and when ctx is cancelled
// (the run then returns *Interrupted); cfg.Checkpoint.Resume continues a
// saved run. console receives the log lines (nil: file only).
func Run(ctx context.Context, cfg Config, b backend.Backend, console io.Writer) (*Result, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Checkpoint.validate(); err != nil {
		return nil, err
	}
	if cfg.Overwrite && cfg.Checkpoint.Resume != "" {
		return nil, errors.New("--overwrite (OVERWRITE) starts RUN_ID over and --resume (RESUME) continues it: give one of them")
	}
	par := parallelOf(ctx)
	if err := par.check(cfg); err != nil {
		return nil, err
	}
	// Only rank 0 takes the run's lock and writes its files; the other
	// ranks of a data-parallel run read the same inputs and checkpoint.
	leader := par.leader()
	resumePath := ""
	if cfg.Checkpoint.Resume != "" {
		var err error
		if resumePath, err = findResume(cfg); err != nil {
			return nil, err
		}
		if cfg.RunID == "" {
			cfg.RunID = filepath.Base(filepath.Dir(resumePath))
		}
	}
	if cfg.RunID == "" {
		cfg.RunID = newUUID()
	} else if resumePath == "" && leader {
		if err := checkFreshRun(cfg); err != nil {
			return nil, err
		}
	}
	// A resume takes the run's lock at once (its OUT_DIR exists): the run
	// may still be training, and its checkpoints change under it. The
	// newest checkpoint is looked up again under the lock.
	locked := HoldsLock(ctx, cfg.OutDir, cfg.RunID) || !leader
	if resumePath != "" && !locked {
		lock, err := runlock.Acquire(cfg.OutDir, cfg.RunID)
		if err != nil {
			return nil, err
		}
		defer lock.Release()
		locked = true
		if resumePath, err = findResume(cfg); err != nil {
			return nil, err
		}
	}
	r := &runner{cfg: cfg, b: b, start: start, stopAfter: -1, phase: phaseSetup, console: console, par: par}
	stopNotice := context.AfterFunc(ctx, func() { r.announceStop(ctx) })
	defer func() {
		stopNotice()
		r.pmu.Lock()
		r.ended = true
		r.pmu.Unlock()
	}()
	if err := CheckBackend(cfg, b); err != nil {
		return nil, err
	}
	if _, err := CheckMemory(cfg, b); err != nil {
		return nil, err
	}
	in, err := prepareInputs(ctx, &cfg, console)
	if err != nil {
		return nil, err
	}
	var saved *trainstate.State
	var meta *stateMeta
	if resumePath != "" {
		if saved, meta, err = loadResume(resumePath, cfg, in); err != nil {
			return nil, err
		}
		if meta.RunID != cfg.RunID {
			return nil, fmt.Errorf("RESUME: %s belongs to RUN_ID=%s, not RUN_ID=%s", resumePath, meta.RunID, cfg.RunID)
		}
		if saved, now := max(meta.WorldSize, 1), par.size(); saved != now {
			return nil, fmt.Errorf("RESUME: %s was saved by a run of WORLD_SIZE=%d; this one has WORLD_SIZE=%d: continue it with %d ranks (the order of the gradients' sums depends on it)",
				resumePath, saved, now, saved)
		}
	}
	if !leader {
		return r.follow(ctx, cfg, in, saved, meta, resumePath)
	}
	// One writer per run: from here on this process writes OUT_DIR/RUN_ID's
	// files, under its lock (the inputs above are only read). Whether a
	// fresh run may start is decided again under the lock, as another
	// process may have finished it meanwhile.
	if !locked {
		lock, err := runlock.Acquire(cfg.OutDir, cfg.RunID)
		if err != nil {
			return nil, err
		}
		defer lock.Release()
		if err := checkFreshRun(cfg); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("OUT_DIR %s: %w", cfg.OutDir, err)
	}
	notes, err := recoverPublish(cfg.OutDir, cfg.RunID)
	if err != nil {
		return nil, err
	}
	var removed []string
	if cfg.Overwrite {
		if removed, err = removeRunFiles(cfg.OutDir, cfg.RunID); err != nil {
			return nil, err
		}
	}
	res := &Result{RunID: cfg.RunID, Embedded: in.embedded, LogPath: logPath(cfg.OutDir, cfg.RunID),
		MetricsPath: metricsPath(cfg.OutDir, cfg.RunID), Iterations: cfg.Iterations}
	lg, err := newLogger(res.LogPath, console, cfg.Overwrite)
	if err != nil {
		return nil, fmt.Errorf("OUT_DIR %s: %w", cfg.OutDir, err)
	}
	defer lg.Close()
	if console != nil {
		fmt.Fprintln(console, res.LogPath)
	}
	for _, n := range notes {
		lg.Logf("recovered: %s", n)
	}
	if cfg.Overwrite {
		what := "nothing to replace"
		if len(removed) > 0 {
			what = "removed " + strings.Join(removed, ", ")
		}
		lg.Logf("overwrite: a fresh log and metrics file for RUN_ID=%s (%s)", cfg.RunID, what)
	}
	r.pmu.Lock()
	r.cfg, r.in, r.lg, r.res = cfg, in, lg, res
	r.pmu.Unlock()
	if meta != nil {
		r.resumed, r.resumePath, r.meta = saved, resumePath, meta
	}
	err = r.run(r.runContext(ctx))
	res.WallMs, res.TrainTimeMs = r.wallMs(), r.trainTimeMs
	if cerr := r.metrics.close(); cerr != nil && err == nil {
		err = fmt.Errorf("metrics file: %w", cerr)
	}
	if err != nil {
		// The command prints the error (once); the log keeps it for golf report.
		lg.File(fmt.Sprintf("error: %v", err))
		return res, err
	}
	if console != nil {
		lg.Console(r.summary())
	}
	return res, nil
}

// heldLocks is the context key of the run locks a caller holds.
type heldLocks struct{}

// WithHeldLocks returns ctx saying that the caller holds the run locks
// (runlock) of runIDs in outDir, so that Run does not take them again: a
// --seeds series locks every seed's run before the first starts.
func WithHeldLocks(ctx context.Context, outDir string, runIDs ...string) context.Context {
	held := map[string]bool{}
	if prev, ok := ctx.Value(heldLocks{}).(map[string]bool); ok {
		for k := range prev {
			held[k] = true
		}
	}
	for _, id := range runIDs {
		held[filepath.Join(filepath.Clean(outDir), id)] = true
	}
	return context.WithValue(ctx, heldLocks{}, held)
}

// HoldsLock reports whether ctx says the caller holds runID's lock in
// outDir (WithHeldLocks).
func HoldsLock(ctx context.Context, outDir, runID string) bool {
	held, _ := ctx.Value(heldLocks{}).(map[string]bool)
	return held[filepath.Join(filepath.Clean(outDir), runID)]
}

// checkFreshRun refuses, before any work, a fresh run whose RUN_ID has
// unfinished training state in OUT_DIR (it is continued with --resume), or
// an earlier run's score line or artifacts (unless cfg.Overwrite): a second
// run would append to the first one's log and replace its artifacts.
func checkFreshRun(cfg Config) error {
	dir := trainstate.Dir(cfg.OutDir, cfg.RunID)
	if cps, err := trainstate.List(dir); err == nil && len(cps) > 0 {
		return fmt.Errorf("RUN_ID=%s has unfinished training state in %s (step %d): continue it with --resume latest, or remove that directory to start over",
			cfg.RunID, dir, cps[len(cps)-1].Step)
	}
	if cfg.Overwrite {
		return nil
	}
	log := logPath(cfg.OutDir, cfg.RunID)
	if score, err := scoreLine(log); err != nil {
		return fmt.Errorf("RUN_ID=%s: reading %s: %w", cfg.RunID, log, err)
	} else if score != "" {
		return fmt.Errorf("RUN_ID=%s already has a finished run in %s (%s: %s): give another RUN_ID, or --overwrite to replace its log and artifacts",
			cfg.RunID, cfg.OutDir, filepath.Base(log), score)
	}
	var found []string
	for _, s := range artifactSuffixes {
		if _, err := os.Stat(filepath.Join(cfg.OutDir, cfg.RunID+s)); err == nil {
			found = append(found, cfg.RunID+s)
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("RUN_ID=%s already has artifacts of an earlier run in %s (%s): give another RUN_ID, or --overwrite to replace them",
			cfg.RunID, cfg.OutDir, strings.Join(found, ", "))
	}
	return nil
}

// artifactSuffixes name a run's published artifacts after its RUN_ID.
var artifactSuffixes = []string{"_model.npz", "_model.int8.ptz", "_model.summary.json", "_loss.png"}

// scoreLine is the last final_int8_zlib_roundtrip_exact line of the log at
// path ("" when the log or the line does not exist).
func scoreLine(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	last := ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "final_int8_zlib_roundtrip_exact ") {
			last = strings.TrimSpace(line)
		}
	}
	return last, nil
}

// removeRunFiles removes the artifacts and the metrics file of an earlier
// run of runID (--overwrite), so that a new run that fails does not leave
// them beside its own log.
func removeRunFiles(outDir, runID string) ([]string, error) {
	var removed []string
	for _, s := range append(append([]string{}, artifactSuffixes...), ".metrics.jsonl") {
		p := filepath.Join(outDir, runID+s)
		err := os.Remove(p)
		switch {
		case err == nil:
			removed = append(removed, p)
		case !errors.Is(err, os.ErrNotExist):
			return removed, fmt.Errorf("--overwrite: %w", err)
		}
	}
	return removed, nil
}

// prepareInputs resolves the data paths (falling back to the embedded data
// set, extracted into the user cache directory) and checks the tokenizer,
// the manifest, and every shard of both splits (header, size, every token
// id < VOCAB_SIZE) before any work; console shows a progress bar when it is
// a terminal.
func prepareInputs(ctx context.Context, cfg *Config, console io.Writer) (*inputs, error) {
	in := &inputs{dataPath: cfg.DataPath, tokenizerPath: cfg.TokenizerPath}
	if !cfg.DataPathSet && !cfg.TokenizerPathSet {
		if _, err := os.Stat(cfg.DataPath); errors.Is(err, os.ErrNotExist) {
			dp, tp, err := data.ExtractEmbedded("")
			if err != nil {
				return nil, err
			}
			in.dataPath, in.tokenizerPath, in.embedded = dp, tp, true
			cfg.DataPath, cfg.TokenizerPath = dp, tp
		}
	}
	tok, err := data.LoadSentencePiece(in.tokenizerPath)
	if err != nil {
		return nil, fmt.Errorf("TOKENIZER_PATH: %w", err)
	}
	if tok.VocabSize() != cfg.Model.VocabSize {
		return nil, fmt.Errorf("VOCAB_SIZE=%d does not match tokenizer vocab_size=%d (%s)",
			cfg.Model.VocabSize, tok.VocabSize(), in.tokenizerPath)
	}
	if in.tokenizerDigest, err = fileDigest(in.tokenizerPath); err != nil {
		return nil, fmt.Errorf("TOKENIZER_PATH: %w", err)
	}
	in.datasetName, in.actualTrain, in.expected, err = data.ValidateDatasetTokenizerPair(in.dataPath, in.tokenizerPath)
	if err != nil {
		return nil, err
	}
	var stderr io.Writer
	if console != nil {
		stderr = os.Stderr
	}
	progress, stop := data.TerminalProgress(stderr, "checking shards")
	sets, err := data.ValidateShardSets(ctx, []string{trainPattern(in.dataPath), valPattern(in.dataPath)},
		cfg.Model.VocabSize, data.ValidateOptions{Progress: progress})
	stop()
	if err != nil {
		return nil, err
	}
	in.dataDigest = sets[0].Fingerprint()
	in.valTokens, err = data.LoadValidationTokens(valPattern(in.dataPath), cfg.TrainSeqLen)
	if err != nil {
		return nil, err
	}
	in.luts = data.NewByteLUTs(tok, cfg.Model.VocabSize)
	return in, nil
}

func trainPattern(dataPath string) string { return filepath.Join(dataPath, "fineweb_train_*.bin") }
func valPattern(dataPath string) string   { return filepath.Join(dataPath, "fineweb_val_*.bin") }

// runner is one run of the training program: its inputs, model, optimizer
// and clocks.
type runner struct {
	cfg     Config
	b       backend.Backend
	in      *inputs
	lg      *Logger
	res     *Result
	start   time.Time
	console io.Writer

	// resumed is the state the run continues from (nil for a fresh run).
	resumed    *trainstate.State
	resumePath string
	meta       *stateMeta

	st     *stepper
	loader *data.TokenLoader

	// par is the run's place among data-parallel ranks (nil: one device);
	// signalled is the context of the signals this process receives, which
	// stop a data-parallel run only once the ranks agree (runContext).
	par       *Parallel
	signalled context.Context
	stopRun   context.CancelCauseFunc

	step        int     // optimizer steps done
	trainTimeMs float64 // training time so far, validation and checkpoints excluded
	wallMsPrior float64 // wall time of the run before this process (resume)
	stopAfter   int     // -1, or the step at which the wall-clock cap stops training

	lastSaved     int // step of the newest checkpoint written or resumed from (-1: none)
	lastSavedPath string
	lastSaveTime  time.Time

	t0         time.Time     // start of the training time not yet added to trainTimeMs
	pending    []pendingStep // steps whose losses are still on the device
	flushTime  time.Time     // when the losses were last read (the start of tok_s's window)
	flushStep  int           // r.step then
	lastRead   time.Time     // when the losses were last read, for the status line too
	lastFinite Point         // the last step with a finite train loss
	nonFinite  int           // consecutive non-finite train losses (skipped by the dynamic scaler)
	lastLoss   float64       // the latest train loss read (NaN: none)

	// This process's share of the training, for the status line's rate
	// and ETA: the step and training time at which its loop started.
	loopStep   int
	loopTimeMs float64

	// The metrics file: every record of the run (steps ≤ r.step), the
	// number written to the file, and the last step whose validation was
	// decided (its record is final). A record is written once it is read
	// and decided.
	metrics *metricsFile
	records []metricRecord
	written int
	decided int

	// What the run is doing, for the notice of a signal (announceStop,
	// another goroutine); under pmu.
	pmu       sync.Mutex
	phase     runPhase
	phaseStep int       // the step under way (phaseTrain), else the steps done
	avgStepMs float64   // this process's mean step time when the step began (<= 0: none yet)
	stepStart time.Time // when the step under way began
	ended     bool      // Run returned: no notice
}

// runPhase is what a run is doing when a signal comes.
type runPhase int

const (
	phaseSetup      runPhase = iota // checking inputs, building the model, warm-up
	phaseTrain                      // an optimizer step
	phaseValidate                   // a validation
	phaseCheckpoint                 // saving the training state
	phaseFinal                      // the final artifacts and round-trip evaluation
)

// setPhase records what the run does now, at r.step steps done.
func (r *runner) setPhase(p runPhase) {
	r.pmu.Lock()
	r.phase, r.phaseStep = p, r.step
	r.pmu.Unlock()
}

// startStep records that step r.step+1 begins.
func (r *runner) startStep() {
	avg := -1.0
	if done := r.step - r.loopStep; done > 0 {
		avg = (r.trainTimeMs + msSince(r.t0) - r.loopTimeMs) / float64(done)
	}
	r.pmu.Lock()
	r.phase, r.phaseStep, r.avgStepMs, r.stepStart = phaseTrain, r.step+1, avg, time.Now()
	r.pmu.Unlock()
}

// announceStop prints, as soon as ctx is cancelled (the first signal),
// what the run does before it stops and how long that takes: the step
// under way finishes (its expected time left from this process's mean
// step time), then the state and artifacts are saved.
func (r *runner) announceStop(ctx context.Context) {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	if r.ended {
		return
	}
	again := "Ctrl-C again"
	if c := context.Cause(ctx); c != nil && !strings.Contains(c.Error(), "SIGINT") {
		again = "a second signal"
	}
	var msg string
	switch n := r.phaseStep; r.phase {
	case phaseTrain:
		if r.avgStepMs > 0 {
			left := max(r.avgStepMs-msSince(r.stepStart), 0) / 1000
			msg = fmt.Sprintf("stopping after step %d (about %s s); %s to stop now without saving this step", n, fmtSeconds(left), again)
		} else {
			msg = fmt.Sprintf("stopping after step %d (its time is not known yet: it is this process's first); %s to stop now without saving this step", n, again)
		}
	case phaseValidate:
		msg = fmt.Sprintf("stopping: the validation at step %d is dropped (it is redone on resume); %s to stop now without saving", n, again)
	case phaseCheckpoint:
		msg = fmt.Sprintf("stopping once the checkpoint of step %d is written; %s to stop now (the previous checkpoint stays)", n, again)
	case phaseFinal:
		msg = fmt.Sprintf("stopping: the final round-trip evaluation is dropped; saving the state and artifacts of step %d; %s to stop now without saving", n, again)
	default:
		msg = fmt.Sprintf("stopping before training; %s to stop now", again)
	}
	if r.lg != nil {
		r.lg.StopBar() // a second signal's message would land on the status line
		r.lg.Console(msg)
	} else if r.console != nil {
		fmt.Fprintln(r.console, msg)
	}
}

// fmtSeconds writes a duration in seconds: one decimal under ten.
func fmtSeconds(s float64) string {
	if s < 10 {
		return strconv.FormatFloat(s, 'f', 1, 64)
	}
	return strconv.FormatFloat(s, 'f', 0, 64)
}

// wallMs is the wall time of the run so far, across resumes.
func (r *runner) wallMs() float64 { return r.wallMsPrior + msSince(r.start) }

func (r *runner) run(ctx context.Context) error {
	cfg, b, lg, in := r.cfg, r.b, r.lg, r.in
	if r.meta == nil {
		lg.File("configuration:\n" + configDump(cfg))
	} else {
		changes := configChanges(r.meta.Config, cfg)
		if len(changes) == 0 {
			lg.File("configuration: resumed, as the checkpoint's (" + r.resumePath + ")")
		} else {
			lg.File("configuration: resumed; changed since the checkpoint (" + r.resumePath + "):\n  " + strings.Join(changes, "\n  "))
		}
	}
	lg.File(strings.Repeat("=", 100))
	lg.File(fmt.Sprintf("Running Go %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH))
	lg.File(strings.Repeat("=", 100))
	if in.embedded {
		lg.Logf("data:embedded DATA_PATH unset and %s absent: training on the embedded %s dataset (%s)",
			Defaults().DataPath, data.EmbeddedDataset, in.dataPath)
	}

	if model.ComputeDType != cfg.DType { // written only when it changes: ranks of one process share it
		model.ComputeDType = cfg.DType
	}
	mem := startPeakMemory(b)
	m, err := model.New(b, cfg.Model, uint64(cfg.Seed))
	if err != nil {
		return err
	}
	defer m.Free() // a GPU backend keeps nothing of the run (golf train --seeds runs several)
	opt, err := optim.NewSplit(b, m.Params(), cfg.Optim)
	if err != nil {
		return err
	}
	defer opt.Free()
	if r.par != nil {
		opt.Muon.Share(r.par.Rank, r.par.Size, r.par.Reduce.AllReduceSum)
	}
	scaler, err := optim.ScalerFor(b, cfg.DType, cfg.LossScale)
	if err != nil {
		return err
	}
	defer scaler.Free()
	if r.loader, err = data.NewTokenLoader(trainPattern(in.dataPath), lg.Log, in.datasetName); err != nil {
		return err
	}
	r.st = &stepper{cfg: cfg, b: b, m: m, opt: opt, scaler: scaler, lg: lg, par: r.par,
		losses: b.New(backend.F32, lossRingSteps(cfg), 2)}
	defer r.st.free()
	r.lastSaved, r.decided, r.lastLoss = -1, -1, math.NaN()
	if r.resumed != nil {
		if err := r.restore(m, opt, scaler); err != nil {
			return err
		}
	}
	if err := r.openMetrics(); err != nil {
		return err
	}

	logHeader(cfg, b, in, m, opt, scaler, lg)
	if r.par != nil { // train_gpt.py's line: the rank's share of the microbatches
		lg.Logf("world_size:%d grad_accum_steps:%d", r.par.Size, cfg.GradAccumSteps/r.par.Size)
	}
	if r.resumed != nil {
		lg.Logf("resumed_from:%s step:%d/%d train_time:%.0fms", r.resumePath, r.step, cfg.Iterations, r.trainTimeMs)
		r.resumed = nil // the tensors are on the backend now
	}
	if err := r.warmup(ctx); err != nil {
		return r.interruptedOr(ctx, err)
	}
	if err := r.loop(ctx); err != nil {
		return r.interruptedOr(ctx, err)
	}
	if line := mem.line(); line != "" { // train_gpt.py's line; no `Code size:` (see peakmem.go)
		lg.Log(line)
	}
	r.setPhase(phaseFinal)
	if err := r.finish(ctx); err != nil {
		return r.interruptedOr(ctx, err)
	}
	r.dropCheckpoints()
	return nil
}

// openMetrics starts the metrics file: empty for a fresh run; for a
// resumed one, the records of the checkpoint before its step (the step's
// own record waits for the validation decided again at that step), so
// that whatever the file held after the checkpoint (a killed process's
// later steps) is dropped and no step is written twice or lost.
func (r *runner) openMetrics() error {
	keep := 0
	for keep < len(r.records) && r.records[keep].Step < r.step {
		keep++
	}
	if !r.par.leader() {
		r.written, r.decided = keep, r.step-1
		return nil
	}
	mf, err := openMetrics(metricsPath(r.cfg.OutDir, r.cfg.RunID), r.records[:keep])
	if err != nil {
		return err
	}
	r.metrics, r.written, r.decided = mf, keep, r.step-1
	return nil
}

// writeMetrics appends the records that are read and decided.
func (r *runner) writeMetrics() error {
	n := r.written
	for n < len(r.records) && r.records[n].Step <= r.decided {
		n++
	}
	if err := r.metrics.write(r.records[r.written:n]); err != nil {
		return err
	}
	r.written = n
	return nil
}

// decide makes the record of step final: with its validation when valLoss
// is set (a step validated before its train loss was read, step 0, gets a
// record of its own), then writes what is decided.
func (r *runner) decide(step int, validated bool, valLoss, valBPB float64) error {
	if validated {
		if n := len(r.records); n > r.written && r.records[n-1].Step == step {
			rec := &r.records[n-1]
			rec.HasVal, rec.ValLoss, rec.ValBPB = true, valLoss, valBPB
		} else {
			r.records = append(r.records, metricRecord{Step: step, HasVal: true, ValLoss: valLoss, ValBPB: valBPB})
		}
	}
	r.decided = step
	return r.writeMetrics()
}

// restore loads the resumed state into the model, optimizer, scaler, loader
// and clocks.
func (r *runner) restore(m *model.Model, opt *optim.Split, scaler *optim.GradScaler) error {
	meta := r.meta
	if err := restoreState(r.resumed, meta, m, opt, scaler, r.resumePath); err != nil {
		return err
	}
	if err := r.loader.Seek(meta.Loader); err != nil {
		return fmt.Errorf("RESUME: %s: %w", r.resumePath, err)
	}
	r.step, r.trainTimeMs, r.wallMsPrior, r.stopAfter = meta.Step, meta.TrainTimeMs, meta.WallMs, meta.StopAfter
	r.st.skipped, r.st.trainPts, r.st.valPts = meta.Skipped, meta.TrainPoints, meta.ValPoints
	r.res.ValLoss, r.res.ValBPB = meta.ValLoss, meta.ValBPB
	r.lastSaved, r.lastSavedPath, r.lastSaveTime = meta.Step, r.resumePath, time.Now()
	r.records = meta.metricRecords()
	if n := len(meta.TrainPoints); n > 0 {
		r.lastLoss = meta.TrainPoints[n-1].Loss
	}
	return nil
}

// warmup runs WARMUP_STEPS forward/backward passes that update nothing,
// primes the evaluation path, then puts the data stream back where the run
// stands (the start, or the resumed position).
func (r *runner) warmup(ctx context.Context) error {
	cfg, lg := r.cfg, r.lg
	if cfg.WarmupSteps <= 0 {
		return nil
	}
	pos := r.loader.Position()
	for w := 0; w < cfg.WarmupSteps; w++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.st.lossAndGrad(r.loader, r.st.lossSlot(0)); err != nil {
			return err
		}
		if cfg.WarmupSteps <= 20 || (w+1)%10 == 0 || w+1 == cfg.WarmupSteps {
			lg.Logf("warmup_step:%d/%d", w+1, cfg.WarmupSteps)
		}
	}
	warmSeqs := min(cfg.ValBatchSize/cfg.GradAccumSteps/cfg.TrainSeqLen, (len(r.in.valTokens)-1)/cfg.TrainSeqLen)
	r.st.evalBatch(r.in.valTokens[:warmSeqs*cfg.TrainSeqLen+1])
	loader, err := data.NewTokenLoader(trainPattern(r.in.dataPath), lg.Log, r.in.datasetName)
	if err != nil {
		return err
	}
	if err := loader.Seek(pos); err != nil {
		return err
	}
	r.loader = loader
	return nil
}

// loop is the training loop of the reference: validation when due, then
// one optimizer step, until ITERATIONS or the wall-clock cap. Checkpoints
// are taken at the top of an iteration (r.step steps done, nothing of the
// next begun), the one point from which a resumed run continues exactly.
//
// A step does not wait for the device: its loss goes into a device
// accumulator, and the host reads the pending steps' losses with one wait
// when a step logs, before validation, a checkpoint or the end (flush).
// A step that logs nothing has no host wait, except what the fp16 loss
// scaler's skip decision or gradient clipping read.
func (r *runner) loop(ctx context.Context) error {
	cfg, lg, st := r.cfg, r.lg, r.st
	maxWallclockMs := 1000 * cfg.MaxWallclockSeconds
	if err := ctx.Err(); err != nil {
		return err // stopping: no status line (the notice is printed)
	}
	lg.StartBar(cfg.Iterations)
	defer lg.StopBar()
	r.t0 = time.Now()
	r.flushTime, r.flushStep, r.lastRead = r.t0, r.step, r.t0
	r.loopStep, r.loopTimeMs = r.step, r.trainTimeMs
	if r.lastSaveTime.IsZero() {
		r.lastSaveTime = r.t0
	}
	r.showProgress()
	for {
		save := false
		if r.par != nil {
			// Several ranks decide together (parallel.go).
			capped, agreedSave, err := r.agree(max(r.trainTimeMs+msSince(r.t0), r.wallMs()))
			if err != nil {
				return err
			}
			if capped && r.stopAfter < 0 && r.step > r.loopStep {
				r.stopAfter = r.step
			}
			save = agreedSave
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.par == nil {
			save = r.checkpointDue()
		}
		if save {
			if err := r.saveCheckpoint(); err != nil {
				return err
			}
		}
		step := r.step
		lastStep := step == cfg.Iterations || (r.stopAfter >= 0 && step >= r.stopAfter)
		if lastStep {
			lg.StopBar() // the final validation's lines come after the line is gone
		}
		if lastStep || (cfg.ValLossEvery > 0 && step%cfg.ValLossEvery == 0) {
			if err := r.flush(); err != nil {
				return err
			}
			r.trainTimeMs += msSince(r.t0)
			r.setPhase(phaseValidate)
			valLoss, valBPB, err := st.evalVal(ctx, r.in)
			if err != nil {
				return err
			}
			if !finite(valLoss) || !finite(valBPB) {
				return r.nonFiniteError(fmt.Sprintf("val_loss:%v val_bpb:%v at step %d", valLoss, valBPB, step))
			}
			if step%25 == 0 || lastStep {
				lg.Logf("step:%d/%d val_loss:%.4f val_bpb:%.4f train_time:%.0fms step_avg:%.2fms",
					step, cfg.Iterations, valLoss, valBPB, r.trainTimeMs, r.trainTimeMs/float64(max(step, 1)))
			}
			r.res.ValLoss, r.res.ValBPB = valLoss, valBPB
			st.valPts = append(st.valPts, Point{step, valLoss})
			if err := r.decide(step, true, valLoss, valBPB); err != nil {
				return err
			}
			r.t0 = time.Now()
			r.flushTime = r.t0
		} else if err := r.decide(step, false, 0, 0); err != nil {
			return err
		}
		if lastStep {
			if r.stopAfter >= 0 && step < cfg.Iterations {
				lg.Logf("stopping_early: wallclock_cap train_time:%.0fms step:%d/%d", r.trainTimeMs, step, cfg.Iterations)
				switch capMs := 1000 * cfg.MaxWallclockSeconds; {
				case r.par != nil && r.trainTimeMs < capMs && r.wallMs() < capMs:
					lg.Logf("wallclock_cap: reached by another rank's clock (this rank's train_time:%.0fms wall:%.0fms)", r.trainTimeMs, r.wallMs())
				case r.trainTimeMs < capMs:
					lg.Logf("wallclock_cap: reached by the run's wall time (%.0fms, start-up and validation included)", r.wallMs())
				}
			}
			return nil
		}
		r.startStep()
		approxMs := r.trainTimeMs + msSince(r.t0)
		lrMul := optim.LRMul(step, approxMs, cfg.Iterations, cfg.WarmdownIters, cfg.MaxWallclockSeconds)
		if err := st.lossAndGrad(r.loader, st.lossSlot(len(r.pending))); err != nil {
			return err
		}
		skipped := st.update(step, lrMul)
		if err := st.opt.Muon.ShareErr(); err != nil {
			return fmt.Errorf("step %d: all-reduce of the Muon updates: %w", step+1, err)
		}
		r.step++
		step = r.step
		logs := cfg.TrainLogEvery > 0 && (step <= 10 || step%cfg.TrainLogEvery == 0 || r.stopAfter >= 0)
		r.pending = append(r.pending, pendingStep{step: step, skipped: skipped, logs: logs, lrMul: lrMul, doneMs: r.trainTimeMs + msSince(r.t0)})
		switch {
		case logs || len(r.pending) == st.losses.Shape[0]:
			if err := r.flush(); err != nil {
				return err
			}
		case time.Since(r.lastRead) >= statusLossEvery && lg.BarShown():
			// The status line shows the latest loss: read it about once
			// a second (tok_s's window goes on).
			if err := r.readPending(false); err != nil {
				return err
			}
		}
		// The cap holds for training time (the reference's clock) and for
		// the wall time of the whole run, start-up and validation included.
		approxMs = r.trainTimeMs + msSince(r.t0)
		if r.par == nil && maxWallclockMs > 0 && r.stopAfter < 0 && (approxMs >= maxWallclockMs || r.wallMs() >= maxWallclockMs) {
			r.stopAfter = step
		}
		r.showProgress()
	}
}

// statusLossEvery is how often a run with a status line reads the losses
// of steps that log nothing.
const statusLossEvery = time.Second

// showProgress updates the status line: steps done, the latest loss, and
// this process's rate and the time left at it (the steps before a resume
// took another process's time, so they count in neither), bounded by the
// wall-clock cap.
func (r *runner) showProgress() {
	cfg := r.cfg
	p := Progress{Step: r.step, Total: cfg.Iterations, Loss: r.lastLoss, ETA: -1, At: time.Now()}
	procMs := r.trainTimeMs + msSince(r.t0) - r.loopTimeMs
	done := r.step - r.loopStep
	if done > 0 && procMs > 0 {
		p.TokS = float64(done*cfg.TrainBatchTokens) / (procMs / 1000)
	}
	if eta, ok := etaMs(r.step, cfg.Iterations, r.stopAfter, done, procMs, cfg.MaxWallclockSeconds, r.trainTimeMs+msSince(r.t0), r.wallMs()); ok {
		p.ETA = time.Duration(eta * float64(time.Millisecond))
	}
	r.lg.SetProgress(p)
}

// etaMs is the training time left: the steps left at this process's mean
// step time (procMs over procSteps), at most the wall-clock cap's time
// left; ok is false before this process finished a step.
func etaMs(step, iterations, stopAfter, procSteps int, procMs, capSeconds, trainMs, wallMs float64) (float64, bool) {
	if stopAfter >= 0 && step >= stopAfter {
		return 0, true
	}
	if procSteps <= 0 || procMs <= 0 {
		return 0, false
	}
	eta := float64(iterations-step) * procMs / float64(procSteps)
	if capSeconds > 0 {
		eta = min(eta, max(1000*capSeconds-max(trainMs, wallMs), 0))
	}
	return max(eta, 0), true
}

// lossRingSteps is how many steps' losses may wait on the device: up to
// the next logged step, and at most 1024 (a run that logs nothing still
// reads them every 1024 steps).
func lossRingSteps(cfg Config) int {
	if cfg.TrainLogEvery > 0 {
		return min(max(cfg.TrainLogEvery, 10), 1024)
	}
	return 1024
}

// pendingStep is a step whose train loss is still on the device.
type pendingStep struct {
	step    int
	skipped bool    // the dynamic loss scaler skipped it
	logs    bool    // it prints a train_loss line
	lrMul   float64 // the LR schedule's scale of the step
	doneMs  float64 // training time when the host had queued the step
}

// flush reads the losses of the pending steps (one host wait), records
// them, prints the lines of the steps that log, and stops a run whose loss
// is non-finite. tok_s is the rate since the previous flush.
func (r *runner) flush() error { return r.readPending(true) }

// readPending is flush; a read for the status line alone (!window) leaves
// tok_s's window open, so that the log's lines are those of a run without
// a status line.
func (r *runner) readPending(window bool) error {
	n := len(r.pending)
	if n == 0 {
		return nil
	}
	losses, err := r.st.readLosses(n)
	if err != nil {
		return fmt.Errorf("step %d: %w", r.pending[n-1].step, err)
	}
	now := time.Now()
	approxMs := r.trainTimeMs + now.Sub(r.t0).Seconds()*1000
	tokS := float64(r.cfg.TrainBatchTokens*(r.step-r.flushStep)) / now.Sub(r.flushTime).Seconds()
	if window {
		r.flushTime, r.flushStep = now, r.step
	}
	r.lastRead = now
	for i, p := range r.pending {
		loss := losses[i]
		if !finite(loss) {
			// The dynamic loss scaler skips a step whose gradients
			// overflowed and lowers the scale; a non-finite loss anywhere
			// else, or for many steps in a row, is divergence.
			r.nonFinite++
			if !p.skipped || r.nonFinite > maxNonFiniteSkips {
				r.pending = r.pending[:0]
				return r.nonFiniteError(fmt.Sprintf("train_loss:%v at step %d", loss, p.step))
			}
		} else {
			r.nonFinite = 0
			r.lastFinite = Point{p.step, loss}
		}
		r.lastLoss = loss
		r.st.trainPts = append(r.st.trainPts, Point{p.step, loss})
		r.records = append(r.records, metricRecord{Step: p.step, HasTrain: true, TrainLoss: loss, LRScale: p.lrMul,
			TokS: tokS, TrainTimeMs: p.doneMs, Skipped: p.skipped})
		if p.logs {
			r.lg.Logf("step:%d/%d train_loss:%.4f train_time:%.0fms step_avg:%.2fms tok_s:%.0f",
				p.step, r.cfg.Iterations, loss, approxMs, approxMs/float64(r.step), tokS)
		}
	}
	r.pending = r.pending[:0]
	return r.writeMetrics()
}

// maxNonFiniteSkips is how many consecutive steps with a non-finite loss
// the dynamic loss scaler may skip before the run is stopped: each halves
// the scale, so 2^16 has fallen below 2^-14 by then.
const maxNonFiniteSkips = 30

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// nonFiniteError stops a diverged run: nothing non-finite is saved, the
// last checkpoint (if any) stays.
func (r *runner) nonFiniteError(what string) error {
	msg := "non-finite " + what + "; training stopped, no artifacts written"
	if last := r.lastFinite; last.Step > 0 {
		msg += fmt.Sprintf("; last finite train_loss:%.4f at step %d", last.Loss, last.Step)
	}
	if r.lastSavedPath != "" {
		msg += fmt.Sprintf("; the last good state is %s (step %d): resume from it with a lower learning rate (MATRIX_LR, SCALAR_LR, TIED_EMBED_LR) or GRAD_CLIP_NORM", r.lastSavedPath, r.lastSaved)
	} else {
		msg += "; no checkpoint was saved (CHECKPOINT_EVERY, CHECKPOINT_EVERY_SECONDS)"
	}
	return errors.New(msg)
}

// checkpointDue says whether the state at r.step is to be saved now.
func (r *runner) checkpointDue() bool {
	c := r.cfg.Checkpoint
	if r.step == r.lastSaved || r.step == 0 {
		return false
	}
	return (c.Every > 0 && r.step%c.Every == 0) ||
		(c.EverySeconds > 0 && time.Since(r.lastSaveTime).Seconds() >= c.EverySeconds)
}

// saveCheckpoint writes the state at r.step (the top of an iteration) and
// prunes old checkpoints.
func (r *runner) saveCheckpoint() error {
	if err := r.flush(); err != nil {
		return err
	}
	if !r.t0.IsZero() {
		r.trainTimeMs += msSince(r.t0)
		defer func() { r.t0 = time.Now(); r.flushTime = r.t0 }()
	}
	r.setPhase(phaseCheckpoint)
	if !r.par.leader() {
		// Rank 0 writes the state every rank holds.
		r.lastSaved, r.lastSaveTime = r.step, time.Now()
		r.lastSavedPath = filepath.Join(trainstate.Dir(r.cfg.OutDir, r.cfg.RunID), trainstate.FileName(r.step))
		return nil
	}
	t0 := time.Now()
	st := r.st
	meta := &stateMeta{
		Format: stateFormat, RunID: r.cfg.RunID, Saved: time.Now().UTC().Format(time.RFC3339),
		Step: r.step, TrainTimeMs: r.trainTimeMs, WallMs: r.wallMs(), StopAfter: r.stopAfter, Skipped: st.skipped,
		Loader: r.loader.Position(), Adam: st.opt.Steps(), Scaler: st.scaler.State(),
		TrainPoints: st.trainPts, ValPoints: st.valPts, ValLoss: r.res.ValLoss, ValBPB: r.res.ValBPB,
		Metrics:  r.records,
		Identity: identityOf(r.cfg, r.in), Config: r.cfg, WorldSize: r.par.savedSize(),
	}
	s, err := captureState(st.m, st.opt, meta)
	if err != nil {
		return err
	}
	dir := trainstate.Dir(r.cfg.OutDir, r.cfg.RunID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	path := filepath.Join(dir, trainstate.FileName(r.step))
	if err := trainstate.Write(path, s); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := trainstate.Prune(dir, r.cfg.Checkpoint.Keep); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	r.lastSaved, r.lastSavedPath, r.lastSaveTime = r.step, path, time.Now()
	r.lg.Logf("checkpoint:%s step:%d/%d bytes:%d time:%.0fms", path, r.step, r.cfg.Iterations, fileSize(path), msSince(t0))
	return nil
}

// dropCheckpoints removes the state of a finished run: its artifacts are
// published and nothing is left to resume.
func (r *runner) dropCheckpoints() {
	dir := trainstate.Dir(r.cfg.OutDir, r.cfg.RunID)
	if err := os.RemoveAll(dir); err == nil {
		os.Remove(filepath.Dir(dir)) // the checkpoints folder, when no other run uses it
	}
}

// interruptedOr turns err into *Interrupted when the context was cancelled:
// the state at the current step boundary is saved (unless it already is)
// and the artifacts of the weights so far are published, without the
// round-trip evaluation.
func (r *runner) interruptedOr(ctx context.Context, err error) error {
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return err
	}
	r.lg.StopBar()
	if r.step != r.lastSaved {
		if serr := r.saveCheckpoint(); serr != nil {
			return fmt.Errorf("%w; saving the training state failed: %v", err, serr)
		}
	}
	// Every step read so far, the last without the validation that the
	// resumed run decides (it rewrites the file from the checkpoint).
	if werr := r.metrics.write(r.records[r.written:]); werr != nil {
		return fmt.Errorf("%w; %v", err, werr)
	}
	r.written = len(r.records)
	if !r.par.leader() {
		return &Interrupted{Cause: context.Cause(ctx), RunID: r.cfg.RunID, Step: r.step, Iterations: r.cfg.Iterations, Checkpoint: r.lastSavedPath}
	}
	if perr := r.publish(ctx, false); perr != nil {
		return fmt.Errorf("%w; writing the artifacts failed: %v", err, perr)
	}
	ie := &Interrupted{Cause: context.Cause(ctx), RunID: r.cfg.RunID, Step: r.step, Iterations: r.cfg.Iterations, Checkpoint: r.lastSavedPath}
	// For golf report; the command prints the error itself, once.
	r.lg.File(fmt.Sprintf("interrupted: %v at step:%d/%d state:%s", ie.Cause, r.step, r.cfg.Iterations, r.lastSavedPath))
	return ie
}

// finish publishes the final artifacts with the int8 round-trip evaluation.
func (r *runner) finish(ctx context.Context) error {
	r.res.Steps, r.res.TrainLosses = r.step, r.st.trainPts
	if !r.par.leader() {
		return nil
	}
	return r.publish(ctx, true)
}

// summary is the block that ends a finished run on the console: the
// score, the time, and every file the run wrote.
func (r *runner) summary() string {
	res, cfg := r.res, r.cfg
	dur := func(ms float64) string {
		if ms < 1000 {
			return fmt.Sprintf("%.0fms", ms)
		}
		return (time.Duration(ms * float64(time.Millisecond))).Round(100 * time.Millisecond).String()
	}
	var b strings.Builder
	steps := fmt.Sprintf("%d/%d steps", res.Steps, cfg.Iterations)
	if res.Steps < cfg.Iterations {
		steps += " (stopped by the wall-clock cap)"
	}
	fmt.Fprintf(&b, "run %s done: %s in %s (training %s)\n", cfg.RunID, steps, dur(res.WallMs), dur(res.TrainTimeMs))
	fmt.Fprintf(&b, "score: val_loss %.8f val_bpb %.8f (int8+zlib round trip; before it: val_loss %.8f val_bpb %.8f)\n",
		res.QValLoss, res.QValBPB, res.ValLoss, res.ValBPB)
	b.WriteString("files:")
	files := []struct{ path, what string }{
		{res.LogPath, "log"},
		{res.MetricsPath, "metrics, a JSON line per step"},
		{res.ModelPath, "fp32 weights (npz)"},
		{res.QuantPath, "int8+zlib artifact"},
		{res.SummaryPath, "tensor summary"},
		{res.PlotPath, "loss curve"},
	}
	w := 0
	for _, f := range files {
		w = max(w, len(f.path))
	}
	for _, f := range files {
		fmt.Fprintf(&b, "\n  %-*s  %s, %s", w, f.path, f.what, byteCount(fileSize(f.path)))
	}
	return b.String()
}

// byteCount writes a file size for people: 2332603 → "2.2 MiB".
func byteCount(n int64) string {
	switch {
	case n < 0:
		return "missing"
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func logHeader(cfg Config, b backend.Backend, in *inputs, m *model.Model, opt *optim.Split, scaler *optim.GradScaler, lg *Logger) {
	nParams := model.NumParams(cfg.Model)
	lg.Logf("run_id:%s", cfg.RunID)
	lg.Logf("backend:%s device:%s", b.Name(), b.Device())
	if cfg.BackendChoice != "" {
		lg.Logf("backend_choice:%s", cfg.BackendChoice)
	}
	lg.Logf("train_loader:shards pattern=%s", trainPattern(in.dataPath))
	lg.Logf("val_loader:shards pattern=%s tokens:%d", valPattern(in.dataPath), len(in.valTokens)-1)
	switch {
	case in.expected < 0:
		lg.Logf("train_loader:dataset:%s train_shards:%d", in.datasetName, in.actualTrain)
	case in.actualTrain < in.expected:
		lg.Logf("WARNING: train_loader:subset dataset:%s train_shards:%d/%d new epochs will arrive sooner than the full dataset",
			in.datasetName, in.actualTrain, in.expected)
	default:
		lg.Logf("train_loader:dataset:%s train_shards:%d/%d", in.datasetName, in.actualTrain, in.expected)
	}
	lg.Logf("tokenizer_path:%s", in.tokenizerPath)
	mc := cfg.Model
	lg.Logf("model_params:%d vocab_size:%d layers:%d dim:%d heads:%d kv_heads:%d seq_len:%d tie_embeddings:%s",
		nParams, mc.VocabSize, mc.NumLayers, mc.ModelDim, mc.NumHeads, mc.NumKVHeads, cfg.TrainSeqLen, pyBool(cfg.TieEmbeddings))
	lg.Logf("iterations:%d train_batch_tokens:%d grad_accum_steps:%d microbatch_tokens:%d microbatch_batch_size:%d val_batch_size:%d warmup_steps:%d max_wallclock_seconds:%.3f",
		cfg.Iterations, cfg.TrainBatchTokens, cfg.GradAccumSteps, cfg.MicrobatchTokens(), cfg.MicrobatchTokens()/cfg.TrainSeqLen,
		cfg.ValBatchSize, cfg.WarmupSteps, cfg.MaxWallclockSeconds)
	lg.Logf("max_microbatch_tokens:%d", cfg.MaxMicrobatchTokens)
	o := cfg.Optim
	lg.Logf("optimizer:muon+adam muon_matrix_params:%d scalar_params:%d embed_lr:%g matrix_lr:%g scalar_lr:%g muon_momentum:%g muon_steps:%d",
		len(opt.MatrixKeys()), len(opt.ScalarKeys()), o.TiedEmbedLR, o.MatrixLR, o.ScalarLR, o.MuonMomentum, o.MuonBackendSteps)
	lg.Logf("val_bpb:enabled tokenizer_kind=sentencepiece tokenizer_path=%s", in.tokenizerPath)
	scaling := "static"
	if scaler.Enabled {
		scaling = "dynamic"
	}
	lg.Logf("compute_dtype:%s loss_scale:%g loss_scaling:%s", m.DType.NumpyName(), scaler.Scale(), scaling)
	lg.Logf("dtypes tok_emb:float32 linear_weight:float32 skip_weights:float32 activations:%s", m.DType.NumpyName())
	lg.Logf("seed:%d", cfg.Seed)
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// newUUID is a random RFC 4122 version-4 UUID, like Python's uuid.uuid4().
func newUUID() string {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		panic(err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// publish writes the raw .npz, its summary, the int8+zlib container and
// the loss plot as one set (see publish.go). With roundTrip it first
// evaluates the dequantized weights (the reference's final line) and logs
// it; the model then holds the dequantized weights.
func (r *runner) publish(ctx context.Context, roundTrip bool) error {
	cfg, st, lg, res := r.cfg, r.st, r.lg, r.res
	tensors := modelTensors(st.m)
	for _, t := range tensors {
		for i, x := range t.Data {
			if !finite(float64(x)) {
				return fmt.Errorf("weight %s[%d] is %v: no artifacts written", t.Name, i, x)
			}
		}
	}
	pub, err := newPublisher(cfg.OutDir, cfg.RunID)
	if err != nil {
		return err
	}
	defer pub.abort()
	if err := artifact.SaveNPZ(pub.path("_model.npz"), tensors); err != nil {
		return err
	}
	res.ModelPath = pub.final("_model.npz")
	lg.Logf("saved_model:%s bytes:%d", res.ModelPath, fileSize(filepath.Join(pub.dir, cfg.RunID+"_model.npz")))
	if err := artifact.WriteSummary(pub.path("_model.summary.json"), tensors); err != nil {
		return err
	}
	res.SummaryPath = pub.final("_model.summary.json")

	q, stats := artifact.Quantize(tensors, cfg.Int8KeepFloatPatterns)
	qpath := pub.path("_model.int8.ptz")
	fileBytes, rawBytes, err := artifact.SaveQuantized(qpath, q)
	if err != nil {
		return err
	}
	res.QuantPath = pub.final("_model.int8.ptz")
	ratio := float64(stats.BaselineTensorBytes) / float64(max(stats.Int8PayloadBytes, 1))
	lg.Logf("serialized_model_int8_zlib:%d bytes (payload:%d raw_pickle:%d payload_ratio:%.2fx)",
		fileBytes, stats.Int8PayloadBytes, rawBytes, ratio)

	evalMs := 0.0
	if roundTrip {
		back, err := artifact.LoadQuantized(qpath, artifact.MaxBytes(ArtifactLimit(cfg.Model)))
		if err != nil {
			return err
		}
		if err := st.m.SetWeights(tensorMap(artifact.Dequantize(back))); err != nil {
			return fmt.Errorf("%s: %w", qpath, err)
		}
		qt0 := time.Now()
		// On rank 0 alone in a data-parallel run: the others have finished.
		res.QValLoss, res.QValBPB, err = EvalVal(ctx, cfg, st.m, r.in.valTokens, r.in.luts, lg.Log, st.tokens)
		evalMs = msSince(qt0)
		if err != nil {
			// Interrupted: the model must hold the masters again for the
			// checkpoint and the artifacts of the weights so far.
			if werr := st.m.SetWeights(tensorMap(tensors)); werr != nil {
				return fmt.Errorf("%w; restoring the weights: %v", err, werr)
			}
			return err
		}
		if !finite(res.QValLoss) || !finite(res.QValBPB) {
			return fmt.Errorf("non-finite int8 round-trip val_loss:%v val_bpb:%v: no artifacts written", res.QValLoss, res.QValBPB)
		}
	}
	if err := WriteLossPlot(pub.path("_loss.png"), "golf "+cfg.RunID, st.trainPts, st.valPts); err != nil {
		return err
	}
	res.PlotPath = pub.final("_loss.png")
	if err := pub.commit(); err != nil {
		return err
	}
	if roundTrip {
		lg.Logf("final_int8_zlib_roundtrip val_loss:%.4f val_bpb:%.4f eval_time:%.0fms", res.QValLoss, res.QValBPB, evalMs)
		lg.Logf("final_int8_zlib_roundtrip_exact val_loss:%.8f val_bpb:%.8f", res.QValLoss, res.QValBPB)
	}
	return nil
}

// modelTensors lists the master weights with their reference names.
func modelTensors(m *model.Model) []artifact.Tensor {
	w := m.Weights()
	var out []artifact.Tensor
	for _, p := range m.Params() {
		out = append(out, artifact.Tensor{
			Name: p.Name, Shape: append([]int(nil), p.W.Shape...), DType: backend.F32, Data: w[p.Name],
		})
	}
	return out
}

func tensorMap(ts []artifact.Tensor) map[string][]float32 {
	out := make(map[string][]float32, len(ts))
	for _, t := range ts {
		out[t.Name] = t.Data
	}
	return out
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return st.Size()
}

// workingSetter is a backend with a device memory budget.
type workingSetter interface{ RecommendedWorkingSet() uint64 }

// CheckBackend refuses, before any work, a backend that lacks an op in the
// compute dtype (e.g. bf16 on a GPU without bfloat) or whose device cannot
// hold the run's memory plan.
func CheckBackend(cfg Config, b backend.Backend) error {
	for _, op := range backend.Ops {
		dt := cfg.DType
		switch op {
		case backend.OpAdam, backend.OpMuon, backend.OpNewtonSchulz, backend.OpScale:
			dt = backend.F32
		}
		if !b.Supports(op, dt) {
			hint := ""
			if dt == backend.BF16 {
				hint = "; this device has no bfloat support: use --dtype fp16 or --dtype fp32"
			}
			return fmt.Errorf("--backend %s (%s) does not support %s in %s%s", b.Name(), b.Device(), op, dt, hint)
		}
	}
	ws, ok := b.(workingSetter)
	if !ok || ws.RecommendedWorkingSet() == 0 {
		return nil
	}
	plan, err := PlanMemory(cfg)
	if err != nil {
		return err
	}
	if uint64(plan.Peak) > ws.RecommendedWorkingSet() {
		return fmt.Errorf("the run needs %s at peak (parameters %s, gradients %s, optimizer %s, activations %s + validation %s) but %s recommends at most %s: lower MAX_MICROBATCH_TOKENS, VAL_BATCH_SIZE or the model size",
			mib(plan.Peak), mib(plan.Params), mib(plan.Grads), mib(plan.OptimizerState), mib(plan.TrainActivation),
			mib(plan.EvalActivation), b.Device(), mib(int64(ws.RecommendedWorkingSet())))
	}
	return nil
}

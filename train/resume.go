package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
	"github.com/golf-ml/golf/trainstate"
)

// CheckpointConfig says when a run saves its training state and where it
// resumes from.
type CheckpointConfig struct {
	Every        int     // CHECKPOINT_EVERY: save every N steps (0: off)
	EverySeconds float64 // CHECKPOINT_EVERY_SECONDS: save when this much wall time passed since the last save (0: off)
	Keep         int     // CHECKPOINT_KEEP: the newest K files are kept
	// Resume is RESUME: "" for a fresh run, "latest" for the newest
	// checkpoint of RUN_ID under OUT_DIR (of any run when RUN_ID is unset),
	// or the path of a state file.
	Resume string
}

// DefaultCheckpoint saves every five minutes of wall time and keeps two.
func DefaultCheckpoint() CheckpointConfig { return CheckpointConfig{EverySeconds: 300, Keep: 2} }

func (c CheckpointConfig) validate() error {
	switch {
	case c.Every < 0:
		return fmt.Errorf("CHECKPOINT_EVERY must be >= 0 (0: off), got %d", c.Every)
	case math.IsNaN(c.EverySeconds) || math.IsInf(c.EverySeconds, 0) || c.EverySeconds < 0:
		return fmt.Errorf("CHECKPOINT_EVERY_SECONDS must be a finite value >= 0 (0: off), got %g", c.EverySeconds)
	case c.Keep < 1:
		return fmt.Errorf("CHECKPOINT_KEEP must be >= 1, got %d", c.Keep)
	}
	return nil
}

// stateFormat names what a state file's meta describes.
const stateFormat = "golf-train/1"

// stateMeta is the JSON part of a checkpoint: everything except the tensors.
type stateMeta struct {
	Format string `json:"format"`
	RunID  string `json:"run_id"`
	Saved  string `json:"saved"` // RFC 3339, for people

	Step        int     `json:"step"`          // optimizer steps done
	TrainTimeMs float64 `json:"train_time_ms"` // training time, validation excluded (the schedule's clock)
	WallMs      float64 `json:"wall_ms"`       // wall time of the run so far, everything included
	StopAfter   int     `json:"stop_after"`    // -1, or the step the wall-clock cap stops at
	Skipped     int     `json:"skipped"`       // steps skipped by the loss scaler

	Loader data.StreamPosition `json:"loader"`
	Adam   optim.SplitSteps    `json:"adam_steps"`
	Scaler optim.ScalerState   `json:"loss_scaler"`

	TrainPoints []Point `json:"train_points"`
	ValPoints   []Point `json:"val_points"`
	ValLoss     float64 `json:"val_loss"`
	ValBPB      float64 `json:"val_bpb"`

	// Metrics are the metrics file's records of the steps done (the
	// record of Step itself without the validation at Step, which the
	// resumed run does); a resumed run rewrites the file from them.
	Metrics []metricRecord `json:"metrics,omitempty"`

	Identity runIdentity `json:"identity"`
	Config   Config      `json:"config"`
	// WorldSize is the number of data-parallel ranks that trained it
	// (absent: one).
	WorldSize int `json:"world_size,omitempty"`
}

// runIdentity is what a resumed run must share with the run that saved
// the state: the model, precision, batch geometry, optimizer and data.
// Anything else (iterations, logging, validation, the wall-clock cap, the
// backend, paths) may change on resume.
type runIdentity struct {
	Model            model.Config `json:"model"`
	DType            string       `json:"dtype"`
	LossScale        float64      `json:"loss_scale"`
	Seed             int          `json:"seed"`
	TrainSeqLen      int          `json:"train_seq_len"`
	TrainBatchTokens int          `json:"train_batch_tokens"`
	GradAccumSteps   int          `json:"grad_accum_steps"`
	WarmdownIters    int          `json:"warmdown_iters"`
	Optim            optim.Hyper  `json:"optim"`
	Data             string       `json:"data"`      // digest of the training shards (names, sizes, content digests)
	Tokenizer        string       `json:"tokenizer"` // sha256 of the tokenizer file
}

func identityOf(cfg Config, in *inputs) runIdentity {
	return runIdentity{
		Model: cfg.Model, DType: cfg.DType.String(), LossScale: cfg.LossScale, Seed: cfg.Seed,
		TrainSeqLen: cfg.TrainSeqLen, TrainBatchTokens: cfg.TrainBatchTokens, GradAccumSteps: cfg.GradAccumSteps,
		WarmdownIters: cfg.WarmdownIters, Optim: cfg.Optim, Data: in.dataDigest, Tokenizer: in.tokenizerDigest,
	}
}

// diffIdentity lists the fields (as "name: saved → now") where two
// identities differ, by their JSON names.
func diffIdentity(saved, now runIdentity) []string {
	flat := func(v runIdentity) map[string]string { return FlatJSON(v) }
	a, b := flat(saved), flat(now)
	var diffs []string
	for k, av := range a {
		if bv := b[k]; av != bv {
			diffs = append(diffs, fmt.Sprintf("%s: %s in the checkpoint, %s now", k, av, bv))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// fileDigest is the hex sha256 of a file's bytes.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// findResume resolves CheckpointConfig.Resume to a state file: a path, or
// "latest" — the newest checkpoint of RUN_ID, or when RUN_ID is unset the
// most recently written checkpoint of any run under OUT_DIR.
func findResume(cfg Config) (string, error) {
	r := cfg.Checkpoint.Resume
	if r != "latest" {
		if _, err := os.Stat(r); err != nil {
			return "", fmt.Errorf("RESUME: %w", err)
		}
		return r, nil
	}
	if cfg.RunID != "" {
		cps, err := trainstate.List(trainstate.Dir(cfg.OutDir, cfg.RunID))
		if err != nil {
			return "", fmt.Errorf("RESUME=latest: %w", err)
		}
		if len(cps) == 0 {
			return "", fmt.Errorf("RESUME=latest: no checkpoint of RUN_ID=%s in %s", cfg.RunID, trainstate.Dir(cfg.OutDir, cfg.RunID))
		}
		return cps[len(cps)-1].Path, nil
	}
	root := filepath.Join(cfg.OutDir, "checkpoints")
	runs, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("RESUME=latest: %w", err)
	}
	best, bestTime := "", time.Time{}
	for _, r := range runs {
		if !r.IsDir() {
			continue
		}
		cps, err := trainstate.List(filepath.Join(root, r.Name()))
		if err != nil || len(cps) == 0 {
			continue
		}
		p := cps[len(cps)-1].Path
		if st, err := os.Stat(p); err == nil && st.ModTime().After(bestTime) {
			best, bestTime = p, st.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("RESUME=latest: no checkpoint under %s", root)
	}
	return best, nil
}

// loadResume reads and checks the state file at path against the run about
// to start: the format, and the run identity (model shape, dtype, batch,
// optimizer, data and tokenizer), listing every differing field.
func loadResume(path string, cfg Config, in *inputs) (*trainstate.State, *stateMeta, error) {
	st, err := trainstate.Read(path)
	if err != nil {
		return nil, nil, fmt.Errorf("RESUME: %w", err)
	}
	var meta stateMeta
	dec := json.NewDecoder(strings.NewReader(string(st.Meta)))
	if err := dec.Decode(&meta); err != nil || meta.Format != stateFormat {
		return nil, nil, fmt.Errorf("RESUME: %s: not a golf training state (format %q): %v", path, meta.Format, err)
	}
	if diffs := diffIdentity(meta.Identity, identityOf(cfg, in)); len(diffs) > 0 {
		return nil, nil, fmt.Errorf("RESUME: %s was saved by a different run; it differs in:\n  %s", path, strings.Join(diffs, "\n  "))
	}
	if meta.Step < 0 || meta.Step > cfg.Iterations {
		return nil, nil, fmt.Errorf("RESUME: %s is at step %d, past ITERATIONS=%d", path, meta.Step, cfg.Iterations)
	}
	return st, &meta, nil
}

// metricRecords are the records the run had at the checkpoint; for a
// state saved before checkpoints held them, the train and validation
// losses it has (without the LR scale, tokens/s, times and val_bpb).
func (m *stateMeta) metricRecords() []metricRecord {
	if m.Metrics != nil {
		return append([]metricRecord(nil), m.Metrics...)
	}
	nan := math.NaN()
	var out []metricRecord
	vals := map[int]float64{}
	for _, p := range m.ValPoints {
		vals[p.Step] = p.Loss
	}
	if v, ok := vals[0]; ok {
		out = append(out, metricRecord{Step: 0, HasVal: true, ValLoss: v, ValBPB: nan})
	}
	for _, p := range m.TrainPoints {
		r := metricRecord{Step: p.Step, HasTrain: true, TrainLoss: p.Loss, LRScale: nan, TokS: nan, TrainTimeMs: nan}
		if v, ok := vals[p.Step]; ok && p.Step < m.Step {
			r.HasVal, r.ValLoss, r.ValBPB = true, v, nan
		}
		out = append(out, r)
	}
	return out
}

// stateTensors names every tensor a checkpoint holds: the fp32 master
// weights as "model/<name>" and the optimizer state (see
// optim.Split.StateTensors) as "optim/<name>".
func stateTensorNames(m *model.Model, opt *optim.Split) []string {
	var names []string
	for _, p := range m.Params() {
		names = append(names, "model/"+p.Name)
	}
	for _, t := range opt.StateTensors() {
		names = append(names, "optim/"+t.Name)
	}
	return names
}

// captureState downloads the weights and optimizer state (a sync) into a
// trainstate.State with meta.
func captureState(m *model.Model, opt *optim.Split, meta *stateMeta) (*trainstate.State, error) {
	js, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("checkpoint meta: %w", err)
	}
	s := &trainstate.State{Meta: js}
	b := m.B
	for _, p := range m.Params() {
		s.Tensors = append(s.Tensors, trainstate.Tensor{Name: "model/" + p.Name, Shape: p.W.Shape, Data: b.Download(p.W)})
	}
	for _, t := range opt.StateTensors() {
		s.Tensors = append(s.Tensors, trainstate.Tensor{Name: "optim/" + t.Name, Shape: t.T.Shape, Data: b.Download(t.T)})
	}
	return s, nil
}

// restoreState uploads a checkpoint's tensors and counters into a freshly
// built model, optimizer and scaler. Every tensor must be present with its
// shape, and no other.
func restoreState(s *trainstate.State, meta *stateMeta, m *model.Model, opt *optim.Split, scaler *optim.GradScaler, path string) error {
	want := map[string]bool{}
	for _, n := range stateTensorNames(m, opt) {
		want[n] = true
	}
	for _, t := range s.Tensors {
		if !want[t.Name] {
			return fmt.Errorf("RESUME: %s: unexpected tensor %q", path, t.Name)
		}
	}
	get := func(name string, shape []int) ([]float32, error) {
		t := s.Tensor(name)
		if t == nil {
			return nil, fmt.Errorf("RESUME: %s: tensor %q missing", path, name)
		}
		if !reflect.DeepEqual(t.Shape, shape) {
			return nil, fmt.Errorf("RESUME: %s: tensor %q has shape %v, the model needs %v", path, name, t.Shape, shape)
		}
		for i, x := range t.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("RESUME: %s: tensor %q holds a non-finite value at %d", path, name, i)
			}
		}
		return t.Data, nil
	}
	w := map[string][]float32{}
	for _, p := range m.Params() {
		v, err := get("model/"+p.Name, p.W.Shape)
		if err != nil {
			return err
		}
		w[p.Name] = v
	}
	if err := m.SetWeights(w); err != nil {
		return fmt.Errorf("RESUME: %s: %w", path, err)
	}
	for _, t := range opt.StateTensors() {
		v, err := get("optim/"+t.Name, t.T.Shape)
		if err != nil {
			return err
		}
		m.B.Upload(t.T, v)
	}
	if err := opt.SetSteps(meta.Adam); err != nil {
		return fmt.Errorf("RESUME: %s: %w", path, err)
	}
	if err := scaler.SetState(meta.Scaler); err != nil {
		return fmt.Errorf("RESUME: %s: %w", path, err)
	}
	return nil
}

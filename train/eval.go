package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/golf-ml/golf/artifact"
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/model"
)

// modelFiles says which files golf eval reads.
const modelFiles = "golf eval reads the <run>_model.npz (fp32 weights, a zip of .npy arrays) or <run>_model.int8.ptz (the int8 container, zlib) that golf train writes"

// artifactKind reads the first bytes of the file at path: a zip archive is
// a raw .npz, a zlib stream an int8 container (whatever the name says).
// Anything else is an error saying that the file is not a model file and
// which files are.
func artifactKind(path string) (quantized bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return false, err
	} else if !st.Mode().IsRegular() {
		return false, fmt.Errorf("%s is not a model file but a %s; %s", path, kindOf(st.Mode()), modelFiles)
	}
	var head [16]byte
	n, err := io.ReadFull(f, head[:])
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	b := head[:n]
	switch {
	case bytes.HasPrefix(b, []byte("PK\x03\x04")), bytes.HasPrefix(b, []byte("PK\x05\x06")):
		return false, nil
	case n >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0:
		return true, nil // RFC 1950: deflate, a window of at most 32 KiB, a check that divides by 31
	}
	what := "is empty"
	if n > 0 {
		what = fmt.Sprintf("starts with %q", b)
	}
	hint := ""
	if base, ok := strings.CutSuffix(path, ".txt"); ok {
		for _, suffix := range []string{"_model.int8.ptz", "_model.npz"} {
			if st, err := os.Stat(base + suffix); err == nil && st.Mode().IsRegular() {
				hint = "; for the run this log belongs to, evaluate " + base + suffix
				break
			}
		}
	}
	return false, fmt.Errorf("%s is not a model file: not zlib data (an int8 container) and not a zip archive (a raw .npz); it %s. %s%s",
		path, what, modelFiles, hint)
}

func kindOf(m os.FileMode) string {
	if m.IsDir() {
		return "directory"
	}
	return "special file (" + m.Type().String() + ")"
}

// CheckModelFile reports whether path is a model file golf eval can read
// (by its first bytes), with an error that says which files are.
func CheckModelFile(path string) error {
	_, err := artifactKind(path)
	return err
}

// ArtifactShapes reads the tensor shapes a raw .npz or an int8 container
// (told apart by their first bytes) declares, by reference name, from the
// arrays' headers alone: a .npz is not read beyond its headers; a container
// is inflated once as a stream (its payload is not kept), under
// artifact.DefaultMaxBytes.
func ArtifactShapes(path string) (map[string][]int, error) {
	shapes := map[string][]int{}
	quantized, err := artifactKind(path)
	if err != nil {
		return nil, err
	}
	if !quantized {
		infos, err := artifact.InspectNPZ(path)
		if err != nil {
			return nil, err
		}
		for _, a := range infos {
			shapes[a.Name] = a.Shape
		}
		return shapes, nil
	}
	infos, err := artifact.InspectQuantized(path)
	if err != nil {
		return nil, err
	}
	for _, a := range infos {
		// The payload of a quantized tensor has the tensor's own shape;
		// scales and the metadata are not tensors of the model.
		for _, prefix := range []string{"quantized/", "passthrough/"} {
			if name, ok := strings.CutPrefix(a.Name, prefix); ok {
				shapes[name] = a.Shape
			}
		}
	}
	return shapes, nil
}

// InferModel reads the architecture off the parameter shapes of a saved
// model (the reference's flat names):
//
//	tok_emb.weight            (V, C)    VOCAB_SIZE = V, MODEL_DIM = C
//	blocks.<i>.…              i < L     NUM_LAYERS = L
//	blocks.0.attn.q_gain      (H)       NUM_HEADS = H
//	blocks.0.attn.c_k.weight  (KV, C)   NUM_KV_HEADS = KV/(C/H)
//	blocks.0.mlp.fc.weight    (F, C)    MLP_MULT = F/C
//
// Only those six fields of the result are set. The shapes are not checked
// against each other beyond what the inference needs; Evaluate compares
// every tensor with the model it builds.
func InferModel(shapes map[string][]int) (model.Config, error) {
	var c model.Config
	get := func(name string, rank int, what string) ([]int, error) {
		s, ok := shapes[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("it has no tensor %s, from which %s is read", name, what)
		case len(s) != rank || s[0] <= 0 || s[len(s)-1] <= 0:
			return nil, fmt.Errorf("its %s has shape %v, want %d positive dimensions (for %s)", name, s, rank, what)
		}
		return s, nil
	}
	emb, err := get("tok_emb.weight", 2, "VOCAB_SIZE and MODEL_DIM")
	if err != nil {
		return c, err
	}
	c.VocabSize, c.ModelDim = emb[0], emb[1]
	for name := range shapes {
		rest, ok := strings.CutPrefix(name, "blocks.")
		if !ok {
			continue
		}
		idx, _, _ := strings.Cut(rest, ".")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= model.MaxTensorElems {
			return c, fmt.Errorf("tensor %s does not name a block index", name)
		}
		c.NumLayers = max(c.NumLayers, i+1)
	}
	if c.NumLayers == 0 {
		return c, fmt.Errorf("it has no blocks.<i>.* tensors, from which NUM_LAYERS is read")
	}
	gain, err := get("blocks.0.attn.q_gain", 1, "NUM_HEADS")
	if err != nil {
		return c, err
	}
	c.NumHeads = gain[0]
	if c.ModelDim%c.NumHeads != 0 {
		return c, fmt.Errorf("its %d heads (blocks.0.attn.q_gain) do not divide MODEL_DIM=%d (tok_emb.weight)", c.NumHeads, c.ModelDim)
	}
	ck, err := get("blocks.0.attn.c_k.weight", 2, "NUM_KV_HEADS")
	if err != nil {
		return c, err
	}
	hd := c.ModelDim / c.NumHeads
	if ck[0]%hd != 0 {
		return c, fmt.Errorf("blocks.0.attn.c_k.weight has %d rows, not a multiple of the head dim %d", ck[0], hd)
	}
	c.NumKVHeads = ck[0] / hd
	fc, err := get("blocks.0.mlp.fc.weight", 2, "MLP_MULT")
	if err != nil {
		return c, err
	}
	if fc[0]%c.ModelDim != 0 {
		return c, fmt.Errorf("blocks.0.mlp.fc.weight has %d rows, not a multiple of MODEL_DIM=%d", fc[0], c.ModelDim)
	}
	c.MLPMult = fc[0] / c.ModelDim
	return c, nil
}

// ShapeFlags records which model-shape knobs the user gave (flag or
// environment variable); Evaluate refuses a given value that differs from
// the model file's and takes the file's for the others.
type ShapeFlags struct {
	VocabSize, NumLayers, ModelDim, NumHeads, NumKVHeads, MLPMult bool
}

// mergeShape sets cfg's six shape fields from the inferred ones, refusing
// an explicitly given value that differs.
func mergeShape(cfg *model.Config, inferred model.Config, set ShapeFlags, path string) error {
	for _, f := range []struct {
		env      string
		given    bool
		dst      *int
		inferred int
		from     string
	}{
		{"VOCAB_SIZE", set.VocabSize, &cfg.VocabSize, inferred.VocabSize, "rows of tok_emb.weight"},
		{"NUM_LAYERS", set.NumLayers, &cfg.NumLayers, inferred.NumLayers, "blocks.<i>"},
		{"MODEL_DIM", set.ModelDim, &cfg.ModelDim, inferred.ModelDim, "columns of tok_emb.weight"},
		{"NUM_HEADS", set.NumHeads, &cfg.NumHeads, inferred.NumHeads, "length of blocks.0.attn.q_gain"},
		{"NUM_KV_HEADS", set.NumKVHeads, &cfg.NumKVHeads, inferred.NumKVHeads, "rows of blocks.0.attn.c_k.weight / head dim"},
		{"MLP_MULT", set.MLPMult, &cfg.MLPMult, inferred.MLPMult, "rows of blocks.0.mlp.fc.weight / MODEL_DIM"},
	} {
		if f.given && *f.dst != f.inferred {
			return fmt.Errorf("%s=%d was given but %s holds a model with %s=%d (%s): drop the setting or evaluate the matching file",
				f.env, *f.dst, path, f.env, f.inferred, f.from)
		}
		*f.dst = f.inferred
	}
	return nil
}

// ArtifactLimit is the most bytes a legitimate artifact of m may decode to:
// its parameters in fp32 (the raw .npz; the int8 container is smaller) plus
// 1 KiB a tensor for .npy and zip headers and the container's metadata,
// plus 1 MiB. m must be valid.
func ArtifactLimit(m model.Config) int64 {
	return 4*int64(model.NumParams(m)) + 1024*int64(2+10*m.NumLayers) + 1<<20
}

// LoadArtifact reads a raw .npz or an int8+zlib container (.ptz) into
// float32 tensors, under the cap opts give (artifact.DefaultMaxBytes when
// none), dequantizing a container. A tensor that is not a float tensor, or
// that holds a NaN or an infinity, is an error naming it.
func LoadArtifact(path string, opts ...artifact.ReadOption) ([]artifact.Tensor, error) {
	var ts []artifact.Tensor
	quantized, err := artifactKind(path)
	if err != nil {
		return nil, err
	}
	if !quantized {
		if ts, err = artifact.ReadNPZ(path, opts...); err != nil {
			return nil, err
		}
	} else {
		q, err := artifact.LoadQuantized(path, opts...)
		if err != nil {
			return nil, err
		}
		ts = artifact.Dequantize(q)
	}
	for _, t := range ts {
		if !t.DType.IsFloat() {
			return nil, fmt.Errorf("%s: tensor %s is %v, want a float tensor", path, t.Name, t.DType)
		}
		if i, v, bad := firstNonFinite(t.Data); bad {
			return nil, fmt.Errorf("%s: tensor %s %v holds a non-finite value (%g at flat index %d): the weights are broken",
				path, t.Name, t.Shape, v, i)
		}
	}
	return ts, nil
}

func firstNonFinite(xs []float32) (int, float32, bool) {
	for i, v := range xs {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return i, v, true
		}
	}
	return 0, 0, false
}

// Evaluate computes val_loss and val_bpb of the weights in path on the
// configured validation split, as the final evaluation of a run does. The
// model's shape comes from the file (InferModel); a shape knob the user gave
// (set) must agree with it. LOGIT_SOFTCAP, ROPE_BASE, LOGIT_CHUNK_TOKENS,
// TRAIN_SEQ_LEN, the validation batches (VAL_BATCH_SIZE/GRAD_ACCUM_STEPS),
// the data and the dtype are not recorded in an artifact and come from cfg:
// golf eval takes them from the run's configuration (FindRunConfig,
// UseRunData); the training knobs are not used. Before the
// weights are read, the evaluation's memory is checked (CPU backend) and the
// file is capped at ArtifactLimit of the model; weights or a loss that are
// not finite are an error.
func Evaluate(ctx context.Context, cfg Config, set ShapeFlags, b backend.Backend, path string, logf func(string)) (valLoss, valBPB float64, err error) {
	shapes, err := ArtifactShapes(path)
	if err != nil {
		return 0, 0, err
	}
	inferred, err := InferModel(shapes)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: cannot read the model's shape: %w", path, err)
	}
	if err := mergeShape(&cfg.Model, inferred, set, path); err != nil {
		return 0, 0, err
	}
	// No training step runs: the training batch knobs are set to the
	// smallest that validate, so that neither they nor the plan's training
	// chunk stand in the way of any TRAIN_SEQ_LEN the evaluation is given.
	if cfg.GradAccumSteps >= 1 && cfg.TrainSeqLen >= 1 && cfg.ValBatchSize/cfg.GradAccumSteps >= cfg.TrainSeqLen {
		cfg.TrainBatchTokens, cfg.MaxMicrobatchTokens = cfg.GradAccumSteps*cfg.TrainSeqLen, cfg.TrainSeqLen
	}
	if err := cfg.Validate(); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	if logf != nil {
		m := cfg.Model
		logf(fmt.Sprintf("model:%s vocab_size:%d layers:%d dim:%d heads:%d kv_heads:%d mlp_mult:%d",
			filepath.Base(path), m.VocabSize, m.NumLayers, m.ModelDim, m.NumHeads, m.NumKVHeads, m.MLPMult))
	}
	if _, err := checkMemory(cfg, b, false); err != nil {
		return 0, 0, err
	}
	in, err := prepareInputs(ctx, &cfg, nil)
	if err != nil {
		return 0, 0, err
	}
	if in.embedded && logf != nil {
		logf(fmt.Sprintf("data:embedded DATA_PATH unset and %s absent: evaluating on the embedded %s data set (%s)",
			Defaults().DataPath, data.EmbeddedDataset, in.dataPath))
	}
	ts, err := LoadArtifact(path, artifact.MaxBytes(ArtifactLimit(cfg.Model)))
	if err != nil {
		return 0, 0, err
	}
	model.ComputeDType = cfg.DType
	m, err := model.New(b, cfg.Model, uint64(cfg.Seed))
	if err != nil {
		return 0, 0, err
	}
	if err := matchParams(m, ts); err != nil {
		return 0, 0, fmt.Errorf("%s does not hold the model its shapes describe: %w", path, err)
	}
	if err := m.SetWeights(tensorMap(ts)); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	st := &stepper{cfg: cfg, b: b, m: m}
	defer st.free()
	valLoss, valBPB, err = EvalVal(ctx, cfg, m, in.valTokens, in.luts, logf, st.tokens)
	if err != nil {
		return 0, 0, err
	}
	if math.IsNaN(valLoss) || math.IsInf(valLoss, 0) || math.IsNaN(valBPB) || math.IsInf(valBPB, 0) {
		return 0, 0, fmt.Errorf("%s: val_loss is %g and val_bpb %g, not finite: the weights overflow in %s", path, valLoss, valBPB, cfg.DType)
	}
	return valLoss, valBPB, nil
}

// matchParams checks that ts holds exactly m's parameters, each with its
// shape, naming the first difference.
func matchParams(m *model.Model, ts []artifact.Tensor) error {
	byName := make(map[string][]int, len(ts))
	for _, t := range ts {
		byName[t.Name] = t.Shape
	}
	for _, p := range m.Params() {
		s, ok := byName[p.Name]
		if !ok {
			return fmt.Errorf("tensor %s %v is missing", p.Name, p.W.Shape)
		}
		if !slices.Equal(s, p.W.Shape) {
			return fmt.Errorf("tensor %s has shape %v, want %v", p.Name, s, p.W.Shape)
		}
		delete(byName, p.Name)
	}
	if len(byName) > 0 {
		extra := make([]string, 0, len(byName))
		for n := range byName {
			extra = append(extra, n)
		}
		sort.Strings(extra)
		return fmt.Errorf("tensors %s are not parameters of the model", strings.Join(extra, ", "))
	}
	return nil
}

// RunConfig is the configuration of the run that wrote an artifact, as the
// run recorded it beside the artifact: what it trained and validated with.
type RunConfig struct {
	Config   Config
	Source   string // the file it was read from
	Embedded bool   // the run trained and validated on the embedded data set
	// Score is the run's logged validation of these weights: its
	// final_int8_zlib_roundtrip_exact line for an int8 container, its last
	// step:N/M val_loss line for a raw .npz; "" when the log has none.
	// ScoreFrom is the log it came from.
	Score, ScoreFrom string
	// Notes are doubts about the match, for the user to read.
	Notes []string
}

// runLog names the log of the run that wrote the artifact at path:
// DIR/RUN_model.npz or DIR/RUN_model.int8.ptz have DIR/RUN.txt. ok is
// false for another name.
func runLog(path string) (log string, ok bool) {
	dir, name := filepath.Split(path)
	for _, suffix := range []string{"_model.int8.ptz", "_model.npz"} {
		if id, found := strings.CutSuffix(name, suffix); found && id != "" {
			return filepath.Join(dir, id+".txt"), true
		}
	}
	return "", false
}

// FindRunConfig reads the configuration of the run that wrote the artifact
// at path from the log the run wrote beside it: its last configuration
// block whose artifact sizes match the file. found is false when there is
// no such log or it holds no configuration, and looked then says what was
// looked for; a configuration that is there but does not read is an error
// naming the log.
func FindRunConfig(path string) (rc RunConfig, found bool, looked string, err error) {
	log, ok := runLog(path)
	if !ok {
		return rc, false, fmt.Sprintf("%s is not named <run>_model.npz or <run>_model.int8.ptz, so its run's log cannot be found", filepath.Base(path)), nil
	}
	if _, err := os.Stat(log); err != nil {
		return rc, false, log + ": " + shortErr(err), nil
	}
	rc, found, err = readRunConfig(log, path)
	if err != nil || found {
		return rc, found, "", err
	}
	return rc, false, log + ": no configuration in it", nil
}

// ReadRunConfig reads the configuration of the artifact at path's run from
// src, a golf log (golf eval --run-config).
func ReadRunConfig(src, path string) (RunConfig, error) {
	rc, found, err := readRunConfig(src, path)
	if err == nil && !found {
		err = fmt.Errorf("%s holds no run configuration: want a golf log (its \"configuration:\" block)", src)
	}
	return rc, err
}

func shortErr(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// maxRunFile bounds the log read for a configuration.
const maxRunFile = 256 << 20

func readRunConfig(src, path string) (rc RunConfig, found bool, err error) {
	f, err := os.Open(src)
	if err != nil {
		return rc, false, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxRunFile+1))
	if err != nil {
		return rc, false, fmt.Errorf("%s: %w", src, err)
	}
	if len(raw) > maxRunFile {
		return rc, false, fmt.Errorf("%s is larger than %d MiB: not a run's log", src, maxRunFile>>20)
	}
	rc.Source = src
	segs := slices.DeleteFunc(logSegments(raw), func(s logSegment) bool { return s.config == nil })
	if len(segs) == 0 {
		return rc, false, nil
	}
	size := fileSize(path)
	quantized, _ := artifactKind(path)
	seg := -1
	for i := len(segs) - 1; i >= 0 && seg < 0; i-- {
		if b := segs[i].artifactBytes(quantized); b >= 0 && b == size {
			seg = i
		}
	}
	if seg < 0 {
		seg = len(segs) - 1
		what := "raw model"
		if quantized {
			what = "int8 artifact"
		}
		if b := segs[seg].artifactBytes(quantized); b >= 0 {
			rc.Notes = append(rc.Notes, fmt.Sprintf("%s says its %s had %d bytes but %s has %d: the log may be another run's", src, what, b, path, size))
		} else {
			rc.Notes = append(rc.Notes, fmt.Sprintf("%s records no %s of its last run (the run did not finish?): its configuration is taken unchecked", src, what))
		}
	}
	s := segs[seg]
	if rc.Config, err = decodeRunConfig(s.config); err != nil {
		return rc, false, fmt.Errorf("%s: configuration block %d: %w", src, seg+1, err)
	}
	rc.Embedded = s.embedded || embeddedPath(rc.Config)
	rc.Score = s.lastVal
	if quantized {
		rc.Score = s.finalExact
	}
	if s.interrupted {
		rc.Score = ""
	}
	rc.ScoreFrom = src
	return rc, true, nil
}

// decodeRunConfig reads a Config as a run logs it (its configuration
// block: Config as JSON, the dtype by name, or by number in older logs)
// over the defaults, requiring the fields evaluation depends on.
func decodeRunConfig(raw []byte) (Config, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Config{}, err
	}
	var model map[string]json.RawMessage
	if m, ok := fields["Model"]; ok {
		if err := json.Unmarshal(m, &model); err != nil {
			return Config{}, fmt.Errorf("Model: %w", err)
		}
	}
	var missing []string
	for _, k := range []string{"TrainSeqLen", "ValBatchSize", "GradAccumSteps", "DType", "DataPath", "TokenizerPath"} {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k)
		}
	}
	for _, k := range []string{"LogitSoftcap", "RopeBase"} {
		if _, ok := model[k]; !ok {
			missing = append(missing, "Model."+k)
		}
	}
	if len(missing) > 0 {
		return Config{}, fmt.Errorf("it lacks %s", strings.Join(missing, ", "))
	}
	var dt backend.DType
	var name string
	if err := json.Unmarshal(fields["DType"], &name); err == nil {
		if dt, err = backend.ParseDType(name); err != nil {
			return Config{}, fmt.Errorf("DType: %w", err)
		}
	} else if err := json.Unmarshal(fields["DType"], &dt); err != nil || !dt.IsFloat() {
		return Config{}, fmt.Errorf("DType %s is not a compute dtype this golf knows", fields["DType"])
	}
	delete(fields, "DType")
	rest, err := json.Marshal(fields)
	if err != nil {
		return Config{}, err
	}
	c := Defaults()
	if err := json.Unmarshal(rest, &c); err != nil {
		return Config{}, err
	}
	c.DType = dt
	return c, nil
}

// applyChanges applies a resumed run's "Name: old → new" lines (dotted JSON
// names, JSON values, "unset" for none) to the configuration block base.
func applyChanges(base []byte, changes []string) ([]byte, error) {
	var root map[string]any
	if err := json.Unmarshal(base, &root); err != nil {
		return nil, err
	}
	for _, ch := range changes {
		name, rest, ok := strings.Cut(ch, ": ")
		if !ok {
			return nil, fmt.Errorf("change %q is not Name: old → new", ch)
		}
		var newText string
		if v, after, ok := strings.Cut(rest, "unset → "); ok && v == "" {
			newText = after
		} else {
			dec := json.NewDecoder(strings.NewReader(rest))
			var old any
			if err := dec.Decode(&old); err != nil {
				return nil, fmt.Errorf("change %q: %w", ch, err)
			}
			after, ok := strings.CutPrefix(rest[dec.InputOffset():], " → ")
			if !ok {
				return nil, fmt.Errorf("change %q is not Name: old → new", ch)
			}
			newText = after
		}
		keys := strings.Split(name, ".")
		m := root
		for _, k := range keys[:len(keys)-1] {
			sub, ok := m[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[k] = sub
			}
			m = sub
		}
		last := keys[len(keys)-1]
		if newText == "unset" {
			delete(m, last)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(newText), &v); err != nil {
			return nil, fmt.Errorf("change %q: %w", ch, err)
		}
		m[last] = v
	}
	return json.Marshal(root)
}

// embeddedPath reports whether c's data is an extraction of the embedded
// data set (data.ExtractEmbedded: .../embedded-<hash>/datasets/<name>),
// chosen because neither path was given.
func embeddedPath(c Config) bool {
	return !c.DataPathSet && !c.TokenizerPathSet && filepath.Base(c.DataPath) == data.EmbeddedDataset &&
		strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(c.DataPath))), "embedded-")
}

// logSegment is one process's part of a run's log: from its configuration
// block to the next.
type logSegment struct {
	config             []byte
	embedded           bool
	npzBytes, ptzBytes int64 // the artifacts' sizes it logged, -1: none
	finalExact         string
	lastVal            string
	interrupted        bool // its artifacts are of a run stopped by a signal, not validated
}

func (s logSegment) artifactBytes(quantized bool) int64 {
	if quantized {
		return s.ptzBytes
	}
	return s.npzBytes
}

// logSegments splits a golf log at its "configuration:" lines, each
// followed by the configuration's indented JSON, and notes what each part
// logged of its data and artifacts.
func logSegments(raw []byte) []logSegment {
	var segs []logSegment
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSuffix(lines[i], "\r")
		if strings.HasPrefix(l, "configuration: resumed") {
			// A resumed process logs the checkpoint's configuration's
			// changes, one "  Name: old → new" line each.
			var changes []string
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  ") {
				i++
				changes = append(changes, strings.TrimSpace(lines[i]))
			}
			seg := logSegment{npzBytes: -1, ptzBytes: -1}
			if n := len(segs); n > 0 && segs[n-1].config != nil {
				seg.embedded = segs[n-1].embedded
				if c, err := applyChanges(segs[n-1].config, changes); err == nil {
					seg.config = c
				}
			}
			segs = append(segs, seg)
			continue
		}
		if l == "configuration:" {
			j := i + 1
			for j < len(lines) && strings.TrimSuffix(lines[j], "\r") != "}" {
				j++
			}
			if j == len(lines) {
				break // a block cut short: the run is being written or was killed
			}
			segs = append(segs, logSegment{config: []byte(strings.Join(lines[i+1:j+1], "\n")), npzBytes: -1, ptzBytes: -1})
			i = j
			continue
		}
		if len(segs) == 0 {
			continue
		}
		s := &segs[len(segs)-1]
		switch {
		case strings.HasPrefix(l, "data:embedded "):
			s.embedded = true
		case strings.HasPrefix(l, "saved_model:"):
			if k := strings.LastIndex(l, " bytes:"); k >= 0 {
				if n, err := strconv.ParseInt(l[k+len(" bytes:"):], 10, 64); err == nil {
					s.npzBytes = n
				}
			}
		case strings.HasPrefix(l, "serialized_model_int8_zlib:"):
			num, _, _ := strings.Cut(strings.TrimPrefix(l, "serialized_model_int8_zlib:"), " ")
			if n, err := strconv.ParseInt(num, 10, 64); err == nil {
				s.ptzBytes = n
			}
		case strings.HasPrefix(l, "final_int8_zlib_roundtrip_exact "):
			s.finalExact = l
		case strings.HasPrefix(l, "interrupted:"):
			s.interrupted = true
		case strings.HasPrefix(l, "step:") && strings.Contains(l, " val_loss:") && s.npzBytes < 0:
			s.lastVal = l
		}
	}
	return segs
}

// CompareScore sets an evaluation beside the run's logged score of the
// same weights, at the precision the run logged it: a line saying whether
// they agree, "" when the run logged none.
func (rc RunConfig) CompareScore(valLoss, valBPB float64) string {
	if rc.Score == "" {
		return ""
	}
	var mine string
	if strings.HasPrefix(rc.Score, "final_int8_zlib_roundtrip_exact ") {
		mine = fmt.Sprintf("val_loss:%.8f val_bpb:%.8f", valLoss, valBPB)
	} else {
		mine = fmt.Sprintf("val_loss:%.4f val_bpb:%.4f", valLoss, valBPB)
	}
	var logged []string
	for _, f := range strings.Fields(rc.Score) {
		if strings.HasPrefix(f, "val_loss:") || strings.HasPrefix(f, "val_bpb:") {
			logged = append(logged, f)
		}
	}
	verdict := "the same as this evaluation"
	if strings.Join(logged, " ") != mine {
		verdict = "NOT the same as this evaluation (" + mine + ")"
	}
	return fmt.Sprintf("run_score: %s (%s): %s", rc.Score, rc.ScoreFrom, verdict)
}

// UseRunData points cfg, a run's configuration, at the data that run
// validated on: its DATA_PATH and TOKENIZER_PATH as it recorded them, taken
// as given (no silent fallback to the embedded data set), except those the
// user gave (dataGiven, tokGiven). A run on the embedded data set whose
// extraction is gone gets this binary's embedded set, with a note when that
// is another version of it. A recorded path that does not exist is an
// error naming it and the file it came from.
func UseRunData(cfg *Config, rc RunConfig, dataGiven, tokGiven bool) (note string, err error) {
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if rc.Embedded && !dataGiven && !tokGiven && !(exists(cfg.DataPath) && exists(cfg.TokenizerPath)) {
		dp, tp, err := data.ExtractEmbedded("")
		if err != nil {
			return "", err
		}
		note = fmt.Sprintf("the run's copy of the embedded data set (%s) is gone: extracted it again to %s", cfg.DataPath, dp)
		if filepath.Clean(dp) != filepath.Clean(cfg.DataPath) {
			note = fmt.Sprintf("the run's copy of the embedded data set (%s) is gone and this binary embeds another version of it (%s): the score may differ from the run's", cfg.DataPath, dp)
		}
		cfg.DataPath, cfg.TokenizerPath = dp, tp
	}
	for _, p := range []struct {
		given     bool
		env, flag string
		path      string
	}{
		{dataGiven, "DATA_PATH", "--data-path", cfg.DataPath},
		{tokGiven, "TOKENIZER_PATH", "--tokenizer-path", cfg.TokenizerPath},
	} {
		if !p.given && !exists(p.path) {
			rel := ""
			if !filepath.IsAbs(p.path) {
				rel = " (a relative path is the run's, from the directory it was started in)"
			}
			return "", fmt.Errorf("the run's %s %s (%s) does not exist here%s: give %s", p.env, p.path, rc.Source, rel, p.flag)
		}
	}
	cfg.DataPathSet, cfg.TokenizerPathSet = true, true
	return note, nil
}

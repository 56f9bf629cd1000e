package train

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/checkpoint"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// Result is what a run produced.
type Result struct {
	RunID             string
	LogPath           string
	ModelPath         string // raw .npz
	QuantPath         string // int8 + zlib container
	SummaryPath       string // JSON summary of the raw tensors (scripts/check_artifacts.py)
	PlotPath          string
	Steps             int
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
}

// Run trains as train_gpt_mlx.py's main() does, on b, writing the log and
// artifacts under cfg.OutDir. Inputs are checked before anything is
// written; artifacts are written atomically. console receives the log
// lines (nil: file only).
func Run(ctx context.Context, cfg Config, b backend.Backend, console io.Writer) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.RunID == "" {
		cfg.RunID = newUUID()
	}
	in, err := prepareInputs(&cfg)
	if err != nil {
		return nil, err
	}
	if err := CheckBackend(cfg, b); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("OUT_DIR %s: %w", cfg.OutDir, err)
	}
	res := &Result{RunID: cfg.RunID, Embedded: in.embedded, LogPath: logPath(cfg.OutDir, cfg.RunID)}
	lg, err := NewLogger(res.LogPath, console)
	if err != nil {
		return nil, fmt.Errorf("OUT_DIR %s: %w", cfg.OutDir, err)
	}
	defer lg.Close()
	if console != nil {
		fmt.Fprintln(console, res.LogPath)
	}
	if err := run(ctx, cfg, b, in, lg, res); err != nil {
		lg.Logf("error: %v", err)
		return res, err
	}
	return res, nil
}

// prepareInputs resolves the data paths (falling back to the embedded data
// set) and checks tokenizer, manifest and validation split.
func prepareInputs(cfg *Config) (*inputs, error) {
	in := &inputs{dataPath: cfg.DataPath, tokenizerPath: cfg.TokenizerPath}
	if !cfg.DataPathSet && !cfg.TokenizerPathSet {
		if _, err := os.Stat(cfg.DataPath); errors.Is(err, os.ErrNotExist) {
			dp, tp, err := data.ExtractEmbedded(os.TempDir())
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
	in.datasetName, in.actualTrain, in.expected, err = data.ValidateDatasetTokenizerPair(in.dataPath, in.tokenizerPath)
	if err != nil {
		return nil, err
	}
	in.valTokens, err = data.LoadValidationTokens(valPattern(in.dataPath), cfg.TrainSeqLen)
	if err != nil {
		return nil, err
	}
	for _, t := range in.valTokens {
		if int(t) >= cfg.Model.VocabSize {
			return nil, fmt.Errorf("%s: token id %d outside VOCAB_SIZE=%d", valPattern(in.dataPath), t, cfg.Model.VocabSize)
		}
	}
	if _, err := data.NewTokenLoader(trainPattern(in.dataPath), nil, in.datasetName); err != nil {
		return nil, err
	}
	in.luts = data.NewByteLUTs(tok, cfg.Model.VocabSize)
	return in, nil
}

func trainPattern(dataPath string) string { return filepath.Join(dataPath, "fineweb_train_*.bin") }
func valPattern(dataPath string) string   { return filepath.Join(dataPath, "fineweb_val_*.bin") }

func run(ctx context.Context, cfg Config, b backend.Backend, in *inputs, lg *Logger, res *Result) error {
	cfgJSON, _ := json.MarshalIndent(cfg, "", "  ")
	lg.File("configuration:\n" + string(cfgJSON))
	lg.File(strings.Repeat("=", 100))
	lg.File(fmt.Sprintf("Running Go %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH))
	lg.File(strings.Repeat("=", 100))
	if in.embedded {
		lg.Logf("data:embedded DATA_PATH unset and %s absent: training on the embedded %s dataset (%s)",
			Defaults().DataPath, data.EmbeddedDataset, in.dataPath)
	}

	model.ComputeDType = cfg.DType
	m, err := model.New(b, cfg.Model, uint64(cfg.Seed))
	if err != nil {
		return err
	}
	opt, err := optim.NewSplit(b, m.Params(), cfg.Optim)
	if err != nil {
		return err
	}
	defer opt.Free()
	scaler, err := optim.ScalerFor(b, cfg.DType, cfg.LossScale)
	if err != nil {
		return err
	}
	defer scaler.Free()
	loader, err := data.NewTokenLoader(trainPattern(in.dataPath), lg.Log, in.datasetName)
	if err != nil {
		return err
	}

	logHeader(cfg, b, in, m, opt, scaler, lg)
	st := &stepper{cfg: cfg, b: b, m: m, opt: opt, scaler: scaler, lg: lg}
	defer st.free()

	if cfg.WarmupSteps > 0 {
		for w := 0; w < cfg.WarmupSteps; w++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := st.lossAndGrad(loader); err != nil {
				return err
			}
			if cfg.WarmupSteps <= 20 || (w+1)%10 == 0 || w+1 == cfg.WarmupSteps {
				lg.Logf("warmup_step:%d/%d", w+1, cfg.WarmupSteps)
			}
		}
		// Prime the evaluation path once, then restart the data from the top.
		warmSeqs := min(cfg.ValBatchSize/cfg.GradAccumSteps/cfg.TrainSeqLen, (len(in.valTokens)-1)/cfg.TrainSeqLen)
		st.evalBatch(in.valTokens[:warmSeqs*cfg.TrainSeqLen+1])
		if loader, err = data.NewTokenLoader(trainPattern(in.dataPath), lg.Log, in.datasetName); err != nil {
			return err
		}
	}

	trainTimeMs := 0.0
	maxWallclockMs := 1000 * cfg.MaxWallclockSeconds
	stopAfter := -1
	lg.StartBar("train", cfg.Iterations)
	t0 := time.Now()
	step := 0
	for {
		lastStep := step == cfg.Iterations || (stopAfter >= 0 && step >= stopAfter)
		if lastStep || (cfg.ValLossEvery > 0 && step%cfg.ValLossEvery == 0) {
			trainTimeMs += msSince(t0)
			valLoss, valBPB, err := st.evalVal(ctx, in)
			if err != nil {
				return err
			}
			if step%25 == 0 || lastStep {
				lg.Logf("step:%d/%d val_loss:%.4f val_bpb:%.4f train_time:%.0fms step_avg:%.2fms",
					step, cfg.Iterations, valLoss, valBPB, trainTimeMs, trainTimeMs/float64(max(step, 1)))
			}
			res.ValLoss, res.ValBPB = valLoss, valBPB
			st.valPts = append(st.valPts, Point{step, valLoss})
			t0 = time.Now()
		}
		if lastStep {
			if stopAfter >= 0 && step < cfg.Iterations {
				lg.Logf("stopping_early: wallclock_cap train_time:%.0fms step:%d/%d", trainTimeMs, step, cfg.Iterations)
			}
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		lrMul := optim.LRMul(step, trainTimeMs+msSince(t0), cfg.Iterations, cfg.WarmdownIters, cfg.MaxWallclockSeconds)
		stepT0 := time.Now()
		trainLoss, err := st.lossAndGrad(loader)
		if err != nil {
			return err
		}
		st.update(step, lrMul)
		if err := b.Sync(); err != nil {
			return fmt.Errorf("step %d: %w", step+1, err)
		}
		stepMs := msSince(stepT0)
		approxMs := trainTimeMs + msSince(t0)
		tokS := float64(cfg.TrainBatchTokens) / (stepMs / 1000)
		step++
		st.trainPts = append(st.trainPts, Point{step, trainLoss})
		lg.Step(step)
		if cfg.TrainLogEvery > 0 && (step <= 10 || step%cfg.TrainLogEvery == 0 || stopAfter >= 0) {
			lg.Logf("step:%d/%d train_loss:%.4f train_time:%.0fms step_avg:%.2fms tok_s:%.0f",
				step, cfg.Iterations, trainLoss, approxMs, approxMs/float64(step), tokS)
		}
		if maxWallclockMs > 0 && stopAfter < 0 && approxMs >= maxWallclockMs {
			stopAfter = step
		}
	}
	lg.StopBar()
	res.Steps, res.TrainLosses = step, st.trainPts

	if err := writeArtifacts(ctx, cfg, st, in, res); err != nil {
		return err
	}
	res.PlotPath = filepath.Join(cfg.OutDir, cfg.RunID+"_loss.png")
	if err := WriteLossPlot(res.PlotPath, "golf "+cfg.RunID, st.trainPts, st.valPts); err != nil {
		return err
	}
	return nil
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

// writeArtifacts saves the raw .npz, the int8+zlib container and its
// summary, then evaluates the dequantized weights (the round trip).
func writeArtifacts(ctx context.Context, cfg Config, st *stepper, in *inputs, res *Result) error {
	lg := st.lg
	tensors := modelTensors(st.m)
	res.ModelPath = filepath.Join(cfg.OutDir, cfg.RunID+"_model.npz")
	if err := checkpoint.SaveNPZ(res.ModelPath, tensors); err != nil {
		return err
	}
	lg.Logf("saved_model:%s bytes:%d", res.ModelPath, fileSize(res.ModelPath))
	res.SummaryPath = filepath.Join(cfg.OutDir, cfg.RunID+"_model.summary.json")
	if err := checkpoint.WriteSummary(res.SummaryPath, tensors); err != nil {
		return err
	}

	q, stats := checkpoint.Quantize(tensors, cfg.Int8KeepFloatPatterns)
	res.QuantPath = filepath.Join(cfg.OutDir, cfg.RunID+"_model.int8.ptz")
	fileBytes, rawBytes, err := checkpoint.SaveQuantized(res.QuantPath, q)
	if err != nil {
		return err
	}
	ratio := float64(stats.BaselineTensorBytes) / float64(max(stats.Int8PayloadBytes, 1))
	lg.Logf("serialized_model_int8_zlib:%d bytes (payload:%d raw_pickle:%d payload_ratio:%.2fx)",
		fileBytes, stats.Int8PayloadBytes, rawBytes, ratio)

	back, err := checkpoint.LoadQuantized(res.QuantPath)
	if err != nil {
		return err
	}
	if err := st.m.SetWeights(tensorMap(checkpoint.Dequantize(back))); err != nil {
		return fmt.Errorf("%s: %w", res.QuantPath, err)
	}
	qt0 := time.Now()
	res.QValLoss, res.QValBPB, err = st.evalVal(ctx, in)
	if err != nil {
		return err
	}
	lg.Logf("final_int8_zlib_roundtrip val_loss:%.4f val_bpb:%.4f eval_time:%.0fms", res.QValLoss, res.QValBPB, msSince(qt0))
	lg.Logf("final_int8_zlib_roundtrip_exact val_loss:%.8f val_bpb:%.8f", res.QValLoss, res.QValBPB)
	return nil
}

// modelTensors lists the master weights with their reference names.
func modelTensors(m *model.Model) []checkpoint.Tensor {
	w := m.Weights()
	var out []checkpoint.Tensor
	for _, p := range m.Params() {
		out = append(out, checkpoint.Tensor{
			Name: p.Name, Shape: append([]int(nil), p.W.Shape...), DType: backend.F32, Data: w[p.Name],
		})
	}
	return out
}

func tensorMap(ts []checkpoint.Tensor) map[string][]float32 {
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

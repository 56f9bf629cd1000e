package train

import (
	"context"
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/data"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// stepper holds what one optimizer step needs: the model, optimizer, loss
// scaler, and token buffers on the backend (one pair per row count).
type stepper struct {
	cfg    Config
	b      backend.Backend
	m      *model.Model
	opt    *optim.Split
	scaler *optim.GradScaler
	lg     *Logger
	par    *Parallel // nil: one device

	// buckets is the gradients' bucketed all-reduce (parallel.go),
	// planned on the first step; planned says that happened.
	buckets *gradBuckets
	planned bool

	ids      map[int][2]*backend.Tensor // rows → (ids, targets), I32
	trainPts []Point
	valPts   []Point
	skipped  int

	// losses holds one device accumulator (a row of two: Accumulate's sum
	// and compensation) per step whose train loss has not been read yet;
	// the loop reads them all with one host wait when it logs.
	losses *backend.Tensor // F32 [K, 2]
}

// lossSlot is the accumulator of the i-th unread step.
func (s *stepper) lossSlot(i int) *backend.Tensor { return s.losses.Rows(i, 1).Reshape(2) }

// readLosses waits for the device once and returns the train losses of the
// first n slots, with the error Sync would return.
func (s *stepper) readLosses(n int) ([]float64, error) {
	if n == 0 {
		return nil, nil
	}
	if _, err := s.b.ReadScalar(s.lossSlot(n - 1)); err != nil {
		return nil, err
	}
	v := s.b.Download(s.losses)
	tokens := float64(s.cfg.GradAccumSteps * ((s.cfg.MicrobatchTokens() / s.cfg.TrainSeqLen) * s.cfg.TrainSeqLen))
	out := make([]float64, n)
	for i := range out {
		out[i] = (float64(v[2*i]) - float64(v[2*i+1])) / tokens
	}
	return out, nil
}

// tokens uploads x and y into the cached I32 pair for len(x) rows.
func (s *stepper) tokens(x, y []int32) (ids, targets *backend.Tensor) {
	if s.ids == nil {
		s.ids = map[int][2]*backend.Tensor{}
	}
	pair, ok := s.ids[len(x)]
	if !ok {
		pair = [2]*backend.Tensor{s.b.New(backend.I32, len(x)), s.b.New(backend.I32, len(y))}
		s.ids[len(x)] = pair
	}
	s.b.Upload(pair[0], x)
	s.b.Upload(pair[1], y)
	return pair[0], pair[1]
}

func (s *stepper) free() {
	if s.losses != nil {
		s.b.Free(s.losses)
		s.losses = nil
	}
	for _, p := range s.ids {
		s.b.Free(p[0])
		s.b.Free(p[1])
	}
	s.ids = nil
}

// lossAndGrad runs the GRAD_ACCUM_STEPS microbatches of one optimizer step,
// each split into chunks of at most MAX_MICROBATCH_TOKENS
// (loss_and_grad_chunked), accumulating into zeroed gradients the gradient
// of
//
//	S · Σ_tokens loss / (A · M)
//
// (S the loss scale, A the accumulation steps, M the usable tokens of a
// microbatch): the reference's per-chunk weights y.size/M times 1/A. The
// summed token losses of the step, unscaled, go into the device
// accumulator acc (F32 [2], zeroed here; readLosses divides by the step's
// token count); nothing waits for the device. In a data-parallel run the
// rank computes its own microbatches and the gradients and the loss sum
// are then summed over the ranks (parallel.go).
func (s *stepper) lossAndGrad(loader *data.TokenLoader, acc *backend.Tensor) error {
	cfg := s.cfg
	chunks, err := data.TokenChunks(cfg.MicrobatchTokens(), cfg.TrainSeqLen, cfg.MaxMicrobatchTokens)
	if err != nil {
		return err
	}
	total := 0
	for _, c := range chunks {
		total += c
	}
	s.m.CastWeights()
	s.m.ZeroGrads()
	s.b.Zero(acc)
	gradScale := float32(s.scaler.Scale() / float64(total*cfg.GradAccumSteps))
	// With several ranks and an overlapping collective, the gradients'
	// sums start during the rank's last backward (parallel.go).
	if !s.planned && s.par != nil {
		if o, ok := s.par.Reduce.(Overlap); ok {
			s.buckets = planBuckets(s.m, o)
		}
	}
	s.planned = true
	gb, last := s.buckets, s.par.lastMine(cfg.GradAccumSteps)
	for a := 0; a < cfg.GradAccumSteps; a++ {
		for ci, c := range chunks {
			x, y, err := loader.NextBatch(c, cfg.TrainSeqLen)
			if err != nil {
				return err
			}
			if !s.par.mine(a) {
				continue // another rank's microbatch (parallel.go)
			}
			if err := checkVocab(x[:1], y, cfg.Model.VocabSize); err != nil {
				return fmt.Errorf("%s: %w", trainPattern(cfg.DataPath), err)
			}
			ids, targets := s.tokens(x, y)
			if gb != nil && a == last && ci == len(chunks)-1 {
				s.m.OnBlockGrads = gb.hook
			}
			s.m.ForwardBackward(ids, targets, cfg.TrainSeqLen, gradScale)
			s.m.OnBlockGrads = nil
			s.b.Accumulate(acc, s.m.RowLoss(), 1)
		}
	}
	return s.par.reduceStep(s.m, acc, gb)
}

// update unscales (skipping the step when the dynamic scaler found an
// overflow), clips and applies the split optimizer. It reports whether the
// step was skipped.
func (s *stepper) update(step int, lrMul float64) (skipped bool) {
	params := s.m.Params()
	if found := s.scaler.UnscaleAndCheck(params); found {
		s.skipped++
		s.scaler.Update(true)
		s.lg.Logf("loss_scale: non-finite gradients at step:%d, step skipped, scale now %g", step+1, s.scaler.Scale())
		return true
	}
	optim.ClipGradNorm(s.b, params, s.cfg.Optim.GradClipNorm)
	s.opt.Step(step, lrMul)
	s.scaler.Update(false)
	return false
}

// evalBatch returns the summed loss of the sequences in chunk (len = k·T+1).
func (s *stepper) evalBatch(chunk []int32) float64 {
	ids, targets := s.tokens(chunk[:len(chunk)-1], chunk[1:])
	s.m.CastWeights()
	return s.m.Loss(ids, targets, s.cfg.TrainSeqLen)
}

// evalVal is eval_val: the whole validation split in batches of
// VAL_BATCH_SIZE/GRAD_ACCUM_STEPS tokens; val_loss is the mean token
// cross-entropy and val_bpb = val_loss/ln 2 · tokens/bytes, the bytes from
// the tokenizer's LUTs.
func (s *stepper) evalVal(ctx context.Context, in *inputs) (valLoss, valBPB float64, err error) {
	sums, err := evalSums(ctx, s.cfg, s.m, in.valTokens, in.luts, s.lg.Log, s.tokens, s.par)
	if err != nil {
		return 0, 0, err
	}
	if s.par != nil {
		if sums, err = s.par.Ranks.SumFloat64(sums); err != nil {
			return 0, 0, fmt.Errorf("validation: the sums of the ranks: %w", err)
		}
	}
	valLoss, valBPB = valMetrics(sums[0], sums[1], sums[2])
	return valLoss, valBPB, nil
}

// EvalVal evaluates m on valTokens (trimmed as LoadValidationTokens does).
// upload turns (x, y) into backend I32 tensors; logf receives the
// val_progress lines (nil: none).
func EvalVal(ctx context.Context, cfg Config, m *model.Model, valTokens []int32, luts data.ByteLUTs,
	logf func(string), upload func(x, y []int32) (*backend.Tensor, *backend.Tensor)) (valLoss, valBPB float64, err error) {
	sums, err := evalSums(ctx, cfg, m, valTokens, luts, logf, upload, nil)
	if err != nil {
		return 0, 0, err
	}
	valLoss, valBPB = valMetrics(sums[0], sums[1], sums[2])
	return valLoss, valBPB, nil
}

// valMetrics are val_loss and val_bpb from the summed token losses, the
// tokens and their bytes.
func valMetrics(lossSum, tokens, bytes float64) (valLoss, valBPB float64) {
	valLoss = lossSum / tokens
	return valLoss, valLoss / math.Ln2 * (tokens / bytes)
}

// evalSums is the summed loss, the token count and the byte count of par's
// share of the validation sequences (all of them for nil).
func evalSums(ctx context.Context, cfg Config, m *model.Model, valTokens []int32, luts data.ByteLUTs,
	logf func(string), upload func(x, y []int32) (*backend.Tensor, *backend.Tensor), par *Parallel) (sums []float64, err error) {
	T := cfg.TrainSeqLen
	batchTokens := cfg.ValBatchSize / cfg.GradAccumSteps
	if batchTokens < T {
		return nil, fmt.Errorf("VAL_BATCH_SIZE must provide at least one sequence; got VAL_BATCH_SIZE=%d, GRAD_ACCUM_STEPS=%d, TRAIN_SEQ_LEN=%d",
			cfg.ValBatchSize, cfg.GradAccumSteps, T)
	}
	batchSeqs := batchTokens / T
	first, last := par.seqRange((len(valTokens) - 1) / T)
	totalBatches := max((last-first+batchSeqs-1)/batchSeqs, 1)
	m.CastWeights()
	lossSum, tokens, bytes := 0.0, 0.0, 0.0
	for bi, start := 1, first; start < last; bi, start = bi+1, start+batchSeqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+batchSeqs, last)
		chunk := valTokens[start*T : end*T+1]
		x, y := chunk[:len(chunk)-1], chunk[1:]
		ids, targets := upload(x, y)
		lossSum += m.Loss(ids, targets, T)
		tokens += float64(len(y))
		bytes += data.BytesForTargets(x, y, luts)
		if logf != nil && totalBatches > 1 && (bi == 1 || bi == totalBatches || bi%25 == 0) {
			logf(fmt.Sprintf("val_progress:%d/%d", bi, totalBatches))
		}
	}
	return []float64{lossSum, tokens, bytes}, nil
}

// checkVocab reports a token id outside [0, vocab): a shard that does not
// belong to the tokenizer. (x is y shifted by one, so its first element and
// y cover both.)
func checkVocab(x0, y []int32, vocab int) error {
	for _, s := range [][]int32{x0, y} {
		for _, t := range s {
			if t < 0 || int(t) >= vocab {
				return fmt.Errorf("token id %d outside VOCAB_SIZE=%d", t, vocab)
			}
		}
	}
	return nil
}

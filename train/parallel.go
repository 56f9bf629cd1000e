package train

import (
	"context"
	"errors"
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/trainstate"
)

// Data-parallel training, as train_gpt.py runs it under torchrun: every
// rank holds the whole model and optimizer, takes its share of each step's
// microbatches, and the gradients are summed across ranks before the
// optimizer step, so every rank applies the same update and the replicas
// stay identical.
//
// What golf mirrors, and where it differs:
//
//   - GRAD_ACCUM_STEPS is the step's microbatch count across all ranks,
//     and must be a multiple of WORLD_SIZE: each rank accumulates
//     GRAD_ACCUM_STEPS/WORLD_SIZE of them (train_gpt.py's 8/WORLD_SIZE
//     with the default of 8). A step's global batch, its loss weights and
//     its tokens are therefore those of the same configuration on one
//     device; only the order of the gradient additions differs.
//   - Microbatch g of a step (g = 0 … GRAD_ACCUM_STEPS-1, each split into
//     MAX_MICROBATCH_TOKENS chunks as on one device) is rank g mod
//     WORLD_SIZE's. Every rank reads the whole token stream and skips the
//     spans of the others, so all ranks stand at the same position (the
//     checkpoint's) and, without chunking, rank r's spans are exactly
//     those of train_gpt.py's DistributedTokenLoader: its call a takes
//     WORLD_SIZE spans of the stream and gives rank r the r-th, which is
//     microbatch a·WORLD_SIZE + r here.
//   - The gradient arena (one F32 tensor) and the step's loss accumulator
//     are summed across ranks on the device (NCCL); the train loss logged
//     is the global one (train_gpt.py logs rank 0's).
//   - Validation splits the sequences by rank as eval_val does (rank r
//     takes [total·r/W, total·(r+1)/W)), in batches of
//     VAL_BATCH_SIZE/GRAD_ACCUM_STEPS tokens, and the loss, token and byte
//     sums are added across ranks in rank order.
//   - At each step boundary the ranks agree, over the host channel, on
//     whether to stop (a signal on any rank), on the wall-clock cap (the
//     largest elapsed time of any rank, train_gpt.py's MAX all-reduce)
//     and on whether rank 0 saves a checkpoint, so every rank stops, caps
//     and pauses its clock at the same step.
//   - Only rank 0 writes: the log, the metrics file, checkpoints and the
//     artifacts, whose final round-trip evaluation it runs alone over the
//     whole validation set. The others log nothing and write nothing.
//     A resumed run reads rank 0's checkpoint on every rank (several
//     machines need OUT_DIR on a shared file system) and must have the
//     WORLD_SIZE that saved it.

// Collective sums a tensor over the ranks on the device.
type Collective interface {
	// AllReduceSum replaces t, on every rank, by the sum of every rank's
	// t, ordered after the work queued before it; it does not wait for
	// the device.
	AllReduceSum(t *backend.Tensor) error
}

// Ranks is the host side of a data-parallel run (internal/dist's Group):
// the per-step agreement and small sums, each a collective call that
// every rank makes in the same order.
type Ranks interface {
	// AgreeMax returns, on every rank, the elementwise largest of every
	// rank's values (flags passed as 0 or 1 come back as their OR); every
	// rank must be at the same step.
	AgreeMax(step int, values []float64) ([]float64, error)
	// SumFloat64 returns, on every rank, the element-wise sum of every
	// rank's vals, added in rank order.
	SumFloat64(vals []float64) ([]float64, error)
}

// Parallel is a run's place among the ranks of a data-parallel job.
type Parallel struct {
	Rank, Size int
	Ranks      Ranks
	Reduce     Collective
}

// parallelKey is the context key of a run's Parallel.
type parallelKey struct{}

// WithParallel returns ctx saying that Run trains as rank p.Rank of
// p.Size. A Size of 1 still goes through the collective (as torchrun with
// one process does): its sums are of one term, so the run is bitwise the
// one-device run, plus the world_size line.
func WithParallel(ctx context.Context, p *Parallel) context.Context {
	return context.WithValue(ctx, parallelKey{}, p)
}

// parallelOf is ctx's Parallel (nil: one device, no collective).
func parallelOf(ctx context.Context) *Parallel {
	p, _ := ctx.Value(parallelKey{}).(*Parallel)
	return p
}

// check refuses what a data-parallel run cannot do.
func (p *Parallel) check(cfg Config) error {
	if p == nil {
		return nil
	}
	if p.Rank < 0 || p.Rank >= p.Size {
		return fmt.Errorf("RANK=%d outside WORLD_SIZE=%d", p.Rank, p.Size)
	}
	if p.Ranks == nil || p.Reduce == nil {
		return errors.New("data parallel: the run has no channel to the other ranks")
	}
	if cfg.GradAccumSteps%p.Size != 0 {
		return fmt.Errorf("GRAD_ACCUM_STEPS=%d must be a multiple of WORLD_SIZE=%d: each rank takes GRAD_ACCUM_STEPS/WORLD_SIZE of a step's microbatches (train_gpt.py: 8/WORLD_SIZE)",
			cfg.GradAccumSteps, p.Size)
	}
	return nil
}

// size is the number of ranks (1 without data parallelism).
func (p *Parallel) size() int {
	if p == nil {
		return 1
	}
	return p.Size
}

// savedSize is the WORLD_SIZE a checkpoint records: 0 (absent) for one
// device, so that a one-device run's state reads as before.
func (p *Parallel) savedSize() int {
	if p == nil {
		return 0
	}
	return p.Size
}

// leader reports whether this process writes the run's files (rank 0, or
// a one-device run).
func (p *Parallel) leader() bool { return p == nil || p.Rank == 0 }

// mine reports whether microbatch g of a step is this rank's.
func (p *Parallel) mine(g int) bool { return p == nil || g%p.Size == p.Rank }

// Overlap is a Collective whose sums can run beside the backend's work
// (the CUDA backend: NCCL on a stream of its own, ordered by events).
type Overlap interface {
	// StartAllReduceSum begins summing t over the ranks once the work
	// queued before it is done, without holding back the work queued
	// after it, which must leave t alone until WaitAllReduce.
	StartAllReduceSum(t *backend.Tensor) error
	// WaitAllReduce makes the work queued after it wait for every sum
	// started before it.
	WaitAllReduce() error
}

// gradBuckets is a step's gradient all-reduce in a few contiguous spans of
// the arena: the blocks' spans in groups, each started as the backward of
// its lowest block is queued in the rank's last microbatch (the blocks
// finish from the last to the first), then the rest (the embedding, the
// skip weights) once the backward is done.
type gradBuckets struct {
	o     Overlap
	arena *backend.Tensor
	after map[int][2]int // lowest block of a group → its span [off, off+n)
	rest  [][2]int       // the spans outside every block
	err   error
}

// blocksPerBucket is how many blocks' gradients one bucket holds: the
// baseline's nine blocks in three buckets of about 5 MB each.
const blocksPerBucket = 3

// planBuckets is the bucketed all-reduce of m's gradients over o, or nil
// when the blocks' gradients do not lie in spans of their own.
func planBuckets(m *model.Model, o Overlap) *gradBuckets {
	arena := model.GradArena(m.Params())
	L := m.Cfg.NumLayers
	if arena == nil || L == 0 {
		return nil
	}
	gb := &gradBuckets{o: o, arena: arena, after: map[int][2]int{}}
	lo, _, ok := m.BlockGradRange(0)
	if !ok {
		return nil
	}
	end := lo
	for top := L - 1; top >= 0; top -= blocksPerBucket {
		low := max(top-blocksPerBucket+1, 0)
		off, _, ok := m.BlockGradRange(low)
		toff, tn, tok := m.BlockGradRange(top)
		if !ok || !tok {
			return nil
		}
		gb.after[low] = [2]int{off, toff + tn - off}
		end = max(end, toff+tn)
	}
	// The blocks' spans follow one another in block order (New lays the
	// parameters out so); what is left is before block 0 and after the
	// last block.
	for l := 1; l < L; l++ {
		prev, pn, _ := m.BlockGradRange(l - 1)
		cur, _, _ := m.BlockGradRange(l)
		if prev+pn != cur {
			return nil
		}
	}
	if lo > 0 {
		gb.rest = append(gb.rest, [2]int{0, lo})
	}
	if end < arena.Len() {
		gb.rest = append(gb.rest, [2]int{end, arena.Len() - end})
	}
	return gb
}

// start begins the span's sum (the first error is kept for finish).
func (gb *gradBuckets) start(span [2]int) {
	if gb.err == nil {
		gb.err = gb.o.StartAllReduceSum(gb.arena.Rows(span[0], span[1]))
	}
}

// hook is model.Model.OnBlockGrads for the rank's last microbatch.
func (gb *gradBuckets) hook(l int) {
	if span, ok := gb.after[l]; ok {
		gb.start(span)
	}
}

// lastMine is the index of the rank's last microbatch of a step (of the
// step's last for one device).
func (p *Parallel) lastMine(accum int) int {
	for a := accum - 1; a >= 0; a-- {
		if p.mine(a) {
			return a
		}
	}
	return -1
}

// reduceStep sums the step's gradients and loss accumulator over the
// ranks (nothing without data parallelism): the buckets started during the
// last backward, if any (gb), and the rest of the arena, else the whole
// arena at once; then the loss, which the backend's later work waits for
// with every sum before it.
func (p *Parallel) reduceStep(m *model.Model, acc *backend.Tensor, gb *gradBuckets) error {
	if p == nil {
		return nil
	}
	if gb != nil {
		for _, span := range gb.rest {
			gb.start(span)
		}
		if gb.err != nil {
			return fmt.Errorf("all-reduce of the gradients: %w", gb.err)
		}
	} else {
		arena := model.GradArena(m.Params())
		if arena == nil {
			return errors.New("data parallel: the model's gradients are not in one arena")
		}
		if err := p.Reduce.AllReduceSum(arena); err != nil {
			return fmt.Errorf("all-reduce of the gradients: %w", err)
		}
	}
	if err := p.Reduce.AllReduceSum(acc); err != nil {
		return fmt.Errorf("all-reduce of the train loss: %w", err)
	}
	return nil
}

// seqRange is rank's share [start, end) of total validation sequences, as
// eval_val splits them.
func (p *Parallel) seqRange(total int) (start, end int) {
	if p == nil {
		return 0, total
	}
	return total * p.Rank / p.Size, total * (p.Rank + 1) / p.Size
}

// runContext is the context the run goes by: ctx itself on one device;
// with several ranks a context that ends only when the ranks agree to
// stop (agree), so that every rank stops at the same step boundary
// whichever of them got the signal.
func (r *runner) runContext(ctx context.Context) context.Context {
	if r.par == nil {
		return ctx
	}
	r.signalled = ctx
	run, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r.stopRun = cancel
	return run
}

// errOtherRank is the cause of a stop that another rank's signal began.
var errOtherRank = errors.New("a signal to another rank")

// agree is the step boundary's agreement among the ranks: whether to stop
// (a signal on any rank ends the run context on all of them), whether the
// wall-clock cap is reached (by the largest elapsed time of any rank), and
// whether rank 0 saves a checkpoint now. It returns capped and save as
// every rank sees them.
func (r *runner) agree(localMs float64) (capped, save bool, err error) {
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	sig := r.signalled.Err() != nil
	// Rank 0's decision to save goes to the others in the same round.
	due := r.par.leader() && r.checkpointDue()
	v, err := r.par.Ranks.AgreeMax(r.step, []float64{flag(sig), localMs, flag(due)})
	if err != nil {
		return false, false, fmt.Errorf("step %d: the ranks' agreement: %w", r.step, err)
	}
	stop, maxMs := v[0] != 0, v[1]
	if stop {
		cause := context.Cause(r.signalled)
		if !sig {
			cause = errOtherRank
		}
		r.stopRun(cause)
	}
	capped = r.cfg.MaxWallclockSeconds > 0 && maxMs >= 1000*r.cfg.MaxWallclockSeconds
	return capped, v[2] != 0, nil
}

// follow is Run on a rank other than 0 of a data-parallel run: the same
// training, without the lock, the log, the metrics file, checkpoints or
// artifacts.
func (r *runner) follow(ctx context.Context, cfg Config, in *inputs, saved *trainstate.State, meta *stateMeta, resumePath string) (*Result, error) {
	res := &Result{RunID: cfg.RunID, Embedded: in.embedded, Iterations: cfg.Iterations}
	r.pmu.Lock()
	r.cfg, r.in, r.lg, r.res = cfg, in, &Logger{}, res
	r.pmu.Unlock()
	if meta != nil {
		r.resumed, r.resumePath, r.meta = saved, resumePath, meta
	}
	err := r.run(r.runContext(ctx))
	res.WallMs, res.TrainTimeMs = r.wallMs(), r.trainTimeMs
	return res, err
}

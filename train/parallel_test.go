package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/trainstate"
)

// The training loop's side of data parallelism, with the ranks as
// goroutines of this process, each on its own CPU backend, joined by an
// in-process exchange (the stand-in NCCL's multi-process runs are
// cuda/standin's TestDistributed tests). The exchange's sum adds the
// ranks' float32 values in rank order, as the stand-in NCCL does.

// exchange gives every rank, once all n have called it, the n values in
// rank order; a failed rank ends it for the others.
type exchange struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	gen   int
	in    []any
	count int
	out   []any
	err   error
}

func newExchange(n int) *exchange {
	e := &exchange{n: n, in: make([]any, n)}
	e.cond = sync.NewCond(&e.mu)
	return e
}

func (e *exchange) do(rank int, v any) ([]any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return nil, e.err
	}
	gen := e.gen
	e.in[rank] = v
	e.count++
	if e.count == e.n {
		e.out, e.in, e.count = e.in, make([]any, e.n), 0
		e.gen++
		e.cond.Broadcast()
		return e.out, nil
	}
	for gen == e.gen && e.err == nil {
		e.cond.Wait()
	}
	if gen == e.gen {
		return nil, e.err
	}
	return e.out, nil
}

func (e *exchange) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
	e.cond.Broadcast()
}

// localRank is one rank's Ranks and Collective over an exchange.
type localRank struct {
	e    *exchange
	rank int
	b    backend.Backend
	slow float64 // > 0: the rank reports its elapsed time times slow
}

// slowRank is the rank whose clock runRanks makes run slow (-1: none), by
// slowBy.
var slowRank, slowBy = -1, 0.0

type agreeMsg struct {
	step   int
	values []float64
}

func (l *localRank) AgreeMax(step int, values []float64) ([]float64, error) {
	values = append([]float64(nil), values...)
	if l.slow > 0 {
		values[1] *= l.slow // the elapsed time (runner.agree's order)
	}
	out, err := l.e.do(l.rank, agreeMsg{step, values})
	if err != nil {
		return nil, err
	}
	mx := make([]float64, len(values))
	for i := range mx {
		mx[i] = math.Inf(-1)
	}
	for i, o := range out {
		m := o.(agreeMsg)
		if m.step != step {
			return nil, fmt.Errorf("rank %d agrees at step %d, rank %d at %d", l.rank, step, i, m.step)
		}
		for k, v := range m.values {
			mx[k] = math.Max(mx[k], v)
		}
	}
	return mx, nil
}

func (l *localRank) SumFloat64(vals []float64) ([]float64, error) {
	out, err := l.e.do(l.rank, append([]float64(nil), vals...))
	if err != nil {
		return nil, err
	}
	sum := make([]float64, len(vals))
	for _, o := range out {
		for i, v := range o.([]float64) {
			sum[i] += v
		}
	}
	return sum, nil
}

func (l *localRank) AllReduceSum(t *backend.Tensor) error {
	out, err := l.e.do(l.rank, l.b.Download(t))
	if err != nil {
		return err
	}
	sum := make([]float32, len(out[0].([]float32)))
	for _, o := range out {
		for i, v := range o.([]float32) {
			sum[i] += v
		}
	}
	// Every rank has read every contribution before any rank goes on.
	if _, err := l.e.do(l.rank, nil); err != nil {
		return err
	}
	l.b.Upload(t, sum)
	return nil
}

// overlapRank is a localRank that also offers Overlap (started sums run
// at once: the CPU backend's work is done when queued), so that the
// bucketed all-reduce's spans are summed in the runs below; with
// plainRanks set, runRanks gives the ranks plain localRanks.
type overlapRank struct{ *localRank }

func (o overlapRank) StartAllReduceSum(t *backend.Tensor) error { return o.AllReduceSum(t) }
func (o overlapRank) WaitAllReduce() error                      { return nil }

var plainRanks bool

// rankResult is one rank's Run.
type rankResult struct {
	res *Result
	err error
}

// runRanks trains cfg on n ranks; console (may be nil) is rank 0's, and
// ctxOf gives each rank's context (nil: background).
func runRanks(t *testing.T, n int, cfg Config, console func(rank int) *stopAfterLine, ctxOf func(rank int) context.Context) []rankResult {
	t.Helper()
	model.ComputeDType = cfg.DType // set before the ranks start: they share it
	e := newExchange(n)
	out := make([]rankResult, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			b := cpu.New()
			l := &localRank{e: e, rank: r, b: b}
			if r == slowRank {
				l.slow = slowBy
			}
			ctx := context.Background()
			if ctxOf != nil {
				if c := ctxOf(r); c != nil {
					ctx = c
				}
			}
			var reduce Collective = overlapRank{l}
			if plainRanks {
				reduce = l
			}
			ctx = WithParallel(ctx, &Parallel{Rank: r, Size: n, Ranks: l, Reduce: reduce})
			var w *stopAfterLine
			if console != nil {
				w = console(r)
			}
			var res *Result
			var err error
			if w != nil {
				res, err = Run(ctx, cfg, b, w)
			} else {
				res, err = Run(ctx, cfg, b, nil)
			}
			if err != nil {
				e.fail(fmt.Errorf("rank %d: %w", r, err))
			}
			out[r] = rankResult{res, err}
		}(r)
	}
	wg.Wait()
	return out
}

// parallelConfig is resumeConfig with four microbatches a step, one chunk
// each, so that 2 and 4 ranks divide them.
func parallelConfig(t *testing.T) Config {
	c := resumeConfig(t, backend.F32)
	c.RunID = "dp"
	c.GradAccumSteps = 4
	c.MaxMicrobatchTokens = 128
	c.Iterations = 10
	c.ValLossEvery = 5
	c.Checkpoint = CheckpointConfig{Every: 4, Keep: 2}
	return c
}

// TestParallelMatchesOneDevice: 2 and 4 ranks train the same global batch
// as one device. Only the order of the gradient additions differs (each
// rank sums its microbatches, then the ranks are added), so in float32 the
// losses agree to rounding that ten steps of training amplify a little
// (measured: 5e-8 relative at most, a few float32 ulps); 1e-6 leaves a
// margin of 20 and is far below the effect of a microbatch computed by
// two ranks or by none (every loss after the first moves by more than
// 1e-3) or of a missing all-reduce.
func TestParallelMatchesOneDevice(t *testing.T) {
	base := parallelConfig(t)
	model.ComputeDType = base.DType
	one, err := Run(context.Background(), base, cpu.New(), nil)
	require.NoError(t, err)
	for _, c := range []struct {
		n     int
		plain bool
	}{{2, false}, {4, false}, {2, true}} {
		n := c.n
		name := fmt.Sprint(n)
		if c.plain {
			name += "_whole_arena"
		}
		t.Run(name, func(t *testing.T) {
			plainRanks = c.plain
			defer func() { plainRanks = false }()
			cfg := base
			cfg.OutDir = filepath.Join(t.TempDir(), "out")
			rs := runRanks(t, n, cfg, nil, nil)
			for r, x := range rs {
				require.NoError(t, x.err, "rank %d", r)
			}
			lead := rs[0].res
			require.Len(t, lead.TrainLosses, len(one.TrainLosses))
			worst := 0.0
			for i, p := range one.TrainLosses {
				worst = math.Max(worst, math.Abs(lead.TrainLosses[i].Loss/p.Loss-1))
			}
			t.Logf("%d ranks: largest relative train-loss difference to one device %.3g; val_loss %.8f against %.8f", n, worst, lead.ValLoss, one.ValLoss)
			for i, p := range one.TrainLosses {
				assert.InEpsilon(t, p.Loss, lead.TrainLosses[i].Loss, 1e-6, "train loss of step %d", p.Step)
			}
			assert.InEpsilon(t, one.ValLoss, lead.ValLoss, 1e-6, "val_loss")
			assert.InEpsilon(t, one.ValBPB, lead.ValBPB, 1e-6, "val_bpb")
			assert.InEpsilon(t, one.QValBPB, lead.QValBPB, 1e-5, "int8 round trip val_bpb")
			for r := 1; r < n; r++ {
				f := rs[r].res
				assert.Equal(t, math.Float64bits(lead.ValLoss), math.Float64bits(f.ValLoss), "rank %d's val_loss", r)
				assert.Empty(t, f.LogPath+f.ModelPath+f.QuantPath, "rank %d writes no files", r)
			}
			log, err := os.ReadFile(lead.LogPath)
			require.NoError(t, err)
			assert.Contains(t, string(log), fmt.Sprintf("\nworld_size:%d grad_accum_steps:%d\n", n, 4/n))
			assert.Equal(t, 1, strings.Count(string(log), "\nrun_id:"), "one log, rank 0's")
			checkLogFormats(t, lead.LogPath)
		})
	}
}

// TestParallelDeterministic: two runs of 2 ranks give the same bits.
func TestParallelDeterministic(t *testing.T) {
	cfg := parallelConfig(t)
	a := runRanks(t, 2, cfg, nil, nil)
	cfg.OutDir = filepath.Join(t.TempDir(), "again")
	b := runRanks(t, 2, cfg, nil, nil)
	for r := range a {
		require.NoError(t, a[r].err)
		require.NoError(t, b[r].err)
	}
	for i, p := range a[0].res.TrainLosses {
		assert.Equal(t, math.Float64bits(p.Loss), math.Float64bits(b[0].res.TrainLosses[i].Loss), "train loss of step %d", p.Step)
	}
	assert.Equal(t, math.Float64bits(a[0].res.QValBPB), math.Float64bits(b[0].res.QValBPB))
	requireSameFiles(t, a[0].res, b[0].res)
}

// TestParallelInterruptResume: a signal to rank 1 alone stops both ranks
// after the same step; rank 0 saves the state, and 2 ranks resumed from
// it end identical to the uninterrupted 2-rank run. One rank may not
// resume it.
func TestParallelInterruptResume(t *testing.T) {
	cfg := parallelConfig(t)
	straight := runRanks(t, 2, cfg, nil, nil)
	require.NoError(t, straight[0].err)

	cut := cfg
	cut.OutDir = filepath.Join(t.TempDir(), "cut")
	ctx1, cancel1 := context.WithCancelCause(context.Background())
	defer cancel1(nil)
	// Rank 0's console: the signal reaches rank 1 once rank 0 logged step 6.
	rs := runRanks(t, 2, cut, func(rank int) *stopAfterLine {
		if rank == 0 {
			return &stopAfterLine{prefix: []byte("step:6/"), cancel: cancel1}
		}
		return nil
	}, func(rank int) context.Context {
		if rank == 1 {
			return ctx1
		}
		return nil
	})
	var ie0, ie1 *Interrupted
	require.ErrorAs(t, rs[0].err, &ie0)
	require.ErrorAs(t, rs[1].err, &ie1)
	assert.Equal(t, ie0.Step, ie1.Step, "both ranks stop after the same step")
	assert.GreaterOrEqual(t, ie0.Step, 6)
	assert.ErrorIs(t, rs[1].err, errTestSignal)
	assert.ErrorIs(t, rs[0].err, errOtherRank)
	assert.Equal(t, filepath.Join(trainstate.Dir(cut.OutDir, cut.RunID), trainstate.FileName(ie0.Step)), ie0.Checkpoint)
	require.FileExists(t, ie0.Checkpoint)

	one := cut
	one.Checkpoint.Resume = "latest"
	model.ComputeDType = one.DType
	_, err := Run(context.Background(), one, cpu.New(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WORLD_SIZE=2; this one has WORLD_SIZE=1")

	resumed := runRanks(t, 2, one, nil, nil)
	require.NoError(t, resumed[0].err)
	require.NoError(t, resumed[1].err)
	require.Len(t, resumed[0].res.TrainLosses, len(straight[0].res.TrainLosses))
	for i, p := range straight[0].res.TrainLosses {
		assert.Equal(t, math.Float64bits(p.Loss), math.Float64bits(resumed[0].res.TrainLosses[i].Loss), "train loss of step %d", p.Step)
	}
	assert.Equal(t, math.Float64bits(straight[0].res.QValBPB), math.Float64bits(resumed[0].res.QValBPB))
	requireSameFiles(t, straight[0].res, resumed[0].res)
}

// TestParallelRefusals: a step's microbatches must divide among the
// ranks, before anything is written.
func TestParallelRefusals(t *testing.T) {
	cfg := parallelConfig(t)
	cfg.GradAccumSteps = 2
	rs := runRanks(t, 4, cfg, nil, nil)
	for r, x := range rs {
		require.Error(t, x.err, "rank %d", r)
		assert.Contains(t, x.err.Error(), "GRAD_ACCUM_STEPS=2 must be a multiple of WORLD_SIZE=4")
	}
	_, err := os.Stat(cfg.OutDir)
	assert.True(t, errors.Is(err, os.ErrNotExist), "nothing written")
}

// TestParallelWallclockCap: the wall-clock cap reached by one rank's
// clock alone (rank 1's elapsed time reported a million times over) stops
// both ranks after the same step, the first one trained, as train_gpt.py's
// MAX all-reduce of reached_cap does; rank 0's own clock is far below the
// cap.
func TestParallelWallclockCap(t *testing.T) {
	cfg := parallelConfig(t)
	cfg.Iterations = 1000
	cfg.MaxWallclockSeconds = 60
	cfg.ValLossEvery = 0
	slowRank, slowBy = 1, 1e6
	defer func() { slowRank, slowBy = -1, 0 }()
	rs := runRanks(t, 2, cfg, nil, nil)
	for r, x := range rs {
		require.NoError(t, x.err, "rank %d", r)
		assert.Equal(t, 1, x.res.Steps, "rank %d stops after the first step", r)
	}
	assert.Less(t, rs[0].res.TrainTimeMs, 60e3, "rank 0's own training time is below the cap")
	log, err := os.ReadFile(rs[0].res.LogPath)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^stopping_early: wallclock_cap train_time:\d+ms step:1/1000$`, string(log))
	assert.Regexp(t, `(?m)^wallclock_cap: reached by another rank's clock \(this rank's train_time:\d+ms wall:\d+ms\)$`, string(log))
}

// TestParallelBuckets: with 7 blocks the gradients go in three buckets
// (blocks 6–4, 3–1 and 0, started as blocks 4, 1 and 0 finish) and the
// rest; 2 ranks still train as one device does.
func TestParallelBuckets(t *testing.T) {
	cfg := parallelConfig(t)
	cfg.Model.NumLayers = 7
	cfg.Iterations = 4
	model.ComputeDType = cfg.DType
	m, err := model.New(cpu.New(), cfg.Model, 1)
	require.NoError(t, err)
	gb := planBuckets(m, nil)
	defer m.Free()
	require.NotNil(t, gb)
	assert.Len(t, gb.after, 3)
	for _, l := range []int{4, 1, 0} {
		assert.Contains(t, gb.after, l)
	}
	covered := 0
	for _, s := range gb.after {
		covered += s[1]
	}
	for _, s := range gb.rest {
		covered += s[1]
	}
	assert.Equal(t, gb.arena.Len(), covered, "the buckets and the rest cover the arena once")

	one, err := Run(context.Background(), cfg, cpu.New(), nil)
	require.NoError(t, err)
	cfg.OutDir = filepath.Join(t.TempDir(), "dp")
	rs := runRanks(t, 2, cfg, nil, nil)
	require.NoError(t, rs[0].err)
	require.NoError(t, rs[1].err)
	for i, p := range one.TrainLosses {
		assert.InEpsilon(t, p.Loss, rs[0].res.TrainLosses[i].Loss, 1e-6, "train loss of step %d", p.Step)
	}
}

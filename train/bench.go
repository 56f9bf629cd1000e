package train

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/cputime"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// peaker is a backend that knows its device's published peaks.
type peaker interface {
	Peak() (flops, bytesPerSec float64)
}

// rooflineMeasurer is a backend that measures its machine's roofline
// (cpu): the FLOP/s of the kernels it runs in dtype dt and the copy
// bandwidth, with a line describing them.
type rooflineMeasurer interface {
	Roofline(dt backend.DType) (flops, bytesPerSec float64, desc string)
}

// cpuRoofliner is a rooflineMeasurer that also gives its roofline per CPU
// second (cpu): the rates its threads reach with a core each, and their
// number.
type cpuRoofliner interface {
	RooflineCPU(dt backend.DType) (flops, bytesPerSec float64, threads int)
}

// hostCounter is a backend that counts what it costs the host (metal):
// dispatches, command buffers, Sync calls, drains (waits that leave the
// GPU with no committed work), partial waits and in-flight throttles.
type hostCounter interface {
	HostCounts() (dispatches, commandBuffers, syncs, drains, partialWaits, throttles uint64)
}

// hostCounts is one reading of a hostCounter.
type hostCounts [6]uint64

func readCounts(b backend.Backend) (hostCounts, bool) {
	hc, ok := b.(hostCounter)
	if !ok {
		return hostCounts{}, false
	}
	var c hostCounts
	c[0], c[1], c[2], c[3], c[4], c[5] = hc.HostCounts()
	return c, true
}

func (c hostCounts) String() string {
	return fmt.Sprintf("%d dispatches, %d command buffers, %d Sync, %d drains, %d partial waits, %d throttles",
		c[0], c[1], c[2], c[3], c[4], c[5])
}

func (c hostCounts) sub(d hostCounts) hostCounts {
	for i := range c {
		c[i] -= d[i]
	}
	return c
}

// BenchOptions selects what Bench measures.
type BenchOptions struct {
	Ops     bool          // per-op timings at the baseline shapes
	Steps   bool          // whole training steps at the small and baseline configurations
	MinTime time.Duration // per measurement
}

// opBench is one op call at the baseline shapes with its FLOP and byte
// counts (the roofline inputs).
type opBench struct {
	name         string
	flops, bytes float64
	run          func()
}

// Bench prints per-op times with achieved GFLOP/s and GB/s, and tokens/s and
// GFLOP/s of whole training steps (model.StepFLOPsPerToken), on b in dtype dt.
func Bench(w io.Writer, b backend.Backend, dt backend.DType, opt BenchOptions) error {
	if opt.MinTime <= 0 {
		opt.MinTime = time.Second
	}
	fmt.Fprintf(w, "backend:%s device:%s dtype:%s\n", b.Name(), b.Device(), dt)
	var peakFlops, peakBW float64
	if p, ok := b.(rooflineMeasurer); ok {
		var desc string
		peakFlops, peakBW, desc = p.Roofline(dt)
		fmt.Fprintf(w, "measured roofline: %s; %% of bound is the larger of the op's two ratios to it\n", desc)
	} else if p, ok := b.(peaker); ok {
		peakFlops, peakBW = p.Peak()
	}
	if _, measured := b.(rooflineMeasurer); peakFlops > 0 && !measured {
		fmt.Fprintf(w, "device peak: %.1f TFLOP/s, %.0f GB/s; %% of peak is the larger of the two ratios (the roofline bound)\n", peakFlops/1e12, peakBW/1e9)
	}
	if opt.Ops {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
		var cpuFlops, cpuBW float64
		threads := 0
		if p, ok := b.(cpuRoofliner); ok {
			cpuFlops, cpuBW, threads = p.RooflineCPU(dt)
		}
		fmt.Fprintln(tw, "op (baseline shapes: N=8192 C=512 H=8 Hkv=4 D=64 T=1024 V=1024)\tms\tcpu ms\tGFLOP/s\tGB/s\t% of peak\t% of peak (cpu)\t")
		for _, ob := range baselineOps(b, dt) {
			if err := b.Sync(); err != nil {
				return err
			}
			sec, cpuSec, err := timeItCPU(b, ob.run, opt.MinTime)
			if err != nil {
				return fmt.Errorf("%s: %w", ob.name, err)
			}
			pct := "-"
			if peakFlops > 0 {
				pct = fmt.Sprintf("%.0f%%", 100*max(ob.flops/sec/peakFlops, ob.bytes/sec/peakBW))
			}
			cpuMs, cpuPct := "-", "-"
			if cpuSec > 0 {
				cpuMs = fmt.Sprintf("%.3f", 1e3*cpuSec)
				if cpuFlops > 0 && cpuBW > 0 {
					// The op's work per CPU second times the threads, as
					// the roofline's CPU rates are counted.
					perCPU := float64(threads) / cpuSec
					cpuPct = fmt.Sprintf("%.0f%%", 100*max(ob.flops*perCPU/cpuFlops, ob.bytes*perCPU/cpuBW))
				}
			}
			fmt.Fprintf(tw, "%s\t%.3f\t%s\t%.1f\t%.1f\t%s\t%s\t\n", ob.name, 1e3*sec, cpuMs, ob.flops/sec/1e9, ob.bytes/sec/1e9, pct, cpuPct)
		}
		tw.Flush()
		fmt.Fprintln(w, "(cpu ms: the process's CPU time per call, all threads: on a shared machine the repeatable one; GFLOP/s and GB/s are per wall second;")
		fmt.Fprintln(w, " % of peak (cpu): the op's work per CPU second × threads against the roofline's, the fraction a machine to itself would show)")
	}
	if opt.Steps {
		for _, c := range []struct {
			name   string
			cfg    model.Config
			seq    int
			tokens int
		}{
			{"small (4×256, seq 256, 4096 tokens)", smallModel(), 256, 4096},
			{"baseline (9×512, seq 1024, 8192 tokens)", model.Baseline(), 1024, 8192},
		} {
			r, err := benchSteps(b, dt, c.cfg, c.seq, c.tokens, opt.MinTime)
			if err != nil {
				return fmt.Errorf("step %s: %w", c.name, err)
			}
			fmt.Fprintf(w, "train step %s: %.0f tokens/s, %.1f GFLOP/s", c.name, r.tokS, r.gflops)
			if peakFlops > 0 {
				fmt.Fprintf(w, " (%.0f%% of the peak multiply-add rate above)", 100*r.gflops*1e9/peakFlops)
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "  step %s, of which the optimizer (Muon on the matrices, Adam on the rest) %.1f ms: %.0f%%\n",
				r.step, 1e3*r.optSec, 100*r.optSec/r.step.median)
			fmt.Fprintf(w, "  fused ops %s, unfused %s, alternated step by step: fused/unfused %.3f (the medians), per pair median %.3f (%.3f–%.3f)\n",
				r.fused, r.unfused, r.fused.median/r.unfused.median, r.ratio.median, r.ratio.min, r.ratio.max)
			if r.step.n < 5 {
				fmt.Fprintln(w, "  (too few steps timed to compare runs within a few percent: raise --min-time)")
			}
			if r.counts != "" {
				fmt.Fprintf(w, "  host per step: %s\n", r.counts)
			}
		}
	}
	return nil
}

func smallModel() model.Config {
	c := model.Baseline()
	c.NumLayers, c.ModelDim, c.NumHeads, c.NumKVHeads = 4, 256, 4, 2
	return c
}

// timeItCPU runs f until minTime has passed (at least twice, the first
// call untimed) and returns wall and process CPU seconds per call (CPU 0
// where the platform does not report it), syncing every 8 calls and after
// the last, so that a GPU's queue keeps short ops back to back.
func timeItCPU(b backend.Backend, f func(), minTime time.Duration) (sec, cpuSec float64, err error) {
	f()
	if err := b.Sync(); err != nil {
		return 0, 0, err
	}
	n := 0
	c0, cpuOK := cputime.Now()
	t0 := time.Now()
	for n == 0 || time.Since(t0) < minTime {
		f()
		n++
		if n%8 == 0 || time.Since(t0) >= minTime {
			if err := b.Sync(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := b.Sync(); err != nil {
		return 0, 0, err
	}
	sec = time.Since(t0).Seconds() / float64(n)
	if c1, ok := cputime.Now(); cpuOK && ok {
		cpuSec = (c1 - c0).Seconds() / float64(n)
	}
	return sec, cpuSec, nil
}

// stepTimes is what benchSteps measured.
type stepTimes struct {
	tokS, gflops float64
	step         callTimes // whole steps, timed one by one
	optSec       float64   // the optimizer step alone, the mean of calls synced every 8
	counts       string    // host work per step, for a backend that counts it
	// fused and unfused are steps with the model's fused ops and with
	// their unfused sequences, timed alternately, one of each per pair;
	// ratio is the spread of fused/unfused over the pairs.
	fused, unfused, ratio callTimes
}

// callTimes are the seconds of n timed calls: their median, least and
// most.
type callTimes struct {
	n                int
	median, min, max float64
}

// summarize returns the median (the mean of the middle two for an even
// count), least and most of secs, which it sorts.
func summarize(secs []float64) callTimes {
	if len(secs) == 0 {
		return callTimes{}
	}
	slices.Sort(secs)
	n := len(secs)
	med := secs[n/2]
	if n%2 == 0 {
		med = (secs[n/2-1] + secs[n/2]) / 2
	}
	return callTimes{n: n, median: med, min: secs[0], max: secs[n-1]}
}

// String is "the median ms (median of n: least–most ms)".
func (c callTimes) String() string {
	return fmt.Sprintf("%.1f ms (median of %d: %.1f–%.1f)", 1e3*c.median, c.n, 1e3*c.min, 1e3*c.max)
}

// timeCalls is timeItCPU for calls long enough to time one by one (training
// steps): each call is synced and timed on its own, so that the median
// and the spread show how far a noisy machine moved them.
func timeCalls(b backend.Backend, f func(), minTime time.Duration) (callTimes, error) {
	f()
	if err := b.Sync(); err != nil {
		return callTimes{}, err
	}
	var secs []float64
	t0 := time.Now()
	for len(secs) == 0 || time.Since(t0) < minTime {
		c0 := time.Now()
		f()
		if err := b.Sync(); err != nil {
			return callTimes{}, err
		}
		secs = append(secs, time.Since(c0).Seconds())
	}
	return summarize(secs), nil
}

// timePairs times f with m's fused ops and with their unfused sequences
// (model.Unfused) in alternation, one call of each per pair and the one
// that goes first alternating too, for at least 5 pairs and 2·minTime, so
// that a machine's drift moves both alike. It returns the two series and
// the per-pair ratios fused/unfused, and leaves m fused.
func timePairs(b backend.Backend, m *model.Model, f func(), minTime time.Duration) (fused, unfused, ratio callTimes, err error) {
	defer func() { m.Unfused = false }()
	one := func(unf bool) (float64, error) {
		m.Unfused = unf
		c0 := time.Now()
		f()
		err := b.Sync()
		return time.Since(c0).Seconds(), err
	}
	for _, unf := range []bool{true, false} { // warm both
		if _, err := one(unf); err != nil {
			return fused, unfused, ratio, err
		}
	}
	var fs, us, rs []float64
	t0 := time.Now()
	for i := 0; len(fs) < 5 || time.Since(t0) < 2*minTime; i++ {
		var tf, tu float64
		for _, unf := range []bool{i%2 == 1, i%2 == 0} {
			sec, err := one(unf)
			if err != nil {
				return fused, unfused, ratio, err
			}
			if unf {
				tu = sec
			} else {
				tf = sec
			}
		}
		fs, us, rs = append(fs, tf), append(us, tu), append(rs, tf/tu)
	}
	return summarize(fs), summarize(us), summarize(rs), nil
}

// benchSteps times training steps of cfg on tokens tokens, then the
// optimizer step alone (Muon and Adam over the same gradients), and, for a
// backend that counts them, what one more step (with the loop's Sync) cost
// the host.
func benchSteps(b backend.Backend, dt backend.DType, cfg model.Config, seq, tokens int, minTime time.Duration) (stepTimes, error) {
	var r stepTimes
	s, err := newStepRig(b, dt, cfg, tokens)
	if err != nil {
		return r, err
	}
	defer s.free()
	if r.step, err = timeCalls(b, func() { s.step(seq, 1) }, minTime); err != nil {
		return r, err
	}
	if r.optSec, _, err = timeItCPU(b, func() { s.opt.Step(s.n, 1); s.n++ }, minTime); err != nil {
		return r, err
	}
	if r.fused, r.unfused, r.ratio, err = timePairs(b, s.m, func() { s.step(seq, 1) }, minTime); err != nil {
		return r, err
	}
	if before, ok := readCounts(b); ok {
		s.step(seq, 1)
		if err := b.Sync(); err != nil {
			return r, err
		}
		after, _ := readCounts(b)
		r.counts = after.sub(before).String()
	}
	r.tokS = float64(tokens) / r.step.median
	r.gflops = model.StepFLOPsPerToken(cfg, seq) * r.tokS / 1e9
	return r, nil
}

// stepRig is a model, its optimizer and one batch of random tokens on a
// backend: the training step of the benchmarks and the prediction.
type stepRig struct {
	b       backend.Backend
	m       *model.Model
	opt     *optim.Split
	ids, tg *backend.Tensor
	n       int // optimizer steps so far
}

func newStepRig(b backend.Backend, dt backend.DType, cfg model.Config, tokens int) (*stepRig, error) {
	saved := model.ComputeDType
	model.ComputeDType = dt
	m, err := model.New(b, cfg, 1)
	model.ComputeDType = saved
	if err != nil {
		return nil, err
	}
	opt, err := optim.NewSplit(b, m.Params(), optim.DefaultHyper())
	if err != nil {
		m.FreeWorkspaces()
		return nil, err
	}
	s := &stepRig{b: b, m: m, opt: opt, ids: b.New(backend.I32, tokens), tg: b.New(backend.I32, tokens)}
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]int32, tokens)
	for i := range x {
		x[i] = int32(r.IntN(cfg.VocabSize))
	}
	b.Upload(s.ids, x)
	b.Upload(s.tg, x)
	return s, nil
}

// step runs one optimizer step over chunks forward and backward passes of
// the rig's batch.
func (s *stepRig) step(seq, chunks int) {
	s.m.CastWeights()
	s.m.ZeroGrads()
	for range chunks {
		s.m.ForwardBackward(s.ids, s.tg, seq, 1/float32(chunks*s.ids.Len()))
	}
	s.opt.Step(s.n, 1)
	s.n++
}

func (s *stepRig) free() {
	s.m.FreeWorkspaces()
	s.opt.Free()
	s.b.Free(s.ids)
	s.b.Free(s.tg)
}

// predictor is a backend that predicts the time of the work it is given
// instead of running it (metal over its dry runtime).
type predictor interface {
	ResetPrediction() error
	WritePrediction(w io.Writer, title string, tokens int) error
	PredictedTotal() (flops, bytes float64, dispatches int, err error)
}

// Predict prints the predicted-time model of b (a predictor) for the
// baseline model in dtype dt: one 8,192-token step (forward, backward and
// the optimizer: MLX's published step), then the default step of 524,288
// tokens (8 microbatches of 8 chunks of 8,192 tokens, one optimizer step),
// with the host's counts of each.
func Predict(w io.Writer, b backend.Backend, dt backend.DType) error {
	p, ok := b.(predictor)
	if !ok {
		return fmt.Errorf("--predict: backend %s predicts nothing (the Metal backend's dry runtime does)", b.Name())
	}
	const seq, chunkTokens = 1024, 8192
	s, err := newStepRig(b, dt, model.Baseline(), chunkTokens)
	if err != nil {
		return err
	}
	defer s.free()
	s.step(seq, 1) // first use: workspaces, rotary tables, scratch
	for _, c := range []struct {
		title  string
		chunks int
	}{
		{fmt.Sprintf("baseline 9×512, seq %d, one %d-token step (forward, backward, optimizer), %s", seq, chunkTokens, dt), 1},
		{fmt.Sprintf("the default step: %d tokens (8 microbatches × 8 chunks of %d), one optimizer step, %s", 64*chunkTokens, chunkTokens, dt), 64},
	} {
		if err := p.ResetPrediction(); err != nil {
			return err
		}
		before, counted := readCounts(b)
		s.step(seq, c.chunks)
		if err := b.Sync(); err != nil {
			return err
		}
		if err := p.WritePrediction(w, c.title, c.chunks*chunkTokens); err != nil {
			return err
		}
		if counted {
			after, _ := readCounts(b)
			fmt.Fprintf(w, "host per step (this loop: no per-chunk loss read): %s\n", after.sub(before))
		}
		if err := writeUnfusedCost(w, p, s, seq, c.chunks); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

// writeUnfusedCost prints the cost model's totals for the step just
// predicted (fused ops) beside those of the same step with the unfused
// sequences (model.Unfused), which it then runs.
func writeUnfusedCost(w io.Writer, p predictor, s *stepRig, seq, chunks int) error {
	flops, bytes, n, err := p.PredictedTotal()
	if err != nil {
		return err
	}
	if err := p.ResetPrediction(); err != nil {
		return err
	}
	s.m.Unfused = true
	s.step(seq, chunks)
	s.m.Unfused = false
	if err := s.b.Sync(); err != nil {
		return err
	}
	uflops, ubytes, un, err := p.PredictedTotal()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "compulsory bytes: %.0f MB with the fused ops, %.0f MB with their unfused sequences (%+.1f%%); dispatches %d and %d; GFLOP %.1f and %.1f\n",
		bytes/1e6, ubytes/1e6, 100*(bytes/ubytes-1), n, un, flops/1e9, uflops/1e9)
	return nil
}

// baselineOps lists one call of each op at the baseline shapes.
func baselineOps(b backend.Backend, dt backend.DType) []opBench {
	const N, C, H, Hkv, D, T, V, F = 8192, 512, 8, 4, 64, 1024, 1024, 1024
	KV := Hkv * D
	r := rand.New(rand.NewPCG(3, 4))
	rnd := func(t *backend.Tensor, scale float32) *backend.Tensor {
		v := make([]float32, t.Len())
		for i := range v {
			v[i] = scale * float32(r.NormFloat64())
		}
		b.Upload(t, v)
		return t
	}
	act := func(shape ...int) *backend.Tensor { return rnd(b.New(dt, shape...), 1) }
	f32 := func(shape ...int) *backend.Tensor { return rnd(b.New(backend.F32, shape...), 1) }
	ids := b.New(backend.I32, N)
	idv := make([]int32, N)
	for i := range idv {
		idv[i] = int32(r.IntN(V))
	}
	b.Upload(ids, idv)
	es := float64(dt.Size())

	x, y, out, dx := act(N, C), act(N, C), act(N, C), act(N, C)
	w, wfc := rnd(b.New(dt, C, C), 0.04), rnd(b.New(dt, F, C), 0.04)
	dw, dwfc := f32(C, C), f32(F, C)
	h, dh := act(N, F), act(N, F)
	rstd, s, mix := f32(N), f32(C), f32(2, C)
	dsc, dmix, dx0 := f32(C), f32(2, C), f32(N, C)
	q, k, v := act(N, H, D), act(N, Hkv, D), act(N, Hkv, D)
	ao, lse, dq, dk, dv := act(N, H, D), f32(N, H), act(N, H, D), act(N, Hkv, D), act(N, Hkv, D)
	qrstd, gain, dgain := f32(N, H), f32(H), f32(H)
	emb, demb := rnd(b.New(dt, V, C), 0.02), f32(V, C)
	logits, dlogits, loss := act(N, V), act(N, V), f32(N)
	wm, gm, mm, vm, geff := f32(C, C), f32(C, C), f32(C, C), f32(C, C), f32(C, C)
	b.AttentionForward(ao, lse, q, k, v, T)

	tAvg := float64(T+1) / 2
	attnF := 4 * float64(N) * tAvg * float64(H*D)
	return []opBench{
		{"embedding fwd", 0, float64(N*C)*2*es + 4*N, func() { b.EmbeddingForward(x, ids, emb) }},
		{"embedding bwd", float64(N * C), float64(N*C)*(es+8) + 4*N, func() { b.EmbeddingBackward(demb, ids, x) }},
		{"rmsnorm fwd", 3 * float64(N*C), 2 * float64(N*C) * es, func() { b.RMSNormForward(out, rstd, x) }},
		{"rmsnorm bwd", 8 * float64(N*C), 4 * float64(N*C) * es, func() { b.RMSNormBackward(dx, y, x, rstd, nil) }},
		{"resid_mix fwd", 3 * float64(N*C), 3 * float64(N*C) * es, func() { b.ResidMixForward(out, x, y, mix) }},
		{"resid_mix bwd", 6 * float64(N*C), float64(N*C) * (4*es + 8), func() { b.ResidMixBackward(dx, dx0, dmix, y, x, out, mix) }},
		{"resid_mix+rmsnorm fwd (fused)", 6 * float64(N*C), 4 * float64(N*C) * es, func() { b.ResidMixRMSNormForward(out, dx, rstd, x, y, mix) }},
		{"scaled_add+rmsnorm fwd (fused)", 5 * float64(N*C), 4 * float64(N*C) * es, func() { b.ScaledAddRMSNormForward(out, dx, rstd, x, y, s) }},
		{"rmsnorm+resid_mix bwd (fused)", 14 * float64(N*C), float64(N*C) * (6*es + 8), func() { b.RMSNormResidMixBackward(dx, dx0, dmix, y, x, rstd, out, x, y, mix) }},
		{"linear fwd 512→512", 2 * float64(N*C*C), float64(2*N*C)*es + float64(C*C)*es, func() { b.LinearForward(out, x, w) }},
		{"linear bwd 512→512", 4 * float64(N*C*C), float64(3*N*C)*es + float64(C*C)*(es+8), func() { b.LinearBackward(dx, dw, y, x, w, false) }},
		{"linear fwd 512→1024", 2 * float64(N*F*C), float64(N*(C+F))*es + float64(F*C)*es, func() { b.LinearForward(h, x, wfc) }},
		{"linear bwd 512→1024", 4 * float64(N*F*C), float64(N*(2*C+F))*es + float64(F*C)*(es+8), func() { b.LinearBackward(dx, dwfc, h, x, wfc, false) }},
		{"qk_norm_rope fwd", 10 * float64(N*C), 2 * float64(N*C) * es, func() { b.QKNormRopeForward(dq, qrstd, q, gain, T, 10000) }},
		{"qk_norm_rope bwd", 20 * float64(N*C), 3 * float64(N*C) * es, func() { b.QKNormRopeBackward(dx.Reshape(N, H, D), dgain, dq, q, qrstd, gain, T, 10000) }},
		{"attention fwd", attnF, float64(N*(2*C+2*KV))*es + 4*N*H, func() { b.AttentionForward(ao, lse, q, k, v, T) }},
		{"attention bwd", 2.5 * attnF, float64(N*(4*C+4*KV))*es + 4*N*H, func() { b.AttentionBackward(dq, dk, dv, ao, q, k, v, ao, lse, T) }},
		{"scaled_add fwd", 2 * float64(N*C), 3 * float64(N*C) * es, func() { b.ScaledAddForward(out, x, y, s) }},
		{"scaled_add bwd", 3 * float64(N*C), 3 * float64(N*C) * es, func() { b.ScaledAddBackward(dx, dsc, y, x, s) }},
		{"relu_sq fwd", 2 * float64(N*F), 2 * float64(N*F) * es, func() { b.ReluSqForward(dh, h) }},
		{"relu_sq bwd", 3 * float64(N*F), 3 * float64(N*F) * es, func() { b.ReluSqBackward(dh, h, h) }},
		{"logits linear fwd", 2 * float64(N*V*C), float64(N*(C+V))*es + float64(V*C)*es, func() { b.LinearForward(logits, x, emb) }},
		{"softcap_ce fwd", 6 * float64(N*V), float64(N*V)*es + 8*N, func() { b.SoftcapCEForward(loss, logits, ids, 30) }},
		{"softcap_ce bwd", 8 * float64(N*V), 2*float64(N*V)*es + 4*N, func() { b.SoftcapCEBackward(dlogits, logits, ids, 30, 1.0/N) }},
		{"softcap_ce fwd+bwd (fused)", 14 * float64(N*V), 2*float64(N*V)*es + 8*N, func() { b.SoftcapCEForwardBackward(loss, dlogits, logits, ids, 30, 1.0/N) }},
		{"adam 512×512", 12 * float64(C*C), 20 * float64(C*C), func() {
			b.AdamStep(wm, gm, mm, vm, backend.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 1})
		}},
		{"muon momentum 512×512", 4 * float64(C*C), 20 * float64(C*C), func() { b.MuonMomentum(mm, geff, gm, 0.95) }},
		{"newton_schulz 512×512 ×5", 5 * 3 * 2 * float64(C*C*C), 5 * 6 * 4 * float64(C*C), func() { b.NewtonSchulz(wm, gm, 5) }},
	}
}

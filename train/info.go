package train

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// PolicyRow is one line of the precision policy: where an op's inputs and
// outputs live and in what dtype it computes.
type PolicyRow struct{ Op, Storage, Compute, Note string }

// PrecisionPolicy is the precision table for compute dtype cd (DESIGN.md,
// "Precision").
func PrecisionPolicy(cd backend.DType) []PolicyRow {
	c := cd.String()
	return []PolicyRow{
		{"master weights", "fp32", "-", "never modified by the per-step cast"},
		{"weight cast (once per step)", c, "fp32→" + c, "matmul operands; tok_emb copy serves gather and logits"},
		{"embedding gather", c, "-", ""},
		{"rmsnorm (block, final, q/k)", c, "fp32", "statistics fp32, saved rstd fp32"},
		{"linear x·Wᵀ", c, "fp32 accumulate", "rounded once on store"},
		{"rope + q_gain", c, "fp32", "applied to " + c + " q/k as MLX casts before RoPE"},
		{"attention (flash-style)", c, "fp32 softmax", "logsumexp saved fp32; no T×T buffer kept from forward to backward"},
		{"relu², resid-mix, scaled adds", c, "fp32", ""},
		{"logits", c, "fp32 accumulate", ""},
		{"softcap + cross-entropy", "fp32 loss", "fp32", "logits upcast before log-softmax"},
		{"activation gradients", c, "fp32", "x0 gradient accumulates in fp32"},
		{"parameter gradients", "fp32", "fp32", "accumulated across microbatches"},
		{"grad norm, finite check, unscale", "fp32", "fp32", ""},
		{"Muon momentum + Newton–Schulz", "fp32", "fp32", "as MLX"},
		{"Adam moments", "fp32", "fp32", ""},
		{"loss scaling", "-", "-", lossScalingNote(cd)},
	}
}

func lossScalingNote(cd backend.DType) string {
	if cd == backend.F16 {
		return "dynamic: 2^16, ×2 after 2000 finite steps, ×0.5 and skip on inf/NaN"
	}
	return "static scale 1 unless --loss-scale"
}

// Determinism says what backend b promises about a run repeated with the
// same configuration, seed, data and binary: that its losses, weights and
// artifacts come out bit for bit the same, or what may change them.
func Determinism(b backend.Backend) string {
	switch b.Name() {
	case "cpu":
		return "bitwise: the same configuration and seed give the same losses, weights and artifacts at any GOMAXPROCS and in every dtype " +
			"(fixed-order reductions, no atomics; tested at 1, 2 and 8 threads)"
	case "metal":
		return "bitwise run to run on one Mac (no atomics, fixed-order reductions, fast math off; tested over the MSL emulator, not yet on Apple hardware); " +
			"another GPU or macOS version may round differently (the Metal compiler, threadgroup sizes that follow a pipeline's limits)"
	case "cuda":
		return "not promised: golf's CUDA kernels use no atomics, but cuBLASLt's choice of algorithm may change with the GPU, driver and library version"
	}
	return "unknown: this backend makes no promise"
}

// MemoryPlan is the device memory a run allocates, in bytes, measured by
// running the model's and optimizer's real allocation path over a counting
// backend that performs no arithmetic. Nothing in it is freed while the run
// lasts, so Peak is the sum of the parts: the figure the run's "peak memory
// allocated" line measures on a backend that counts its tensors.
type MemoryPlan struct {
	Params          int64 // fp32 master weights
	Grads           int64 // fp32 gradient accumulators
	WeightCopies    int64 // per-step compute-dtype weight copies
	OptimizerState  int64 // Muon buffers, Adam moments, scratch
	TrainActivation int64 // saved activations + gradient buffers for a microbatch's chunk (and its shorter last chunk)
	EvalActivation  int64 // forward-only workspace for one validation batch of EvalTokens rows
	// EvalLastActivation is the workspace of the validation split's shorter
	// last batch (EvalLastTokens rows), which the model keeps beside the
	// full batch's: it caches one workspace per row count.
	EvalLastActivation int64
	Tokens             int64 // token id buffers (one pair per row count) and the device accumulators of the train losses
	Peak               int64 // everything live together
	ChunkTokens        int   // rows of a training chunk
	EvalTokens         int   // rows of a validation batch: VAL_BATCH_SIZE/GRAD_ACCUM_STEPS in whole sequences
	// EvalLastTokens is the rows of the last validation batch when it is
	// shorter than EvalTokens (0: every batch is full, or there is one). When
	// the split's length is not known (ValSeqs < 0) it is the longest such
	// batch, one sequence short of a full one.
	EvalLastTokens int
	// ValSeqs is the validation split's length in sequences of
	// TRAIN_SEQ_LEN, read from the headers of the shards ValSource matches,
	// or -1 when the shards cannot be found or read.
	ValSeqs   int
	ValSource string
}

// PlanMemory measures the memory plan of cfg. The validation split's
// length, for its shorter last batch, comes from the headers of the shards
// the run will read (valSplitSeqs; the longest such batch when they cannot
// be read). Its counting pass runs the
// real model.New, which draws each parameter's initial values on the host:
// when the machine says how much memory it has, a configuration whose
// largest parameter and bookkeeping alone exceed it is refused first.
func PlanMemory(cfg Config) (MemoryPlan, error) {
	var p MemoryPlan
	if err := cfg.Validate(); err != nil {
		return p, err
	}
	if avail, ok := hostMemory(); ok {
		e := EstimateMemory(cfg)
		if need := e.LargestParam + e.Bookkeeping; need > float64(avail.Bytes) {
			return p, refusal("planning the model", []memLine{
				{"largest parameter's initial values", e.LargestParam, knobsModel},
				{"tensor bookkeeping", e.Bookkeeping, "NUM_LAYERS"},
			}, avail, false)
		}
	}
	p.ChunkTokens = cfg.ChunkTokens()
	p.EvalTokens = cfg.EvalTokens()
	cb := &countingBackend{}
	saved := model.ComputeDType
	if saved != cfg.DType { // written only when it changes: ranks of one process share it
		model.ComputeDType = cfg.DType
	}
	m, err := model.New(cb, cfg.Model, 0)
	if saved != cfg.DType {
		model.ComputeDType = saved
	}
	if err != nil {
		return p, err
	}
	p.Params = int64(4 * model.NumParams(cfg.Model))
	p.Grads = int64(4 * model.GradArena(m.Params()).Len()) // the arena pads each gradient to 256 bytes
	inNew := cb.live - p.Params - p.Grads                  // anything else New allocates: weight copies
	mark := cb.live
	if _, err := optim.NewSplit(cb, m.Params(), cfg.Optim); err != nil {
		return p, err
	}
	if _, err := optim.ScalerFor(cb, cfg.DType, cfg.LossScale); err != nil {
		return p, err
	}
	p.OptimizerState = cb.live - mark
	mark = cb.live
	m.CastWeights()
	p.WeightCopies = inNew + cb.live - mark
	mark = cb.live

	// A microbatch that is not a whole number of chunks ends with a shorter
	// chunk, whose workspace and token buffers the model keeps beside the
	// full chunk's; likewise the validation split's shorter last batch.
	rows := []int{p.ChunkTokens}
	if tail := cfg.MicrobatchTokens() / cfg.TrainSeqLen * cfg.TrainSeqLen % p.ChunkTokens; tail > 0 {
		rows = append(rows, tail)
	}
	p.ValSeqs, p.ValSource = -1, ""
	if seqs, src, ok := valSplitSeqs(cfg); ok {
		p.ValSeqs, p.ValSource = seqs, src
	} else {
		p.ValSource = src
	}
	p.EvalLastTokens = lastEvalRows(cfg, p.ValSeqs)
	// The run uploads tokens into one (ids, targets) pair per row count
	// (stepper.tokens), shared between training chunks and validation
	// batches of the same length.
	pairs := map[int][2]*backend.Tensor{}
	pair := func(n int) [2]*backend.Tensor {
		if pr, ok := pairs[n]; ok {
			return pr
		}
		pr := [2]*backend.Tensor{cb.New(backend.I32, n), cb.New(backend.I32, n)}
		pairs[n] = pr
		return pr
	}
	evalRows := []int{p.EvalTokens}
	if p.EvalLastTokens > 0 {
		evalRows = append(evalRows, p.EvalLastTokens)
	}
	for _, n := range append(append([]int(nil), rows...), evalRows...) {
		pair(n)
	}
	cb.New(backend.F32, lossRingSteps(cfg), 2) // the train losses waiting on the device (run.go)
	p.Tokens = cb.live - mark
	mark = cb.live
	for _, n := range rows {
		pr := pair(n)
		m.LossAndGrad(pr[0], pr[1], cfg.TrainSeqLen, 1)
	}
	p.TrainActivation = cb.live - mark
	mark = cb.live
	pr := pair(p.EvalTokens)
	m.Loss(pr[0], pr[1], cfg.TrainSeqLen)
	p.EvalActivation = cb.live - mark
	mark = cb.live
	if p.EvalLastTokens > 0 {
		pr := pair(p.EvalLastTokens)
		m.Loss(pr[0], pr[1], cfg.TrainSeqLen)
		p.EvalLastActivation = cb.live - mark
	}
	p.Peak = cb.peak
	return p, nil
}

// WriteInfo prints the precision policy and the memory plan of cfg. On
// the CPU backend it also prints the host's share and the memory available,
// and returns CheckMemory's refusal after the plan when the run would not
// fit; sizes too large to plan print the closed-form lower bound instead.
func WriteInfo(w io.Writer, cfg Config, b backend.Backend, why string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	fmt.Fprintf(w, "backend: %s (%s)\ndevice:  %s\ndeterminism: %s\n\n", b.Name(), why, b.Device(), Determinism(b))
	fmt.Fprintf(w, "precision policy for --dtype %s:\n", cfg.DType)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  op\tstorage\tcompute\tnote")
	for _, r := range PrecisionPolicy(cfg.DType) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Op, r.Storage, r.Compute, r.Note)
	}
	tw.Flush()
	mc := cfg.Model
	avail, haveBudget := hostBudget(b)
	if e := EstimateMemory(cfg); haveBudget && e.Total() > float64(avail.Bytes) {
		fmt.Fprintf(w, "\nmemory lower bound (from the shapes; too large to plan): %.0f parameters (%d layers, dim %d, vocab %d), chunk %d tokens\n",
			e.Params/4, mc.NumLayers, mc.ModelDim, mc.VocabSize, cfg.ChunkTokens())
		lines := estimateLines(e)
		writeLines(w, append(lines, memLine{name: "total"}), float64(avail.Bytes), avail.Source)
		return refusal("the run", estimateLines(e), avail, true)
	}
	p, err := PlanMemory(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmemory plan: %d parameters (%d layers, dim %d, vocab %d), training chunk %d tokens\n",
		model.NumParams(mc), mc.NumLayers, mc.ModelDim, mc.VocabSize, p.ChunkTokens)
	for _, l := range evalBatchLines(cfg, p) {
		fmt.Fprintln(w, "  "+l)
	}
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	rows := []struct {
		name string
		v    int64
	}{
		{"parameters (fp32 masters)", p.Params},
		{"gradients (fp32)", p.Grads},
		{"weight copies (" + cfg.DType.String() + ")", p.WeightCopies},
		{"optimizer state (fp32)", p.OptimizerState},
		{"training activations", p.TrainActivation},
		{fmt.Sprintf("validation activations (%d tokens)", p.EvalTokens), p.EvalActivation},
	}
	if p.EvalLastTokens > 0 {
		name := fmt.Sprintf("last validation batch (%d tokens)", p.EvalLastTokens)
		if p.ValSeqs < 0 {
			name = fmt.Sprintf("last validation batch (at most %d tokens)", p.EvalLastTokens)
		}
		rows = append(rows, struct {
			name string
			v    int64
		}{name, p.EvalLastActivation})
	}
	rows = append(rows, []struct {
		name string
		v    int64
	}{
		{"token buffers", p.Tokens},
		{"peak (the run's \"peak memory allocated\")", p.Peak},
	}...)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t\n", r.name, mib(r.v))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if dp, ok := b.(devicePlanner); ok {
		fmt.Fprintln(w, "\ndevice plan:")
		for _, l := range dp.PlanLines(mc, cfg.ChunkTokens(), cfg.GradAccumSteps*cfg.NumChunks(), cfg.DType, cfg.Optim.MuonBackendSteps) {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if !haveBudget {
		return nil
	}
	host := hostLines(cfg, p, true, true)
	lines := checkedLines(cfg, p, true)
	fmt.Fprintln(w, "\nbeside the plan (the CPU backend's and the Metal backward's scratch, host copies):")
	writeLines(w, append(host, memLine{name: "total with the plan (what golf train checks)", bytes: sumLines(lines)}), float64(avail.Bytes), avail.Source)
	if sumLines(lines) > float64(avail.Bytes) {
		return refusal("the run", lines, avail, false)
	}
	return nil
}

// evalBatchLines explains the validation batches of plan p: a batch is
// VAL_BATCH_SIZE/GRAD_ACCUM_STEPS tokens cut to whole sequences, as in
// train_gpt_mlx.py's eval_val (VAL_BATCH_SIZE is the reference's global
// batch, split across its 8 GPUs, or here into GRAD_ACCUM_STEPS parts), and
// the split's last batch is shorter unless the split fills whole batches.
func evalBatchLines(cfg Config, p MemoryPlan) []string {
	T := cfg.TrainSeqLen
	batchSeqs := p.EvalTokens / T
	lines := []string{fmt.Sprintf("validation batch: %d tokens = VAL_BATCH_SIZE %d / GRAD_ACCUM_STEPS %d in whole sequences (%d of %d),",
		p.EvalTokens, cfg.ValBatchSize, cfg.GradAccumSteps, batchSeqs, T),
		"  as train_gpt_mlx.py's eval_val cuts them (train_gpt.py: per GPU and accumulation step)"}
	if p.ValSeqs < 0 {
		where := "no validation shards found"
		if p.ValSource != "" {
			where = "no readable " + p.ValSource
		}
		return append(lines, fmt.Sprintf("validation split: not known here (%s):", where),
			fmt.Sprintf("  the plan takes the longest last batch, %d sequences (%d tokens)", p.EvalLastTokens/T, p.EvalLastTokens))
	}
	lines = append(lines, fmt.Sprintf("validation split: %d sequences (from the headers of %s)", p.ValSeqs, p.ValSource))
	switch {
	case p.ValSeqs <= batchSeqs:
		lines = append(lines, "  = one batch (the plan counts a full one)")
	case p.EvalLastTokens == 0:
		lines = append(lines, fmt.Sprintf("  = %d full batches", p.ValSeqs/batchSeqs))
	default:
		lines = append(lines, fmt.Sprintf("  = %d full batches and a last one of %d sequences (%d tokens), kept beside the full one",
			p.ValSeqs/batchSeqs, p.EvalLastTokens/T, p.EvalLastTokens))
	}
	return lines
}

// devicePlanner is a GPU backend that describes how it runs a training
// step of a model: its device, memory, kernels and matrix products (the
// CUDA backend).
type devicePlanner interface {
	PlanLines(mc model.Config, rows, chunks int, dt backend.DType, nsSteps int) []string
}

// writeLines prints memory lines as a right-aligned table; a line named
// "total" without bytes gets the sum of the others. The memory available
// and its source close the table.
func writeLines(w io.Writer, lines []memLine, avail float64, source string) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	for _, l := range lines {
		if l.name == "total" && l.bytes == 0 {
			l.bytes = sumLines(lines)
		}
		fmt.Fprintf(tw, "  %s\t%s\t\n", l.name, gib(l.bytes))
	}
	fmt.Fprintf(tw, "  available (%s)\t%s\t\n", source, gib(avail))
	tw.Flush()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

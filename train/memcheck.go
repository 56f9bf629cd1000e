package train

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/data"
)

// The memory check runs in two stages, both before anything is allocated
// for the run:
//
//  1. EstimateMemory: a closed-form lower bound from the shapes alone, in
//     float64, allocating nothing. It refuses absurd sizes (1<<40 tokens, a
//     million layers) before PlanMemory's counting pass, which builds the
//     model's bookkeeping and draws its initial values on the host.
//  2. PlanMemory (exact, from the real allocation path) plus what the CPU
//     backend and the host hold beside the backend's tensors (hostLines).
//
// On the CPU backend the total is compared with the memory the machine has
// available (AvailableMemory); GPU backends compare the plan with their
// device's working set (CheckBackend).

// MemoryEstimate is a lower bound of a run's memory in bytes, from the
// shapes alone:
//
//	Params, Grads   4·P each (fp32 masters and accumulators)
//	WeightCopies    s·(V·C + L·(2·C² + 2·KV·C + 2·F·C)), s the compute dtype's size
//	OptimizerState  4·(matrix elements) + 8·(the rest): one Muon buffer, two Adam moments
//	TrainActivation s·L·N·(10·C + 3·KV + 2·F) + s·N_logits·V: the saved activations
//	                of one training chunk of N tokens
//	EvalActivation  s·M·((15 + E)·C + 3·KV + 2·F) + s·M_logits·V: one layer's
//	                activations, the E encoder outputs kept for the skips and the
//	                stream buffers of a validation batch of M tokens
//	Bookkeeping     bookkeepingPerTensor for each parameter tensor
//	ChunkList       8 bytes a chunk: the chunk sizes of a microbatch, listed each step
//
// (P parameters, V vocab, C width, KV = NUM_KV_HEADS·C/NUM_HEADS, F =
// MLP_MULT·C, L layers.) LargestParam is the biggest single parameter in
// fp32: model.New draws each parameter's initial values into a host buffer
// of that size, even on the counting backend.
type MemoryEstimate struct {
	Params, Grads, WeightCopies, OptimizerState             float64
	TrainActivation, EvalActivation, Bookkeeping, ChunkList float64
	LargestParam                                            float64
}

// bookkeepingPerTensor is the host memory a parameter costs beside its
// values: its Param, the W and G tensor headers and shapes, the compute-dtype
// copy and the optimizer's tensors (TestBookkeepingPerTensor measures about
// 590 live bytes on the counting backend, and checks this bound).
const bookkeepingPerTensor = 512

// Total is the sum of the parts.
func (e MemoryEstimate) Total() float64 {
	return e.Params + e.Grads + e.WeightCopies + e.OptimizerState + e.TrainActivation + e.EvalActivation +
		e.Bookkeeping + e.ChunkList
}

// EstimateMemory computes the lower bound of cfg's memory (see
// MemoryEstimate). cfg must be valid.
func EstimateMemory(cfg Config) MemoryEstimate {
	m := cfg.Model
	s := float64(cfg.DType.Size())
	V, C, L := float64(m.VocabSize), float64(m.ModelDim), float64(m.NumLayers)
	KV, F, H := float64(m.NumKVHeads)*C/float64(m.NumHeads), float64(m.MLPMult)*C, float64(m.NumHeads)
	S := float64(m.NumSkipWeights())
	matrices := L * (2*C*C + 2*KV*C + 2*F*C)
	params := V*C + S*C + matrices + L*(H+4*C)
	logitRows := func(n float64) float64 {
		if k := float64(m.LogitChunkTokens); k > 0 && k < n {
			return k
		}
		return n
	}
	N, M, E := float64(cfg.ChunkTokens()), float64(cfg.EvalTokens()), float64(m.NumEncoderLayers())
	return MemoryEstimate{
		Params:          4 * params,
		Grads:           4 * params,
		WeightCopies:    s * (V*C + matrices),
		OptimizerState:  4*matrices + 8*(params-matrices),
		TrainActivation: s*L*N*(10*C+3*KV+2*F) + s*logitRows(N)*V,
		EvalActivation:  s*M*((15+E)*C+3*KV+2*F) + s*logitRows(M)*V,
		Bookkeeping:     bookkeepingPerTensor * (2 + 10*L),
		ChunkList:       8 * float64(cfg.NumChunks()),
		LargestParam:    4 * max(V*C, F*C),
	}
}

// HostMemory is the memory this process may still allocate, in bytes, and
// where the figure comes from.
type HostMemory struct {
	Bytes  uint64
	Source string
}

// AvailableMemory reads the memory available to this process: on Linux the
// kernel's MemAvailable (/proc/meminfo), lowered to the room left under a
// cgroup memory limit (v2 memory.max − memory.current, or v1
// limit_in_bytes − usage_in_bytes) when one is set. ok is false where
// neither can be read (other systems): the check is then skipped.
func AvailableMemory() (m HostMemory, ok bool) {
	return availableMemory("/proc", "/sys/fs/cgroup")
}

// hostMemory is AvailableMemory, replaced by tests that need a fixed
// machine.
var hostMemory = AvailableMemory

func availableMemory(proc, cgroupRoot string) (m HostMemory, ok bool) {
	if f, err := os.Open(filepath.Join(proc, "meminfo")); err == nil {
		if kb, found := parseMemInfo(f, "MemAvailable"); found {
			m, ok = HostMemory{Bytes: kb * 1024, Source: "MemAvailable in /proc/meminfo"}, true
		}
		f.Close()
	}
	if room, src, found := cgroupRoom(proc, cgroupRoot); found && (!ok || room < m.Bytes) {
		m, ok = HostMemory{Bytes: room, Source: src}, true
	}
	return m, ok
}

// parseMemInfo returns the value (kB) of key in a /proc/meminfo listing.
func parseMemInfo(r io.Reader, key string) (kb uint64, ok bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, found := strings.Cut(sc.Text(), ":")
		if !found || name != key {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		return v, err == nil
	}
	return 0, false
}

// cgroupRoom is the memory left under this process's cgroup limit, if any.
func cgroupRoom(proc, root string) (room uint64, source string, ok bool) {
	raw, err := os.ReadFile(filepath.Join(proc, "self", "cgroup"))
	if err != nil {
		return 0, "", false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, limitFile, usageFile string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			dir, limitFile, usageFile = filepath.Join(root, parts[2]), "memory.max", "memory.current"
		case strings.Contains(","+parts[1]+",", ",memory,"): // v1
			dir, limitFile, usageFile = filepath.Join(root, "memory", parts[2]), "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		limit, okL := readUint(filepath.Join(dir, limitFile))
		usage, okU := readUint(filepath.Join(dir, usageFile))
		// v1 reports "no limit" as a huge number near 2^63.
		if !okL || !okU || limit >= 1<<62 {
			continue
		}
		if usage > limit {
			usage = limit
		}
		return limit - usage, "cgroup " + filepath.Join(dir, limitFile) + " less usage", true
	}
	return 0, "", false
}

func readUint(path string) (uint64, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(raw)), 10, 64)
	return v, err == nil // "max" (no v2 limit) does not parse
}

// memLine is one part of a memory total and the knobs that shrink it.
type memLine struct {
	name  string
	bytes float64
	knobs string
}

const (
	knobsModel = "NUM_LAYERS, MODEL_DIM, MLP_MULT or VOCAB_SIZE"
	knobsTrain = "MAX_MICROBATCH_TOKENS, NUM_LAYERS or MODEL_DIM"
	knobsEval  = "VAL_BATCH_SIZE"
	knobsSeq   = "TRAIN_SEQ_LEN"
	// The chunks of a microbatch: fewer with longer chunks.
	knobsChunks = "TRAIN_BATCH_TOKENS (or raise MAX_MICROBATCH_TOKENS or TRAIN_SEQ_LEN)"
)

func estimateLines(e MemoryEstimate) []memLine {
	return []memLine{
		{"parameters (fp32 masters)", e.Params, knobsModel},
		{"gradients (fp32)", e.Grads, knobsModel},
		{"weight copies", e.WeightCopies, knobsModel},
		{"optimizer state", e.OptimizerState, knobsModel},
		{"training activations", e.TrainActivation, knobsTrain},
		{"validation activations", e.EvalActivation, knobsEval},
		{"tensor bookkeeping", e.Bookkeeping, "NUM_LAYERS"},
		{"chunk list", e.ChunkList, knobsChunks},
	}
}

// hostLines is what the process holds beside the plan: the CPU backend's
// scratch (its float32 matmul panels, per-worker attention buffers and the
// RoPE table: only when cpuBackend), the Metal attention backward's dS
// scratch when training (within its bound), the token batches on the host, and the
// copies of the weights made while writing and checking the artifacts
// (Weights, the .npz arrays, the int8 container, its decoded round trip:
// about 12 bytes a parameter), plus a fixed allowance for the Go runtime
// and the data loader. (The shorter last validation batch is in the plan.)
func hostLines(cfg Config, plan MemoryPlan, cpuBackend, training bool) []memLine {
	m := cfg.Model
	C, V, F, D := float64(m.ModelDim), float64(m.VocabSize), float64(m.MLPMult*m.ModelDim), float64(m.HeadDim())
	T := float64(cfg.TrainSeqLen)
	rows := float64(plan.EvalTokens)
	if training {
		rows = max(rows, float64(plan.ChunkTokens))
	}
	logitRows := rows
	if k := float64(m.LogitChunkTokens); k > 0 && k < rows {
		logitRows = k
	}
	var lines []memLine
	if cpuBackend {
		// A 16-bit dtype's products keep their float32 partial sums over K
		// blocks in a panel (cpu/linear.go), up to the widest output; fp32
		// products and Muon's batched iteration need none.
		var panels float64
		if cfg.DType != backend.F32 {
			panels = 4 * max(rows*max(C, F), logitRows*V)
		}
		units := rows / T * float64(m.NumKVHeads)
		workers := min(float64(runtime.GOMAXPROCS(0)), units)
		att := cpu.AttentionScratchBytes(cfg.TrainSeqLen, m.NumHeads, m.NumKVHeads, m.HeadDim(), cfg.DType)
		lines = append(lines,
			memLine{"cpu matmul panels", panels, "MAX_MICROBATCH_TOKENS or VAL_BATCH_SIZE"},
			memLine{"cpu attention scratch", workers * float64(att), knobsSeq},
			memLine{"cpu rope table", 4 * T * D, knobsSeq})
	}
	if training {
		// The Metal backward's dS scratch (backend.AttentionDSFloats), one
		// chunk's worth, when it is within its bound.
		if ds := 4 * backend.AttentionDSFloats(plan.ChunkTokens/cfg.TrainSeqLen, cfg.TrainSeqLen, m.NumHeads); ds <= backend.AttentionDSMaxBytes {
			lines = append(lines, memLine{"attention backward dS scratch (metal)", float64(ds), "MAX_MICROBATCH_TOKENS or " + knobsSeq})
		}
	}
	lines = append(lines,
		memLine{"token batches (host)", 8 * rows, knobsTrain},
		memLine{"chunk list", 8 * float64(cfg.NumChunks()), knobsChunks},
		memLine{"artifact copies (host)", 3 * float64(plan.Params), knobsModel},
		memLine{"runtime and data loader", 256 << 20, ""})
	return lines
}

func planLines(p MemoryPlan, dt backend.DType, training bool) []memLine {
	lines := []memLine{
		{"parameters (fp32 masters)", float64(p.Params), knobsModel},
		{"gradients (fp32)", float64(p.Grads), knobsModel},
		{"weight copies (" + dt.String() + ")", float64(p.WeightCopies), knobsModel},
	}
	if training {
		lines = append(lines,
			memLine{"optimizer state (fp32)", float64(p.OptimizerState), knobsModel},
			memLine{"training activations", float64(p.TrainActivation), knobsTrain})
	}
	lines = append(lines, memLine{"validation activations", float64(p.EvalActivation), knobsEval})
	if p.EvalLastTokens > 0 {
		lines = append(lines, memLine{"last validation batch", float64(p.EvalLastActivation), knobsEval})
	}
	return append(lines, memLine{"token buffers", float64(p.Tokens), knobsTrain})
}

// checkedLines is what CheckMemory compares with the memory available: the
// plan's parts (without the optimizer and training activations for an
// evaluation) and the host's share.
func checkedLines(cfg Config, plan MemoryPlan, training bool) []memLine {
	return append(planLines(plan, cfg.DType, training), hostLines(cfg, plan, true, training)...)
}

// valSplitSeqs reads the validation split's length in sequences of
// TRAIN_SEQ_LEN from the headers of the shards a run of cfg validates on
// (no tokens are read): DATA_PATH's fineweb_val_*.bin or, when neither
// DATA_PATH nor TOKENIZER_PATH is given and DATA_PATH does not exist, the
// embedded data set's, extracted as the run extracts it (prepareInputs
// makes the same choice). ok is false when no shard is found or a header
// does not read; source is the pattern read.
func valSplitSeqs(cfg Config) (seqs int, source string, ok bool) {
	dataPath := cfg.DataPath
	if !cfg.DataPathSet && !cfg.TokenizerPathSet {
		if _, err := os.Stat(dataPath); errors.Is(err, os.ErrNotExist) {
			dp, _, err := data.ExtractEmbedded("")
			if err != nil {
				return 0, "", false
			}
			dataPath = dp
		}
	}
	pattern := valPattern(dataPath)
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		return 0, pattern, false
	}
	var total int64
	for _, f := range files {
		h, err := data.CheckShard(f)
		if err != nil {
			return 0, pattern, false
		}
		total += int64(h.NumTokens)
	}
	if total < 1 {
		return 0, pattern, true
	}
	return int((total - 1) / int64(cfg.TrainSeqLen)), pattern, true
}

// lastEvalRows is the row count of the validation split's last batch when
// it is shorter than the others (eval_val's last batch): 0 when valSeqs
// sequences fill whole batches or a single one; for an unknown split
// (valSeqs < 0) the longest it can be, a batch less one sequence.
func lastEvalRows(cfg Config, valSeqs int) int {
	T := cfg.TrainSeqLen
	batchSeqs := cfg.EvalTokens() / T
	switch {
	case batchSeqs < 1:
		return 0
	case valSeqs < 0:
		return (batchSeqs - 1) * T
	case valSeqs <= batchSeqs:
		return 0
	}
	return valSeqs % batchSeqs * T
}

func sumLines(ls []memLine) float64 {
	t := 0.0
	for _, l := range ls {
		t += l.bytes
	}
	return t
}

// refusal says that the parts in lines need more than the available
// memory, listing every part and, for the parts that make up at least an
// eighth of the total, the knobs that shrink them. bound marks a lower
// bound computed from the shapes alone.
func refusal(what string, lines []memLine, avail HostMemory, bound bool) error {
	need := sumLines(lines)
	parts := make([]string, 0, len(lines))
	for _, l := range lines {
		parts = append(parts, l.name+" "+gib(l.bytes))
	}
	byBytes := append([]memLine(nil), lines...)
	sort.SliceStable(byBytes, func(i, j int) bool { return byBytes[i].bytes > byBytes[j].bytes })
	var knobs []string
	for _, l := range byBytes {
		if l.knobs != "" && l.bytes >= need/8 {
			knobs = append(knobs, l.knobs+" ("+l.name+")")
		}
	}
	amount := gib(need) + " of memory"
	if bound {
		amount = "at least " + amount + " (a lower bound from the shapes)"
	}
	return fmt.Errorf("%s needs %s but %s is available (%s): %s; to fit, lower %s",
		what, amount, gib(float64(avail.Bytes)), avail.Source, strings.Join(parts, ", "), strings.Join(knobs, ", "))
}

// gib prints a byte count in the unit that suits it.
func gib(b float64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.1f TiB", b/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	default:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
}

// hostBudget is the memory a run on b is compared with: the machine's
// available memory for the CPU backend; none (ok false) for GPU backends,
// whose device memory CheckBackend compares with the plan, or where the
// machine does not say.
func hostBudget(b backend.Backend) (HostMemory, bool) {
	if b == nil || b.Name() != "cpu" {
		return HostMemory{}, false
	}
	return hostMemory()
}

// CheckMemory refuses, before anything is allocated, a training run whose
// memory exceeds what the machine has available (CPU backend; elsewhere it
// only checks that the plan can be computed): first the closed-form lower
// bound (EstimateMemory), then the exact plan (PlanMemory) plus the host's
// share (CPU scratch, token batches, artifact copies). The error gives the
// total, every part and the knobs that lower the largest ones. It returns
// the plan it checked.
func CheckMemory(cfg Config, b backend.Backend) (MemoryPlan, error) {
	return checkMemory(cfg, b, true)
}

func checkMemory(cfg Config, b backend.Backend, training bool) (MemoryPlan, error) {
	if err := cfg.Validate(); err != nil {
		return MemoryPlan{}, err
	}
	what := "the run"
	if !training {
		what = "evaluation"
	}
	avail, ok := hostBudget(b)
	if ok {
		if e := EstimateMemory(cfg); e.Total() > float64(avail.Bytes) {
			return MemoryPlan{}, refusal(what, estimateLines(e), avail, true)
		}
	}
	plan, err := PlanMemory(cfg)
	if err != nil {
		return plan, err
	}
	if ok {
		lines := checkedLines(cfg, plan, training)
		if sumLines(lines) > float64(avail.Bytes) {
			return plan, refusal(what, lines, avail, false)
		}
	}
	return plan, nil
}

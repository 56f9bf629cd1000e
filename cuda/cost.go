package cuda

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"unsafe"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// The CUDA cost model: what each launch of a kernel and each cuBLASLt
// matmul must do, from its arguments (the argument structs the host passes
// a kernel; M, N, K and the dtypes of a matmul). Bytes are compulsory
// traffic: every tensor a kernel reads is read once and every one it
// writes is written once (an accumulator, read and written, counts
// twice); re-reads of a tile or a row are taken to hit the caches. FLOPs
// count the useful arithmetic (a multiply-add is two; a tanh or exp a few
// dozen, as the Metal model does). The backend tallies them per kernel
// (StartCosts, Costs) on any driver; on the dry driver (OpenDry) that is
// the model's step without a GPU. Metal's twin is metal/cost.go.

// Cost is the work of one launch or matmul, or of many.
type Cost struct {
	FLOPs float64 // floating-point operations
	Bytes float64 // bytes to and from device memory
}

// Add returns c + d.
func (c Cost) Add(d Cost) Cost { return Cost{c.FLOPs + d.FLOPs, c.Bytes + d.Bytes} }

// costFunc gives a launch's cost from its argument structs (in the order
// the host passes them) and the element size es of its element type; ok
// is false when the launch does not pass the structs the formula reads.
type costFunc func(structs []unsafe.Pointer, es float64) (c Cost, ok bool)

// costOf is a formula over a kernel's one argument struct.
func costOf[A any](f func(a A, es float64) Cost) costFunc {
	return func(s []unsafe.Pointer, es float64) (Cost, bool) {
		if len(s) != 1 {
			return Cost{}, false
		}
		return f(*(*A)(s[0]), es), true
	}
}

// costOf2 is a formula over a kernel's two argument structs.
func costOf2[A, B any](f func(a A, b B, es float64) Cost) costFunc {
	return func(s []unsafe.Pointer, es float64) (Cost, bool) {
		if len(s) != 2 {
			return Cost{}, false
		}
		return f(*(*A)(s[0]), *(*B)(s[1]), es), true
	}
}

func b2f(v uint32) float64 {
	if v != 0 {
		return 1
	}
	return 0
}

// attnPairs is the number of causal (query, key) pairs of an attention
// call: B·H·T(T+1)/2.
func attnPairs(a shaders.AttentionArgs) float64 {
	T := float64(a.SeqLen)
	return float64(a.Batch) * float64(a.Heads) * T * (T + 1) / 2
}

// attnRows returns N = B·T, and the elements of q-shaped (N·H·D) and
// k-shaped (N·Hkv·D) tensors.
func attnRows(a shaders.AttentionArgs) (n, q, k float64) {
	n = float64(a.Batch) * float64(a.SeqLen)
	return n, n * float64(a.Heads) * float64(a.HeadDim), n * float64(a.KvHeads) * float64(a.HeadDim)
}

var (
	attnFwd = costOf(func(a shaders.AttentionArgs, es float64) Cost {
		n, q, k := attnRows(a)
		return Cost{4 * float64(a.HeadDim) * attnPairs(a), (2*q+2*k)*es + 4*n*float64(a.Heads)}
	})
	attnDq = costOf(func(a shaders.AttentionArgs, es float64) Cost {
		n, q, k := attnRows(a)
		return Cost{6 * float64(a.HeadDim) * attnPairs(a), (3*q+2*k)*es + 8*n*float64(a.Heads)}
	})
	attnDkv = costOf(func(a shaders.AttentionArgs, es float64) Cost {
		n, q, k := attnRows(a)
		return Cost{8 * float64(a.HeadDim) * attnPairs(a), (2*q+4*k)*es + 8*n*float64(a.Heads)}
	})
)

// ropeSide is one side (q or k) of qk_norm_rope: rows·heads heads of D.
func ropeSide(a shaders.RopeArgs) (rh, d float64) {
	return float64(a.Rows) * float64(a.Heads), float64(a.HeadDim)
}

// ropeTable is the bytes of the cos/sin table a launch reads.
func ropeTable(a shaders.RopeArgs) float64 { return 4 * float64(a.SeqLen) * float64(a.HeadDim) }

func ropeFwd(a shaders.RopeArgs, es float64) Cost {
	rh, d := ropeSide(a)
	return Cost{7 * rh * d, 2*rh*d*es + 4*rh + 4*b2f(a.HasGain)*float64(a.Heads)}
}

func ropeBwd(a shaders.RopeArgs, es float64) Cost {
	rh, d := ropeSide(a)
	return Cost{20 * rh * d, 3*rh*d*es + 8*rh + 4*b2f(a.HasGain)*float64(a.Heads)}
}

func ropeDgain(a shaders.RopeArgs) Cost {
	rh, _ := ropeSide(a)
	return Cost{rh, 4*rh + 8*float64(a.Heads)}
}

func residMixFwd(a shaders.ResidMixArgs, es float64) Cost {
	rc := float64(a.Rows) * float64(a.Cols)
	return Cost{3 * rc, 3*rc*es + 8*float64(a.Cols)}
}

// residMixBwd: dout, x, x0 read, dx written, dx0 (float) read and
// written, the mix read and the row blocks' partials written.
func residMixBwd(a shaders.ResidMixArgs, in, es float64) Cost {
	rc, c := float64(a.Rows)*float64(a.Cols), float64(a.Cols)
	return Cost{7 * rc, (in+1)*rc*es + 8*rc + 8*c + 4*ColumnRowBlocks*2*c}
}

func rmsnormFwd(a shaders.RMSNormArgs, es float64) Cost {
	rc := float64(a.Rows) * float64(a.Cols)
	return Cost{3 * rc, 2*rc*es + 4*float64(a.Rows)}
}

func rmsnormBwd(a shaders.RMSNormBwdArgs, es float64) Cost {
	rc := float64(a.Rows) * float64(a.Cols)
	return Cost{(8 + b2f(a.HasRes)) * rc, (3+b2f(a.HasRes))*rc*es + 4*float64(a.Rows)}
}

func eltwise(f func(n, es float64) Cost) costFunc {
	return costOf(func(a shaders.EltwiseArgs, es float64) Cost { return f(float64(a.N), es) })
}

// castCost is a cast from a source of element size src: read, convert,
// write.
func castCost(src float64) costFunc {
	return eltwise(func(n, es float64) Cost { return Cost{0, n * (src + es)} })
}

// kernelCosts has one formula per kernel of the registry
// (TestEveryKernelHasCost).
var kernelCosts = map[kernKey]costFunc{
	{"adam", "step"}: costOf(func(a shaders.AdamArgs, _ float64) Cost {
		n := float64(a.N)
		return Cost{12 * n, 7 * 4 * n} // p, g, m, v read; p, m, v written
	}),
	{"attention", "fwd"}:      attnFwd,
	{"attention", "fwd_d128"}: attnFwd,
	{"attention", "delta"}: costOf(func(a shaders.AttentionArgs, es float64) Cost {
		n, q, _ := attnRows(a)
		return Cost{2 * q, 2*q*es + 4*n*float64(a.Heads)}
	}),
	{"attention", "dq"}:       attnDq,
	{"attention", "dq_d128"}:  attnDq,
	{"attention", "dkv"}:      attnDkv,
	{"attention", "dkv_d128"}: attnDkv,
	{"axpy", ""}: costOf(func(a shaders.ScalarArgs, es float64) Cost {
		n := float64(a.N)
		return Cost{2 * n, n*es + 8*n}
	}),
	{"cast_from_float", ""}:  castCost(4),
	{"cast_from_half", ""}:   castCost(2),
	{"cast_from_bfloat", ""}: castCost(2),
	{"embedding", "fwd"}: costOf(func(a shaders.EmbeddingArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{0, 4*float64(a.Rows) + 2*rc*es}
	}),
	{"embedding", "bwd"}: costOf(func(a shaders.EmbeddingArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{rc, 4*float64(a.Rows) + rc*es + 8*float64(a.Vocab)*float64(a.Cols)}
	}),
	{"gemm", ""}:     gemmCost(false),
	{"gemm_f32", ""}: gemmCost(true),
	{"muon", "momentum"}: costOf(func(a shaders.MomentumArgs, _ float64) Cost {
		n := float64(a.N)
		return Cost{4 * n, 16 * n} // buf read and written, g read, geff written
	}),
	{"newton_schulz", "sumsq"}: costOf(func(a shaders.ReduceArgs, es float64) Cost {
		n := float64(a.N)
		return Cost{2 * n, n*es + 4*NewtonSchulzMaxBlocks}
	}),
	{"newton_schulz", "norm"}: costOf(func(a shaders.ReduceArgs, _ float64) Cost {
		n := float64(a.N)
		return Cost{n, 4*n + 4}
	}),
	{"newton_schulz", "scale"}: costOf(func(a shaders.NSArgs, es float64) Cost {
		n := float64(a.Rows) * float64(a.Cols)
		return Cost{n, n*es + 4*n + 4}
	}),
	{"newton_schulz", "store"}: costOf(func(a shaders.NSArgs, es float64) Cost {
		n := float64(a.Rows) * float64(a.Cols)
		return Cost{0, 4*n + n*es}
	}),
	{"qk_norm_rope", "fwd"}: costOf(func(a shaders.RopeArgs, es float64) Cost {
		return ropeFwd(a, es).Add(Cost{0, ropeTable(a)})
	}),
	{"qk_norm_rope", "bwd"}: costOf(func(a shaders.RopeArgs, es float64) Cost {
		return ropeBwd(a, es).Add(Cost{0, ropeTable(a)})
	}),
	{"qk_norm_rope", "dgain"}: costOf(func(a shaders.RopeArgs, _ float64) Cost { return ropeDgain(a) }),
	{"qk_norm_rope_pair", "fwd"}: costOf2(func(q, k shaders.RopeArgs, es float64) Cost {
		return ropeFwd(q, es).Add(ropeFwd(k, es)).Add(Cost{0, ropeTable(q)})
	}),
	{"qk_norm_rope_pair", "bwd"}: costOf2(func(q, k shaders.RopeArgs, es float64) Cost {
		return ropeBwd(q, es).Add(ropeBwd(k, es)).Add(Cost{0, ropeTable(q)})
	}),
	{"qk_norm_rope_pair", "dgain"}: costOf2(func(q, k shaders.RopeArgs, _ float64) Cost {
		return ropeDgain(q).Add(ropeDgain(k)) // a side without a dgain has 0 heads
	}),
	{"reduce", "partial"}: costOf(func(a shaders.ReduceArgs, es float64) Cost {
		n := float64(a.N)
		return Cost{2 * n, n*es + 4*ReduceMaxBlocks}
	}),
	{"reduce", "final"}: costOf(func(a shaders.ReduceArgs, _ float64) Cost {
		n := float64(a.N)
		return Cost{n, 4*n + 8}
	}),
	{"relu_sq", "fwd"}:   eltwise(func(n, es float64) Cost { return Cost{2 * n, 2 * n * es} }),
	{"relu_sq", "bwd"}:   eltwise(func(n, es float64) Cost { return Cost{3 * n, 3 * n * es} }),
	{"resid_mix", "fwd"}: costOf(residMixFwd),
	{"resid_mix", "bwd"}: costOf(func(a shaders.ResidMixArgs, es float64) Cost { return residMixBwd(a, 3, es) }),
	{"resid_mix", "dmix"}: costOf(func(a shaders.ResidMixArgs, _ float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols) // RB × 2C partials
		return Cost{rc, 4*rc + 8*float64(a.Cols)}
	}),
	{"resid_mix_rmsnorm", "fwd"}: costOf(func(a shaders.RMSNormArgs, es float64) Cost {
		// x, x0 read; mix and h written; the mix weights; rstd.
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{6 * rc, 4*rc*es + 8*float64(a.Cols) + 4*float64(a.Rows)}
	}),
	{"rmsnorm", "fwd"}: costOf(rmsnormFwd),
	{"rmsnorm", "bwd"}: costOf(rmsnormBwd),
	{"rmsnorm_resid_mix", "bwd"}: costOf2(func(nb shaders.RMSNormBwdArgs, rm shaders.ResidMixArgs, es float64) Cost {
		// rmsnorm_bwd's reads (dout, xm, dres, rstd) and resid_mix_bwd's
		// without dm: x, x0 read, dx written, dx0 read and written.
		n := rmsnormBwd(nb, es)
		rc := float64(rm.Rows) * float64(rm.Cols)
		return n.Add(residMixBwd(rm, 2, es)).Add(Cost{0, -rc * es}) // dm neither written nor read
	}),
	{"scale", ""}: costOf(func(a shaders.ScalarArgs, _ float64) Cost {
		n := float64(a.N)
		return Cost{n, 8 * n}
	}),
	{"scaled_add", "fwd"}: costOf(func(a shaders.ScaledAddArgs, es float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols)
		return Cost{2 * rc, 3*rc*es + 4*b2f(a.HasS)*float64(a.Cols)}
	}),
	{"scaled_add", "bwd"}: costOf(func(a shaders.ScaledAddArgs, es float64) Cost {
		rc, c := float64(a.Rows)*float64(a.Cols), float64(a.Cols)
		return Cost{(b2f(a.HasDy) + 2*b2f(a.HasDs)) * rc,
			(1+b2f(a.HasDs)+b2f(a.HasDy))*rc*es + 4*b2f(a.HasS)*c + 4*b2f(a.HasDs)*ColumnRowBlocks*c}
	}),
	{"scaled_add", "ds"}: costOf(func(a shaders.ScaledAddArgs, _ float64) Cost {
		rc := float64(a.Rows) * float64(a.Cols) // RB × C partials
		return Cost{rc, 4*rc + 8*float64(a.Cols)}
	}),
	{"scaled_add_rmsnorm", "fwd"}: costOf2(func(sa shaders.ScaledAddArgs, rn shaders.RMSNormArgs, es float64) Cost {
		// x, y read; out and h written; s; rstd.
		rc := float64(rn.Rows) * float64(rn.Cols)
		return Cost{5 * rc, 4*rc*es + 4*b2f(sa.HasS)*float64(rn.Cols) + 4*float64(rn.Rows)}
	}),
	{"softcap_ce", "fwd"}: costOf(func(a shaders.CEArgs, es float64) Cost {
		rv := float64(a.Rows) * float64(a.Vocab)
		return Cost{30 * rv, rv*es + 8*float64(a.Rows)}
	}),
	{"softcap_ce", "bwd"}: costOf(func(a shaders.CEArgs, es float64) Cost {
		rv := float64(a.Rows) * float64(a.Vocab)
		return Cost{55 * rv, 2*rv*es + 4*float64(a.Rows)}
	}),
	{"softcap_ce", "fused"}: costOf(func(a shaders.CEArgs, es float64) Cost {
		rv := float64(a.Rows) * float64(a.Vocab)
		return Cost{55 * rv, 2*rv*es + 8*float64(a.Rows)}
	}),
	{"zero", ""}: eltwise(func(n, es float64) Cost { return Cost{0, n * es} }),
}

// gemmCost is d = alpha·op(a)·op(b) + beta·c: 2·M·N·K FLOPs; a and b read,
// d written, c read when beta ≠ 0; d and c are float for gemm_f32.
func gemmCost(f32Out bool) costFunc {
	return costOf(func(a shaders.GemmArgs, es float64) Cost {
		out := es
		if f32Out {
			out = 4
		}
		return Cost{2 * float64(a.M) * float64(a.N) * float64(a.K),
			matmulBytes(float64(a.M), float64(a.N), float64(a.K), es, out, a.Beta != 0)}
	})
}

func matmulBytes(m, n, k, in, out float64, readC bool) float64 {
	c := 1.0
	if readC {
		c = 2
	}
	return (m*k+k*n)*in + c*m*n*out
}

// MatmulCost is a cuBLASLt matmul's cost: 2·M·N·K FLOPs; A and B read in
// their dtype, D written and, when beta ≠ 0, C read in theirs.
func MatmulCost(g GEMM) Cost {
	m, n, k := float64(g.M), float64(g.N), float64(g.K)
	return Cost{2 * m * n * k, matmulBytes(m, n, k, float64(g.AB.Size()), float64(g.CD.Size()), g.Beta != 0)}
}

// KernelCost is what one kernel (a host name, or a cuBLASLt matmul's
// shape) did in a tally.
type KernelCost struct {
	Name  string
	Calls int
	Cost  Cost
	// Tensor marks tensor-core work (the tc kernels, and matmuls, in
	// bf16 or fp16): its FLOPs run at the tensor cores' rate.
	Tensor bool
}

// CostTally is the cost of the launches and matmuls since StartCosts.
type CostTally struct {
	Kernels           []KernelCost // by bytes, descending
	Launches, Matmuls int
	Total             Cost
	// Uncosted lists the kernels launched without the argument structs
	// their formula reads (none, unless a formula and its host code
	// disagree): their calls are counted, their cost is not.
	Uncosted []string
}

// costTally accumulates a tally by name.
type costTally struct {
	byName   map[string]*KernelCost
	launches int
	matmuls  int
	uncosted map[string]bool
}

func newCostTally() *costTally {
	return &costTally{byName: map[string]*KernelCost{}, uncosted: map[string]bool{}}
}

func (t *costTally) add(name string, c Cost, tensor bool) *KernelCost {
	k := t.byName[name]
	if k == nil {
		k = &KernelCost{Name: name, Tensor: tensor}
		t.byName[name] = k
	}
	k.Calls++
	k.Cost = k.Cost.Add(c)
	return k
}

// costLaunch tallies one launch of kn for element type index i with the
// argument structs of args.
func (b *Backend) costLaunch(kn *kern, i int, args []any) {
	var buf [4]unsafe.Pointer
	structs := buf[:0]
	for _, a := range args {
		if p, ok := a.(unsafe.Pointer); ok {
			structs = append(structs, p)
		}
	}
	t := b.costs
	t.launches++
	f, known := kernelCosts[kernKey{kn.k.Op, kn.k.Dir}]
	var c Cost
	if known {
		c, known = f(structs, elemSize(ElemTypes[i]))
	}
	if !known {
		t.uncosted[kn.name[i]] = true
	}
	t.add(kn.name[i], c, kn.k.Compiled(b.flavour, ElemTypes[i]) == TC)
}

// costMatmul tallies one cuBLASLt matmul.
func (b *Backend) costMatmul(g GEMM) {
	b.costs.matmuls++
	name := fmt.Sprintf("cublaslt %v→%v %d×%d×%d", g.AB, g.CD, g.M, g.N, g.K)
	if g.TransA {
		name += " Aᵀ"
	}
	if g.TransB {
		name += " Bᵀ"
	}
	if g.Beta != 0 {
		name += " +C"
	}
	b.costs.add(name, MatmulCost(g), g.AB == backend.BF16 || g.AB == backend.F16)
}

// elemSize is the bytes of a kernel element type.
func elemSize(elem string) float64 {
	if elem == "float" {
		return 4
	}
	return 2
}

// StartCosts starts a new tally of the cost of every launch and matmul
// the backend makes from now on (on a dry backend, OpenDry, the tally is
// on from the start). Costing is host arithmetic only; the device work is
// unchanged.
func (b *Backend) StartCosts() { b.costs = newCostTally() }

// StopCosts ends the tally.
func (b *Backend) StopCosts() { b.costs = nil }

// Costs returns the tally since StartCosts (or since OpenDry): per
// kernel, the calls, bytes and FLOPs, and the totals. Without a tally it
// is empty.
func (b *Backend) Costs() CostTally {
	var out CostTally
	t := b.costs
	if t == nil {
		return out
	}
	out.Launches, out.Matmuls = t.launches, t.matmuls
	for _, k := range t.byName {
		out.Kernels = append(out.Kernels, *k)
		out.Total = out.Total.Add(k.Cost)
	}
	sort.Slice(out.Kernels, func(i, j int) bool {
		a, c := out.Kernels[i], out.Kernels[j]
		if a.Cost.Bytes != c.Cost.Bytes {
			return a.Cost.Bytes > c.Cost.Bytes
		}
		return a.Name < c.Name
	})
	for n := range t.uncosted {
		out.Uncosted = append(out.Uncosted, n)
	}
	sort.Strings(out.Uncosted)
	return out
}

// Chip is a GPU's published peaks, for the roofline bound of a tally.
type Chip struct {
	Name string
	// TensorFLOPS is the dense bf16/fp16 tensor-core rate, FP32FLOPS the
	// CUDA cores' float rate, Bandwidth the memory's bytes per second.
	TensorFLOPS, FP32FLOPS, Bandwidth float64
}

// Chips are the GPUs the bound is printed for (NVIDIA's datasheets: H100
// SXM and H200 SXM, dense, no sparsity).
var Chips = []Chip{
	{"H100 SXM", 989.4e12, 66.9e12, 3.35e12},
	{"H200", 989.4e12, 66.9e12, 4.8e12},
}

// Bound is the roofline's lower bound on the time of k on ch: the larger
// of its FLOPs at the peak of their class and its bytes at the memory's
// bandwidth (no launch overhead, every unit at its limit).
func (ch Chip) Bound(k KernelCost) float64 {
	peak := ch.FP32FLOPS
	if k.Tensor {
		peak = ch.TensorFLOPS
	}
	return max(k.Cost.FLOPs/peak, k.Cost.Bytes/ch.Bandwidth)
}

// ResetPrediction starts a new tally (as StartCosts), so that a step
// after a warm-up one is costed alone (train.Predict's interface).
func (b *Backend) ResetPrediction() error {
	b.StartCosts()
	return nil
}

// PredictedTotal is the tally's total since the last ResetPrediction
// (or StartCosts): FLOPs, compulsory bytes and launches plus matmuls
// (train.Predict's interface).
func (b *Backend) PredictedTotal() (flops, bytes float64, dispatches int, err error) {
	if b.costs == nil {
		return 0, 0, 0, errNoTally
	}
	t := b.Costs()
	return t.Total.FLOPs, t.Total.Bytes, t.Launches + t.Matmuls, nil
}

var errNoTally = errors.New("cuda: no cost tally: call StartCosts (or open a dry backend, OpenDry)")

// WritePrediction prints the tally from the CUDA cost model: per kernel,
// calls, GFLOP, MB of compulsory traffic and the roofline bound on each
// chip of Chips, then the totals and tokens/s at the bound for tokens per
// step (train.Predict's interface).
func (b *Backend) WritePrediction(w io.Writer, title string, tokens int) error {
	if b.costs == nil {
		return errNoTally
	}
	t := b.Costs()
	fmt.Fprintf(w, "compulsory bytes and FLOPs from the CUDA cost model (a model, not a measurement): %s\n", title)
	fmt.Fprintf(w, "bound: t = max(FLOPs/peak, bytes/bandwidth) per kernel at 100%% of each peak, no launch overhead\n")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "kernel\tcalls\tGFLOP\tMB\t")
	for _, ch := range Chips {
		fmt.Fprintf(tw, "%s ms\t", ch.Name)
	}
	fmt.Fprintln(tw)
	bounds := make([]float64, len(Chips))
	for _, k := range t.Kernels {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f\t", k.Name, k.Calls, k.Cost.FLOPs/1e9, k.Cost.Bytes/1e6)
		for i, ch := range Chips {
			s := ch.Bound(k)
			bounds[i] += s
			fmt.Fprintf(tw, "%.3f\t", 1e3*s)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "total\t%d\t%.1f\t%.1f\t", t.Launches+t.Matmuls, t.Total.FLOPs/1e9, t.Total.Bytes/1e6)
	for i := range Chips {
		fmt.Fprintf(tw, "%.2f\t", 1e3*bounds[i])
	}
	fmt.Fprintln(tw)
	tw.Flush()
	fmt.Fprintf(w, "%d kernel launches, %d cuBLASLt matmuls\n", t.Launches, t.Matmuls)
	for i, ch := range Chips {
		if bounds[i] > 0 {
			fmt.Fprintf(w, "%s: at most %.0f tokens/s (%d tokens in %.2f ms)\n", ch.Name, float64(tokens)/bounds[i], tokens,
				1e3*bounds[i])
		}
	}
	writeFamilyPrediction(w, t, tokens)
	if len(t.Uncosted) > 0 {
		fmt.Fprintf(w, "warning: launches without their formula's arguments, not costed: %v\n", t.Uncosted)
	}
	return nil
}

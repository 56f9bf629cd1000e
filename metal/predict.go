package metal

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// The predicted-time model: until golf runs on a Mac, an estimate of each
// kernel's time on each chip of the table from its FLOP and byte counts
// (cost.go) and the chip's published peaks (peak.go). It is a model, not a
// measurement. Per dispatch of a kernel of family F (efficiency.go):
//
//	t = max(FLOPs / (peak FLOP/s · F.Compute · s),
//	        bytes / (bandwidth · F.Bandwidth)) + DispatchOverhead
//
// with s = 1/BF16EmulationFactor for bf16 kernels on chips without native
// bfloat (M1, M2), else 1. The command-buffer policy (stream.go), which
// sees costs but not kernels, plans buffers with the flat planning
// efficiencies below (Chip.Predict).

// Assumptions of the model.
const (
	// ComputeEfficiency and BandwidthEfficiency are the flat fractions of
	// the peaks the command-buffer planner bounds a dispatch with (it
	// does not know the dispatch's family). The prediction itself uses
	// each family's own fractions (efficiency.go).
	ComputeEfficiency   = 0.6
	BandwidthEfficiency = 0.8
	// DispatchOverhead is the GPU-side cost of one dispatch in a serial
	// compute encoder (launch and drain between dependent dispatches).
	DispatchOverhead = 4e-6
	// BF16EmulationFactor slows bf16 arithmetic on M1 and M2, where it goes
	// through fp32 (bf16 matmuls measured 1.5–1.8× slower than fp16).
	BF16EmulationFactor = 1.65
)

// MLX's published figure for the stock train_gpt_mlx.py on an M3 MacBook
// Air 16 GB (bf16, baseline model): 1,024 ms per 8,192-token step.
const (
	mlxStepMs     = 1024
	mlxStepTokens = 8192
	mlxChip       = "M3"
)

// Predict is the planner's time in seconds for one dispatch of cost c on
// the chip at the flat planning efficiencies; bf16 says the kernel
// computes on bfloat data.
func (ch Chip) Predict(c Cost, bf16 bool) float64 {
	return ch.predictAt(c, ComputeEfficiency, BandwidthEfficiency, bf16)
}

// PredictFamily is the model's time in seconds for one dispatch of cost c
// of a kernel of family f on the chip.
func (ch Chip) PredictFamily(c Cost, f *Family, bf16 bool) float64 {
	return ch.predictAt(c, f.Compute, f.Bandwidth, bf16)
}

func (ch Chip) predictAt(c Cost, computeEff, bandwidthEff float64, bf16 bool) float64 {
	compute := c.FLOPs / (ch.FLOPS * computeEff)
	if bf16 && ch.BF16Emulated {
		compute *= BF16EmulationFactor
	}
	memory := c.Bytes / (ch.Bandwidth * bandwidthEff)
	return max(compute, memory) + DispatchOverhead
}

var errNotDry = errors.New("metal: a prediction needs the dry runtime (NewDryRuntime)")

// ResetPrediction forgets the dispatches recorded so far by the dry
// runtime under b (to leave out a warm-up step).
func (b *Backend) ResetPrediction() error {
	r, ok := b.rt.(*goRuntime)
	if !ok || !r.tracing {
		return errNotDry
	}
	r.trace = r.trace[:0]
	return nil
}

// Prediction is the model applied to the dispatches recorded since the
// last ResetPrediction.
type Prediction struct {
	Kernels  []KernelPrediction // by total predicted time on the slowest chip, descending
	Families []FamilyPrediction // the families with dispatches, in the order of Families
	Chips    []ChipPrediction   // in the order of Chips
	// CommandBuffers is how many command buffers the dispatches went into
	// (split for the runtime's planning chip); Unknown counts dispatches
	// costed by bound bytes because their kernel has no formula.
	CommandBuffers, Dispatches, Unknown int
	Total                               Cost
}

// KernelPrediction is one kernel (op, direction, element type).
type KernelPrediction struct {
	Name    string // e.g. "gemm_bfloat"
	Calls   int
	Cost    Cost
	Seconds []float64 // per chip, in the order of Chips
}

// FamilyPrediction is the dispatches of one kernel family.
type FamilyPrediction struct {
	Family  *Family
	Calls   int
	Cost    Cost
	Seconds []float64 // per chip, in the order of Chips
}

// ChipPrediction is the recorded stream on one chip.
type ChipPrediction struct {
	Chip                  Chip
	Seconds               float64 // all dispatches
	MaxBuffer, MeanBuffer float64 // seconds per command buffer
	// MaxDispatch is the longest single dispatch: a command buffer holds
	// at least one, so no bound on buffers goes below it.
	MaxDispatch float64
}

// Predict applies the model to the dispatches recorded by the dry runtime
// under b since the last ResetPrediction.
func (b *Backend) Predict() (Prediction, error) {
	r, ok := b.rt.(*goRuntime)
	if !ok || !r.tracing {
		return Prediction{}, errNotDry
	}
	var p Prediction
	byName := map[string]*KernelPrediction{}
	byFamily := map[*Family]*FamilyPrediction{}
	buffers := map[uint64][]float64{} // serial → seconds per chip
	maxDispatch := make([]float64, len(Chips))
	for _, d := range r.trace {
		name := d.info.kernel.Op
		if d.info.kernel.Dir != "" {
			name += "_" + d.info.kernel.Dir
		}
		name += "_" + d.info.elem
		kp := byName[name]
		if kp == nil {
			kp = &KernelPrediction{Name: name, Seconds: make([]float64, len(Chips))}
			byName[name] = kp
		}
		kp.Calls++
		kp.Cost = kp.Cost.Add(d.cost)
		bs := buffers[d.serial]
		if bs == nil {
			bs = make([]float64, len(Chips))
			buffers[d.serial] = bs
		}
		fam := modelFamily(d.info.family)
		fp := byFamily[fam]
		if fp == nil {
			fp = &FamilyPrediction{Family: fam, Seconds: make([]float64, len(Chips))}
			byFamily[fam] = fp
		}
		fp.Calls++
		fp.Cost = fp.Cost.Add(d.cost)
		for i, ch := range Chips {
			t := ch.PredictFamily(d.cost, fam, d.info.elem == "bfloat")
			kp.Seconds[i] += t
			fp.Seconds[i] += t
			bs[i] += t
			maxDispatch[i] = max(maxDispatch[i], t)
		}
		p.Dispatches++
		p.Total = p.Total.Add(d.cost)
		if !d.known {
			p.Unknown++
		}
	}
	p.CommandBuffers = len(buffers)
	for i, ch := range Chips {
		cp := ChipPrediction{Chip: ch, MaxDispatch: maxDispatch[i]}
		for _, bs := range buffers {
			cp.Seconds += bs[i]
			cp.MaxBuffer = max(cp.MaxBuffer, bs[i])
		}
		if len(buffers) > 0 {
			cp.MeanBuffer = cp.Seconds / float64(len(buffers))
		}
		p.Chips = append(p.Chips, cp)
	}
	slow := 0
	for i, c := range Chips {
		if c.Name == slowestChip.Name {
			slow = i
		}
	}
	for _, f := range Families {
		if fp := byFamily[f]; fp != nil {
			p.Families = append(p.Families, *fp)
		}
	}
	for _, kp := range byName {
		p.Kernels = append(p.Kernels, *kp)
	}
	sort.Slice(p.Kernels, func(i, j int) bool {
		a, c := p.Kernels[i], p.Kernels[j]
		if a.Seconds[slow] != c.Seconds[slow] {
			return a.Seconds[slow] > c.Seconds[slow]
		}
		return a.Name < c.Name
	})
	return p, nil
}

// Chip returns the prediction for the named chip.
func (p Prediction) Chip(name string) (ChipPrediction, bool) {
	for _, c := range p.Chips {
		if c.Chip.Name == name {
			return c, true
		}
	}
	return ChipPrediction{}, false
}

// WritePrediction prints the prediction of the recorded dispatches: per
// kernel, then per chip (time per step, tokens/s for tokens per step, the
// command buffers), with the model's assumptions and, for steps of MLX's
// size, the comparison with MLX's published M3 figure.
func (b *Backend) WritePrediction(w io.Writer, title string, tokens int) error {
	p, err := b.Predict()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "predicted time (a model, not a measurement): %s\n", title)
	fmt.Fprintf(w, "model: t = max(FLOPs/(peak·compute efficiency), bytes/(bandwidth·bandwidth efficiency)) + %.0f µs per dispatch, efficiencies per kernel family (table below); bf16 compute ×%.2f on M1/M2; bytes are compulsory traffic\n",
		DispatchOverhead*1e6, BF16EmulationFactor)
	show := []string{"M1", "M2", "M3", "M4", "M3 Max"}
	idx := make([]int, len(show))
	for i, n := range show {
		for j, c := range Chips {
			if c.Name == n {
				idx[i] = j
			}
		}
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "kernel\tcalls\tGFLOP\tMB\t")
	for _, n := range show {
		fmt.Fprintf(tw, "%s ms\t", n)
	}
	fmt.Fprintln(tw)
	for _, k := range p.Kernels {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f\t", k.Name, k.Calls, k.Cost.FLOPs/1e9, k.Cost.Bytes/1e6)
		for _, i := range idx {
			fmt.Fprintf(tw, "%.2f\t", 1e3*k.Seconds[i])
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "total\t%d\t%.1f\t%.0f\t", p.Dispatches, p.Total.FLOPs/1e9, p.Total.Bytes/1e6)
	for _, i := range idx {
		fmt.Fprintf(tw, "%.1f\t", 1e3*p.Chips[i].Seconds)
	}
	fmt.Fprintln(tw)
	tw.Flush()
	fmt.Fprintln(w, "predicted time per kernel family (efficiencies: fractions of the FLOP peak and of the bandwidth; sources in metal/efficiency.go and docs/metal.md):")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "family\tcalls\tGFLOP\tMB\tcompute\tbandwidth\t")
	for _, n := range show {
		fmt.Fprintf(tw, "%s ms\t", n)
	}
	fmt.Fprintln(tw)
	for _, f := range p.Families {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f\t%.2f\t%.2f\t", f.Family.Name, f.Calls, f.Cost.FLOPs/1e9, f.Cost.Bytes/1e6, f.Family.Compute, f.Family.Bandwidth)
		for _, i := range idx {
			fmt.Fprintf(tw, "%.2f\t", 1e3*f.Seconds[i])
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d dispatches in %d command buffers (split for the %s: ≤ %d dispatches, %.0f MiB, %.0f ms each)\n",
		p.Dispatches, p.CommandBuffers, b.rt.(*goRuntime).s.policy.chip.Name, defaultMaxDispatches, float64(defaultMaxBytes)/(1<<20), defaultMaxSeconds*1e3)
	if p.Unknown > 0 {
		fmt.Fprintf(w, "warning: %d dispatches of kernels without a cost formula were costed by their bound bytes\n", p.Unknown)
	}
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "chip\tGPU cores\tTFLOP/s\tGB/s\tms/step\ttokens/s\tms/buffer mean\tmax\t")
	for _, c := range p.Chips {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.1f\t%.0f\t%.2f\t%.2f\t\n", c.Chip.Name, c.Chip.GPUCores, c.Chip.FLOPS/1e12, c.Chip.Bandwidth/1e9,
			1e3*c.Seconds, float64(tokens)/c.Seconds, 1e3*c.MeanBuffer, 1e3*c.MaxBuffer)
	}
	tw.Flush()
	if tokens == mlxStepTokens {
		if m3, ok := p.Chip(mlxChip); ok {
			fmt.Fprintf(w, "MLX train_gpt_mlx.py on an M3 MacBook Air 16 GB (measured, published): %d ms per %d-token step; predicted here for the %s: %.0f ms (%.1f× MLX's time)\n",
				mlxStepMs, mlxStepTokens, mlxChip, 1e3*m3.Seconds, 1e3*m3.Seconds/mlxStepMs)
		}
	}
	return nil
}

package cuda

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// The predicted-time model of the Metal backend (metal/efficiency.go),
// applied to the CUDA tally: per kernel of family F,
//
//	t = max(FLOPs / (peak · F.Compute), bytes / (bandwidth · F.Bandwidth))
//
// with the peak of the kernel's class (tensor cores or the CUDA cores'
// float rate, Chip). No launch overhead is added: the efficiencies that
// are measured come from per-op timings that include it. It is a model,
// not a measurement; its error against the one step measured on a GPU
// (MeasuredStep) is printed beside it.

// CUDAFamily is a class of CUDA kernels with the fractions of the peaks it
// is predicted at. Where Measured, the fractions come from golf bench on
// an H200 (docs/cuda.md, "Measured on an NVIDIA H200") and Low, High from
// the ends of the measured range of the fraction that binds (Compute for
// matmuls and attention, Bandwidth for the rest); elsewhere they are
// assumed.
type CUDAFamily struct {
	Name               string
	Compute, Bandwidth float64
	Low, High          float64 // the binding fraction's measured range (Low = High = it where one figure)
	Measured           bool
	Source             string
}

const h200Peak = 989.4e12 // bf16 dense tensor FLOP/s of Chips' H200

// The families and their sources.
var (
	cudaGEMM16 = &CUDAFamily{"cuBLASLt matmuls, 16-bit operands", 152e12 / h200Peak, 1, 93e12 / h200Peak, 250e12 / h200Peak, true,
		"golf bench on an H200: linear layers through cuBLASLt at 93–250 TFLOP/s at the baseline shapes; 152 TFLOP/s, their geometric mean, as the central figure (per-shape rates not recorded)"}
	cudaGEMM32 = &CUDAFamily{"cuBLASLt matmuls, float (Newton–Schulz)", 5.6e12 / 66.9e12, 1, 5.6e12 / 66.9e12, 5.6e12 / 66.9e12, true,
		"golf bench on an H200: Newton–Schulz of one 512×512 matrix, 5 iterations, 0.72 ms = 5.6 TFLOP/s of the 66.9 TFLOP/s float peak (its scale and norm kernels included)"}
	cudaAttnFwd = &CUDAFamily{"attention forward (tc)", 38e12 / h200Peak, 1, 38e12 / h200Peak, 38e12 / h200Peak, true,
		"golf bench on an H200: attention forward 0.225 ms at N = 8,192, 38 TFLOP/s (4·D FLOPs per causal pair, as the cost model counts), measured on the forward before attention_fwd_fa2 (D = 64), which has not run on a GPU"}
	// The bench counts the backward as 2.5× the forward's FLOPs (31
	// TFLOP/s in 0.683 ms); the cost model counts dQ and dK/dV at 6·D and
	// 8·D per pair, 3.5×: the same time is 3.5/2.5 · 31 TFLOP/s of its
	// FLOPs.
	cudaAttnBwd = &CUDAFamily{"attention backward dQ, dK/dV (tc)", 3.5 / 2.5 * 31e12 / h200Peak, 1, 3.5 / 2.5 * 31e12 / h200Peak, 3.5 / 2.5 * 31e12 / h200Peak, true,
		"golf bench on an H200: attention backward 0.683 ms at N = 8,192, 31 TFLOP/s of 2.5× the forward's FLOPs, that is 43 TFLOP/s of the cost model's 14·D per pair (δ's kernel included in that time)"}
	cudaRows = &CUDAFamily{"row and element-wise kernels", 0.5, 0.95e12 / 4.8e12, 0.5e12 / 4.8e12, 1.8e12 / 4.8e12, true,
		"golf bench on an H200: element-wise ops move 0.5–1.8 TB/s; 0.95 TB/s, their geometric mean, as the central figure (per-op rates not recorded); the compute fraction 0.5 is assumed"}
)

// CUDAFamilies lists the families in the order the prediction prints them.
var CUDAFamilies = []*CUDAFamily{cudaGEMM16, cudaGEMM32, cudaAttnFwd, cudaAttnBwd, cudaRows}

// MeasuredStep is the one training step measured on a GPU (docs/cuda.md):
// golf at commit e36ca81 on an H200, the baseline's default 524,288-token
// step in bf16, tc kernels and cuBLASLt, 745.4 ms (steps 21–40 of 40).
const (
	MeasuredStepMs     = 745.4
	MeasuredStepTokens = 524288
	MeasuredStepChip   = "H200"
)

// CUDAFamilyOf is the family of a tally's kernel or matmul by its name.
func CUDAFamilyOf(name string) *CUDAFamily {
	switch {
	case strings.HasPrefix(name, "cublaslt fp32"):
		return cudaGEMM32
	case strings.HasPrefix(name, "cublaslt"), strings.HasPrefix(name, "gemm"):
		return cudaGEMM16
	case strings.HasPrefix(name, "attention_fwd"):
		return cudaAttnFwd
	case strings.HasPrefix(name, "attention_dq"), strings.HasPrefix(name, "attention_dkv"):
		return cudaAttnBwd
	}
	return cudaRows
}

// PredictFamily is the model's time in seconds for k on ch at the fractions
// compute and bandwidth of the peaks.
func (ch Chip) PredictFamily(k KernelCost, compute, bandwidth float64) float64 {
	peak := ch.FP32FLOPS
	if k.Tensor {
		peak = ch.TensorFLOPS
	}
	return max(k.Cost.FLOPs/(peak*compute), k.Cost.Bytes/(ch.Bandwidth*bandwidth))
}

// predictAt is k's time on ch with its family's fractions, the binding one
// at its measured low (at = -1), central (0) or high (1) value.
func (f *CUDAFamily) predictAt(ch Chip, k KernelCost, at int) float64 {
	c, b := f.Compute, f.Bandwidth
	bind := &c
	if f == cudaRows {
		bind = &b
	}
	switch at {
	case -1:
		*bind = f.Low
	case 1:
		*bind = f.High
	}
	return ch.PredictFamily(k, c, b)
}

// writeFamilyPrediction prints the model per family and per chip, and, for
// a step of the measured size, the prediction beside the measurement.
func writeFamilyPrediction(w io.Writer, t CostTally, tokens int) {
	fmt.Fprintln(w, "predicted time per kernel family (a model, not a measurement): t = max(FLOPs/(peak·compute), bytes/(bandwidth·bandwidth)); fractions measured by golf bench on an H200 where marked, applied unchanged to the H100")
	type row struct {
		calls       int
		cost        Cost
		sec, lo, hi []float64
	}
	rows := map[*CUDAFamily]*row{}
	total := row{sec: make([]float64, len(Chips)), lo: make([]float64, len(Chips)), hi: make([]float64, len(Chips))}
	for _, k := range t.Kernels {
		f := CUDAFamilyOf(k.Name)
		r := rows[f]
		if r == nil {
			r = &row{sec: make([]float64, len(Chips)), lo: make([]float64, len(Chips)), hi: make([]float64, len(Chips))}
			rows[f] = r
		}
		r.calls += k.Calls
		r.cost = r.cost.Add(k.Cost)
		for i, ch := range Chips {
			for _, p := range []struct {
				dst []float64
				at  int
			}{{r.sec, 0}, {r.lo, -1}, {r.hi, 1}, {total.sec, 0}, {total.lo, -1}, {total.hi, 1}} {
				p.dst[i] += f.predictAt(ch, k, p.at)
			}
		}
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "family\tcalls\tGFLOP\tMB\tcompute\tbandwidth\tbasis\t")
	for _, ch := range Chips {
		fmt.Fprintf(tw, "%s ms\t", ch.Name)
	}
	fmt.Fprintln(tw)
	for _, f := range CUDAFamilies {
		r := rows[f]
		if r == nil {
			continue
		}
		basis := "assumed"
		if f.Measured {
			basis = "measured"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.4f\t%.3f\t%s\t", f.Name, r.calls, r.cost.FLOPs/1e9, r.cost.Bytes/1e6, f.Compute, f.Bandwidth, basis)
		for i := range Chips {
			fmt.Fprintf(tw, "%.1f\t", 1e3*r.sec[i])
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "total\t\t\t\t\t\t\t")
	for i := range Chips {
		fmt.Fprintf(tw, "%.1f\t", 1e3*total.sec[i])
	}
	fmt.Fprintln(tw)
	tw.Flush()
	for i, ch := range Chips {
		fmt.Fprintf(w, "%s: predicted %.1f ms per %d-token step (%.1f–%.1f ms over the measured ranges), %.0f tokens/s\n",
			ch.Name, 1e3*total.sec[i], tokens, 1e3*total.hi[i], 1e3*total.lo[i], float64(tokens)/total.sec[i])
		if tokens == MeasuredStepTokens && ch.Name == MeasuredStepChip {
			pred := 1e3 * total.sec[i]
			fmt.Fprintf(w, "%s measured (docs/cuda.md: golf e36ca81, tc kernels and cuBLASLt, bf16): %.1f ms per %d-token step; predicted here: %.1f ms, model error %+.1f%% (%+.1f%% to %+.1f%% over the measured ranges)\n",
				ch.Name, MeasuredStepMs, MeasuredStepTokens, pred, 100*(pred/MeasuredStepMs-1),
				100*(1e3*total.hi[i]/MeasuredStepMs-1), 100*(1e3*total.lo[i]/MeasuredStepMs-1))
		}
	}
}

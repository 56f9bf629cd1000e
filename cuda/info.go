package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// PlanLines describes how the backend runs one training step of mc, for
// `golf info`: the device and its memory, the kernels' flavour, and every
// GEMM of the step (StepGEMMs: rows tokens per chunk, chunks per step,
// compute dtype dt, nsSteps Newton–Schulz iterations) with the path that
// computes it (a cuBLASLt plan per shape with the workspace, or the gemm
// kernels' grid).
func (b *Backend) PlanLines(mc model.Config, rows, chunks int, dt backend.DType, nsSteps int) []string {
	i := b.info
	lines := []string{
		fmt.Sprintf("device %d: %s, %s, %d SMs, %.1f GiB of memory (golf plans within %.1f GiB), driver %s",
			i.Ordinal, i.Name, i.Arch(), i.SMs, float64(i.TotalMem)/(1<<30), float64(b.RecommendedWorkingSet())/(1<<30),
			driverVersionString(i.DriverVersion)),
		fmt.Sprintf("kernels: %s flavour, %d block sizes from the launch table; one stream; %d MiB of page-locked staging",
			b.flavour, len(launches), 2*b.stage.half>>20),
	}
	gs := StepGEMMs(mc, rows, chunks, dt, nsSteps)
	total := 0
	for _, g := range gs {
		total += g.Count
	}
	if b.gemmPath == GEMMCublasLt {
		lines = append(lines, fmt.Sprintf("GEMMs: %d cuBLASLt plans (one per shape, created on first use), %d matmuls per step, %d MiB workspace",
			len(gs), total, LtWorkspace>>20))
	} else {
		lines = append(lines, fmt.Sprintf("GEMMs: golf's gemm kernels (%s), %d products per step", b.flavour, total))
	}
	for _, g := range gs {
		ta, tb := "", ""
		if g.TransA {
			ta = "ᵀ"
		}
		if g.TransB {
			tb = "ᵀ"
		}
		lines = append(lines, fmt.Sprintf("  %-32s %5d×%-5d×%5d  A%s B%s  %v→%v  ×%d", g.Name, g.M, g.N, g.K, ta, tb, g.AB, g.CD, g.Count))
	}
	return lines
}

// driverVersionString spells a driver API version (12040 → 12.4).
func driverVersionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

package train

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// limitedDevice is the CPU backend dressed as a GPU without bfloat and with
// a small working set.
type limitedDevice struct {
	backend.Backend
	ws uint64
}

func (d limitedDevice) Supports(op backend.Op, dt backend.DType) bool {
	return dt != backend.BF16 && d.Backend.Supports(op, dt)
}
func (d limitedDevice) RecommendedWorkingSet() uint64 { return d.ws }

func TestCheckBackend(t *testing.T) {
	cfg := tinyConfig(t)
	dev := limitedDevice{Backend: cpu.New(), ws: 1 << 40}
	_, err := Run(context.Background(), cfg, dev, nil)
	if err == nil || !strings.Contains(err.Error(), "no bfloat support: use --dtype fp16 or --dtype fp32") {
		t.Fatalf("bf16 on a device without bfloat: %v", err)
	}
	if _, statErr := os.Stat(cfg.OutDir); statErr == nil {
		t.Errorf("OUT_DIR %s created by a refused run", cfg.OutDir)
	}

	cfg.DType = backend.F16
	plan, err := PlanMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dev.ws = uint64(plan.Peak) - 1
	if err := CheckBackend(cfg, dev); err == nil || !strings.Contains(err.Error(), "recommends at most") ||
		!strings.Contains(err.Error(), mib(plan.Peak)) {
		t.Fatalf("memory plan over the working set: %v", err)
	}
	dev.ws = uint64(plan.Peak)
	if err := CheckBackend(cfg, dev); err != nil {
		t.Fatalf("memory plan at the working set: %v", err)
	}
}

func TestPlanMemoryCounts(t *testing.T) {
	cfg := Defaults()
	plan, err := PlanMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Independent arithmetic for the baseline: 17,059,912 fp32 masters and
	// gradients; bf16 copies of tok_emb and the 54 block matrices.
	const params = 17059912
	C, V, L := 512, 1024, 9
	matrices := L * (C*C + 2*256*C + C*C + 2*1024*C)
	if plan.Params != 4*params || plan.Grads != 4*params {
		t.Errorf("params %d grads %d, want %d", plan.Params, plan.Grads, 4*params)
	}
	if want := int64(2 * (matrices + V*C)); plan.WeightCopies != want {
		t.Errorf("weight copies %d, want %d", plan.WeightCopies, want)
	}
	// Muon keeps one momentum buffer per matrix, Adam two moments for the
	// rest; both at least.
	if min := int64(4*matrices + 8*(params-matrices)); plan.OptimizerState < min {
		t.Errorf("optimizer state %d, want at least %d", plan.OptimizerState, min)
	}
	if plan.Peak < plan.Params+plan.Grads+plan.WeightCopies+plan.OptimizerState+plan.TrainActivation {
		t.Errorf("peak %d below the sum of its parts", plan.Peak)
	}
}

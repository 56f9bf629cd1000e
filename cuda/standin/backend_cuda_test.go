//go:build cuda

package standin

import (
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/modeltest"
)

// TestConformance runs the conformance suite on the CUDA backend over the
// stand-in: every op, every dtype, against the float64 oracles, every
// kernel of the library executing on the emulator: the portable flavour;
// the tc flavour (golf_mma16816's emulated path) with the gemm kernels and
// with cuBLASLt (the stand-in's matmul). The tc flavour's attention in
// bf16 and fp16 is checked by TestAttentionTC instead: its kernels round P
// and dS to the 16-bit type before their second products (as
// FlashAttention-2 does), which the suite's float32 policy does not allow,
// and its float twin is another kernel (the portable one, tiled otherwise),
// so no twin check can hold for it.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    cuda.Options
	}{
		{"portable", cuda.Options{Flavour: cuda.PortableFlavour, GEMM: cuda.GEMMKernels}},
		{"tc", cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMKernels}},
		{"tc_cublaslt", cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMCublasLt}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := open(t, tc.o)
			if tc.o.Flavour == cuda.TCFlavour {
				backendtest.RunAll(t, &noTCAttention{b})
				return
			}
			backendtest.RunAll(t, b)
		})
	}
}

// noTCAttention reports attention unsupported in bf16 and fp16 (the tc
// kernels), which the suite skips.
type noTCAttention struct{ backend.Backend }

func (n *noTCAttention) Supports(op backend.Op, dt backend.DType) bool {
	if op == backend.OpAttention && dt != backend.F32 {
		return false
	}
	return n.Backend.Supports(op, dt)
}

// TestTrainingStep: two full training steps of a tiny model (loss, every
// gradient, the updated weights) on the CUDA backend over the stand-in
// match the float64 reference and the CPU backend, in every dtype: the
// portable flavour with the gemm kernels, and the tc flavour with cuBLASLt
// (what a GPU runs by default).
func TestTrainingStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    cuda.Options
	}{
		{"portable", cuda.Options{Flavour: cuda.PortableFlavour, GEMM: cuda.GEMMKernels}},
		{"tc_cublaslt", cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMCublasLt}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("reference", func(t *testing.T) { modeltest.RunTrainingStep(t, open(t, tc.o), backendtest.Reference()) })
			t.Run("cpu", func(t *testing.T) { modeltest.RunTrainingStep(t, open(t, tc.o), cpu.New()) })
		})
	}
}

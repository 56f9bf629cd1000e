//go:build cuda

package standin

import (
	"testing"

	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/modeltest"
)

// TestFusedIdentity: a microbatch of the tiny model with the fused ops
// gives the losses and gradients of the unfused sequences bit for bit, in
// every dtype, in both flavours (modeltest.RunFusedIdentity).
func TestFusedIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    cuda.Options
	}{
		{"portable", cuda.Options{Flavour: cuda.PortableFlavour, GEMM: cuda.GEMMKernels}},
		{"tc_cublaslt", cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMCublasLt}},
	} {
		t.Run(tc.name, func(t *testing.T) { modeltest.RunFusedIdentity(t, open(t, tc.o)) })
	}
}

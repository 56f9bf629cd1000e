//go:build cuda

package standin

import (
	"testing"

	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/cuda/cudatest"
)

// TestAttentionTC runs the tc flavour's attention kernels (bf16, fp16; head
// dims up to 64 and the d128 kernels) on the emulator against the float64
// oracle with the error model of their design (cudatest.AttentionTC), and
// checks that every attention kernel ran in its tc name in both 16-bit
// types.
func TestAttentionTC(t *testing.T) {
	b := open(t, cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMKernels})
	ran := ranDuring(func() { cudatest.AttentionTC(t, b) })
	assertRan(t, ran, cuda.TC, func(k cuda.Kernel, elem string) bool {
		return k.Op == "attention" && elem != "float"
	})
}

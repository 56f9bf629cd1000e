//go:build cuda

package standin

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/cuda/cudatest"
	"github.com/golf-ml/golf/modeltest"
)

// TestConformance runs the conformance suite on the CUDA backend over the
// stand-in: every op, every dtype, against the float64 oracles, every
// kernel of the library executing on the emulator: the portable flavour;
// the tc flavour (golf_mma16816's emulated path) with the gemm kernels; and
// its matrix products (Linear, NewtonSchulz) with cuBLASLt (the stand-in's
// matmul). The tc flavour's attention in
// bf16 and fp16 is checked by TestAttentionTC instead: its kernels round P
// and dS to the 16-bit type before their second products (as
// FlashAttention-2 does), which the suite's float32 policy does not allow,
// and its float twin is another kernel (the portable one, tiled otherwise),
// so no twin check can hold for it. With the gemm kernels, every kernel
// the backend launches in the flavour, in every element type, must have
// run (counted by the stand-in): the suite and Zero (which the suite does
// not call) leave none out.
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
			ran := ranDuring(func() {
				testZero(t, b)
				switch {
				case tc.o.GEMM == cuda.GEMMCublasLt:
					// Only Linear and NewtonSchulz multiply matrices
					// (through cuBLASLt here); every other op runs the
					// kernels "tc" just ran.
					backendtest.RunAll(t, cudatest.NoTCAttention(&opFilter{b, []backend.Op{backend.OpLinear, backend.OpNewtonSchulz}}))
				case tc.o.Flavour == cuda.TCFlavour:
					backendtest.RunAll(t, cudatest.NoTCAttention(b))
				default:
					backendtest.RunAll(t, b)
				}
			})
			if tc.o.GEMM != cuda.GEMMKernels {
				return
			}
			f := b.Flavour()
			assertRan(t, ran, f, func(k cuda.Kernel, elem string) bool {
				// The tc flavour's 16-bit attention: TestAttentionTC.
				return !(f == cuda.TC && k.Op == "attention" && elem != "float")
			})
		})
	}
}

// ranDuring runs f and returns the kernels that ran on the stand-in
// meanwhile.
func ranDuring(f func()) map[string]bool {
	before := handle.KernelRuns()
	f()
	ran := map[string]bool{}
	for name, n := range handle.KernelRuns() {
		if n > before[name] {
			ran[name] = true
		}
	}
	return ran
}

// launched reports whether the backend launches k in element type elem:
// every kernel in every type, except those of the ops the contract defines
// in float32 only (the optimizer ops and Scale, backendtest.OpDTypes),
// whose 16-bit instances the library holds but the host never launches.
func launched(k cuda.Kernel, elem string) bool {
	op := backend.Op(k.Op)
	if !slices.Contains(backend.Ops, op) {
		return true
	}
	for _, dt := range backendtest.OpDTypes(op) {
		if cuda.ElemType(dt) == elem {
			return true
		}
	}
	return false
}

// assertRan checks that every kernel the backend launches in flavour f,
// in every element type, that want selects, is in ran.
func assertRan(t *testing.T, ran map[string]bool, f cuda.Flavour, want func(k cuda.Kernel, elem string) bool) {
	t.Helper()
	n := 0
	for _, k := range cuda.Kernels {
		for _, e := range cuda.ElemTypes {
			if !launched(k, e) || !want(k, e) {
				continue
			}
			n++
			assert.True(t, ran[k.Name(f, e)], "kernel %s never ran", k.Name(f, e))
		}
	}
	require.Positive(t, n)
	t.Logf("%d kernels of the %s flavour ran", n, f)
}

// testZero: Zero sets every element of a tensor of each float dtype and of
// I32 (poisoned first) to exactly 0, the element just past the tensor's
// view untouched.
func testZero(t *testing.T, b *cuda.Backend) {
	for _, dt := range []backend.DType{backend.F32, backend.F16, backend.BF16, backend.I32} {
		t.Run(fmt.Sprintf("zero/%v", dt), func(t *testing.T) {
			const n = 1000
			whole := b.New(dt, n+1)
			defer b.Free(whole)
			if dt == backend.I32 {
				v := make([]int32, n+1)
				for i := range v {
					v[i] = int32(i + 1)
				}
				b.Upload(whole, v)
			} else {
				v := make([]float32, n+1)
				for i := range v {
					v[i] = float32(i%7) - 3.5
				}
				b.Upload(whole, v)
			}
			b.Zero(whole.Rows(0, n))
			got := b.Download(whole)
			require.NoError(t, b.Sync())
			for i := range n {
				require.Zero(t, got[i], "element %d", i)
			}
			want := float32(n%7) - 3.5
			if dt == backend.I32 {
				want = n + 1
			}
			assert.Equal(t, want, got[n], "the element past the view")
		})
	}
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

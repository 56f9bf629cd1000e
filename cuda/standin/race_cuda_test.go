//go:build cuda

package standin

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/cuda/cudatest"
)

// raceOps are the ops whose kernels exchange data between threads through
// shared memory or warp shuffles (the others are one thread per element).
var raceOps = []backend.Op{backend.OpReduce, backend.OpEmbedding, backend.OpRMSNorm, backend.OpResidMix,
	backend.OpLinear, backend.OpQKNormRope, backend.OpAttention, backend.OpScaledAdd, backend.OpSoftcapCE,
	backend.OpNewtonSchulz, backend.OpResidMixRMSNorm, backend.OpScaledAddRMSNorm, backend.OpQKNormRopePair,
	backend.OpRMSNormResidMixBackward, backend.OpSoftcapCEFused}

// tcRaceOps are the ops whose tc-flavour kernels are not the portable
// ones, besides attention (TestAttentionTC): Linear's GEMMs. Every other
// kernel launched in the tc flavour is the portable kernel itself
// (Kernel.Compiled), which the portable run checks.
var tcRaceOps = []backend.Op{backend.OpLinear}

// TestRaceCUDA runs the conformance cases of those ops under the kernel
// emulator's race detector (GOLF_EMU_RACE, read by the stand-in when it
// starts, so in a child process), every kernel in every element type and
// flavour: the portable flavour, the tc flavour's own kernels (tcRaceOps;
// the tc attention through TestAttentionTC). Every launch runs again with
// the threads of each block in reverse and in a random order, and must
// leave every allocation it touches bit-identical; a missing
// __syncthreads fails it (the planted kernel of package cudacpp's
// TestRaceDetector shows it does).
func TestRaceCUDA(t *testing.T) {
	// The tc kernels are the attention's and the GEMMs' (Linear's), so
	// tcRaceOps and TestAttentionTC reach them all.
	for _, k := range cuda.Kernels {
		if k.TC {
			require.Contains(t, []string{"attention", "gemm", "gemm_f32"}, k.Op, "a tc kernel outside tcRaceOps")
		}
	}
	if os.Getenv("GOLF_STANDIN_RACE_CHILD") != "" {
		for _, tc := range []struct {
			name string
			o    cuda.Options
		}{
			{"portable", cuda.Options{Flavour: cuda.PortableFlavour, GEMM: cuda.GEMMKernels}},
			{"tc", cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMKernels}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b := open(t, tc.o)
				if tc.o.Flavour == cuda.TCFlavour {
					backendtest.RunAll(t, cudatest.NoTCAttention(&opFilter{b, tcRaceOps}))
					return
				}
				backendtest.RunAll(t, &opFilter{b, raceOps})
			})
		}
		t.Run("attention_tc", TestAttentionTC)
		return
	}
	requireLibs(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRaceCUDA$", "-test.count=1")
	// The child reads the kernels this process compiled.
	cmd.Env = append(os.Environ(), "GOLF_STANDIN_RACE_CHILD=1", "GOLF_EMU_RACE=11", "GOLF_EMU_WORKERS=1",
		cuda.EnvCacheDir+"="+testCache(t).Dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "PASS")
}

// opFilter runs the suite on some ops only: the others are reported
// unsupported, which the suite skips.
type opFilter struct {
	backend.Backend
	ops []backend.Op
}

// ReorderedSums passes the wrapped backend's answer on (backendtest finds
// it by a type assertion).
func (f *opFilter) ReorderedSums(dt backend.DType) bool {
	r, ok := f.Backend.(backendtest.ReorderedSums)
	return ok && r.ReorderedSums(dt)
}

func (f *opFilter) Supports(op backend.Op, dt backend.DType) bool {
	for _, o := range f.ops {
		if o == op {
			return f.Backend.Supports(op, dt)
		}
	}
	return false
}

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
	backend.OpNewtonSchulz}

// TestRaceCUDA runs the conformance cases of those ops, in both flavours
// (the tc attention through TestAttentionTC), under the kernel emulator's
// race detector (GOLF_EMU_RACE, read by the stand-in when it starts, so in
// a child process): every launch runs again with the threads of each block
// in reverse and in a random order, and must leave every allocation it
// touches bit-identical; a missing __syncthreads fails it (the planted
// kernel of package cudacpp's TestRaceDetector shows it does).
func TestRaceCUDA(t *testing.T) {
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
				ops := &opFilter{b, raceOps}
				if tc.o.Flavour == cuda.TCFlavour {
					backendtest.RunAll(t, cudatest.NoTCAttention(ops))
					return
				}
				backendtest.RunAll(t, ops)
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

func (f *opFilter) Supports(op backend.Op, dt backend.DType) bool {
	for _, o := range f.ops {
		if o == op {
			return f.Backend.Supports(op, dt)
		}
	}
	return false
}

//go:build cgo

package metal

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
)

// TestUploadWhileInUse: uploading into a tensor that queued work still
// reads neither waits nor changes what that work reads (the emulated GPU
// runs a command buffer only when the host waits for it, so a write into a
// buffer in use would show in the results); uploading into a view of part
// of such a tensor waits for the work.
func TestUploadWhileInUse(t *testing.T) {
	b, err := Open(NewEmulatedRuntime(Portable))
	require.NoError(t, err)
	x, y := b.New(backend.F32, 4), b.New(backend.F32, 4)
	b.Upload(x, []float32{-1, 2, 3, -4})
	b.ReluSqForward(y, x) // queued, not run
	before := b.Stats()
	b.Upload(x, []float32{10, 20, 30, 40})
	d := b.Stats().Sub(before)
	assert.Zero(t, d.Drains+d.PartialWaits+d.Syncs+d.Throttles, "a whole-tensor upload waited: %+v", d)
	assert.Equal(t, []float32{0, 4, 9, 0}, b.Download(y), "the queued relu² read the new upload")
	assert.Equal(t, []float32{10, 20, 30, 40}, b.Download(x))

	// The renamed-away buffer serves a later upload once its work is done.
	z := b.New(backend.F32, 4)
	b.ReluSqForward(z, x)
	b.Upload(x, []float32{1, 1, 1, 1})
	assert.Equal(t, []float32{100, 400, 900, 1600}, b.Download(z))

	// A view of part of a storage in use: the upload must wait.
	big := b.New(backend.F32, 2, 4)
	out := b.New(backend.F32, 2, 4)
	b.Upload(big, []float32{1, 2, 3, 4, 5, 6, 7, 8})
	b.ReluSqForward(out, big)
	before = b.Stats()
	b.Upload(big.Rows(1, 1), []float32{-1, -1, -1, -1})
	d = b.Stats().Sub(before)
	assert.EqualValues(t, 1, d.Drains+d.PartialWaits, "a partial upload into storage in use must wait once")
	assert.Equal(t, []float32{1, 4, 9, 16, 25, 36, 49, 64}, b.Download(out))
	assert.Equal(t, []float32{1, 2, 3, 4, -1, -1, -1, -1}, b.Download(big))
	require.NoError(t, b.Sync())
}

// TestCommandBufferFailureIsFatal: after a command buffer fails, every
// call of the runtime returns that error, and the backend's ReadScalar and
// Sync report it every time; work queued behind the failure never runs.
func TestCommandBufferFailureIsFatal(t *testing.T) {
	rt := NewEmulatedRuntime(Simd)
	b, err := Open(rt)
	require.NoError(t, err)
	x, y, acc := b.New(backend.F32, 3), b.New(backend.F32, 3), b.New(backend.F32, 2)
	b.Upload(x, []float32{1, 2, 3})
	rt.(*goRuntime).injectFailure("Impacting Interactivity (0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)", "MTLCommandBufferErrorDomain", 2)
	b.ReluSqForward(y, x)
	b.Accumulate(acc, x, 1)
	_, err = b.ReadScalar(acc)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errFaulted))
	assert.Contains(t, err.Error(), "Impacting Interactivity")
	assert.Contains(t, err.Error(), "--max-microbatch-tokens")
	assert.Equal(t, err, b.Sync(), "Sync must report the failure")
	assert.Equal(t, err, b.Sync(), "a second Sync must report the failure again")
	_, rerr := b.ReadScalar(acc)
	assert.Equal(t, err, rerr)
	p, perr := rt.Pipeline(KernelName("relu_sq", "fwd", Simd, "float"))
	assert.Equal(t, err, perr)
	assert.Nil(t, p)
	_, nerr := rt.NewBuffer(8)
	assert.Equal(t, err, nerr)
	assert.Equal(t, err, rt.Wait(rt.LastSerial()))
	assert.Equal(t, err, rt.Close())
	assert.Equal(t, []float32{0, 0, 0}, b.Download(y), "work behind the failure ran")
}

// TestLowThreadLimits runs ops on an emulated device whose pipelines allow
// fewer threads per threadgroup than the device (as register-heavy kernels
// do on a real GPU), with limits that are not powers of two: the ops that
// size their threadgroups from the pipeline still match the float64
// oracles; a kernel whose op needs more threads than its pipeline allows is
// refused by Open, naming it.
func TestLowThreadLimits(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		t.Run(f.String(), func(t *testing.T) {
			limit := func(name string) int {
				for _, k := range Kernels {
					if need := requiredThreads(k, f); need > 1 && strings.HasPrefix(name, k.Op+"_"+k.Dir) {
						return need // fixed-size kernels get exactly what they need
					}
				}
				return 96 // three simdgroups
			}
			rt := NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(f), MaxThreads: limit}))
			b, err := Open(rt)
			require.NoError(t, err)
			for name, p := range rt.(*goRuntime).pipes {
				require.LessOrEqual(t, p.MaxThreads(), max(96, requiredThreads(infoOf(name).kernel, f)), name)
			}
			// The ops whose threadgroups follow the pipeline's limit (the
			// others have fixed sizes, checked by Open).
			backendtest.RunAll(t, &opFilter{b, []backend.Op{backend.OpCast, backend.OpScale, backend.OpAxpy,
				backend.OpReduce, backend.OpEmbedding, backend.OpRMSNorm, backend.OpResidMix, backend.OpQKNormRope,
				backend.OpScaledAdd, backend.OpReluSq, backend.OpSoftcapCE, backend.OpAdam, backend.OpMuon,
				backend.OpResidMixRMSNorm, backend.OpScaledAddRMSNorm, backend.OpQKNormRopePair,
				backend.OpRMSNormResidMixBackward, backend.OpSoftcapCEFused}})

			low := NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(f), MaxThreads: func(name string) int {
				if strings.HasPrefix(name, "gemm_") {
					return 64
				}
				return 0
			}}))
			_, err = Open(low)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "gemm_")
			assert.Contains(t, err.Error(), "64 threads")
		})
	}
}

// opFilter runs the suite on some ops only: the others are reported
// unsupported, which the suite skips.
type opFilter struct {
	*Backend
	ops []backend.Op
}

func (f *opFilter) Supports(op backend.Op, dt backend.DType) bool {
	return slices.Contains(f.ops, op) && f.Backend.Supports(op, dt)
}

// supportLog wraps a backend and records each (op, dtype) it reports
// unsupported, as the conformance suite skips them.
type supportLog struct {
	*Backend
	skipped []string
}

func (s *supportLog) Supports(op backend.Op, dt backend.DType) bool {
	ok := s.Backend.Supports(op, dt)
	if !ok {
		if k := fmt.Sprintf("%s %s", op, dt); !slices.Contains(s.skipped, k) {
			s.skipped = append(s.skipped, k)
		}
	}
	return ok
}

// TestParavirtualDevice runs the conformance suite on an emulated runtime
// with the capabilities of GitHub's hosted macOS runners ("Apple
// Paravirtual device": portable kernels, no bfloat, a 5 GB working set).
// The suite must pass, skipping ("not supported") exactly the bf16 cases
// of the ops that take a compute dtype.
func TestParavirtualDevice(t *testing.T) {
	b, err := Open(NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: ParavirtualCaps()})))
	require.NoError(t, err)
	assert.Equal(t, Portable, b.caps.Flavour)
	assert.Equal(t, uint64(5010800640), b.RecommendedWorkingSet())
	for name := range b.pipes {
		assert.NotEqual(t, backend.BF16, name.dt, "a bfloat pipeline was built for a device without bfloat")
	}
	rec := &supportLog{Backend: b}
	backendtest.RunAll(t, rec)
	var want []string
	for _, op := range backend.Ops {
		switch op {
		case backend.OpScale, backend.OpAdam, backend.OpMuon, backend.OpNewtonSchulz:
			continue // F32 only: no bf16 case to skip
		}
		want = append(want, fmt.Sprintf("%s bf16", op))
	}
	slices.Sort(want)
	got := slices.Clone(rec.skipped)
	slices.Sort(got)
	t.Logf("skipped as not supported on the paravirtual device: %s", strings.Join(got, ", "))
	assert.Equal(t, want, got)
}

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
	"github.com/golf-ml/golf/internal/kemu/msl"
)

// corrupted is an emulated kernel that computes wrong: after the real
// kernel runs, it flips one bit of byte off of buffer buf.
type corrupted struct {
	EmuKernel
	buf, off int
}

func (c corrupted) Dispatch(groups, threads [3]int, bufs [][]byte) error {
	if err := c.EmuKernel.Dispatch(groups, threads, bufs); err != nil {
		return err
	}
	bufs[c.buf][c.off] ^= 0x04
	return nil
}

// kernelsWith returns the emulator's kernels with kernel name replaced by
// wrap of it.
func kernelsWith(name string, wrap func(EmuKernel) EmuKernel) func(string) (EmuKernel, error) {
	return func(n string) (EmuKernel, error) {
		k, err := emuKernels(n)
		if err == nil && n == name {
			return wrap(k), nil
		}
		return k, err
	}
}

// failProbes fails every attempt at building a probe's pipeline, as a
// device whose compiler or pipeline creation refuses them.
func failProbes(name string, _ int) error {
	if strings.HasPrefix(name, "probe_") {
		return errors.New("Compiler encountered an internal error")
	}
	return nil
}

// runSuite opens the backend over rt and runs the conformance suite on it,
// returning the (op dtype) cases it skipped as not supported.
func runSuite(t *testing.T, rt Runtime) []string {
	t.Helper()
	b, err := Open(rt)
	require.NoError(t, err)
	rec := &supportLog{Backend: b}
	backendtest.RunAll(t, rec)
	return rec.skipped
}

// bf16Cases are the conformance cases a device without bfloat skips: every
// op with a compute dtype (the optimizer ops are F32 only).
func bf16Cases() []string {
	var want []string
	for _, op := range backend.Ops {
		switch op {
		case backend.OpScale, backend.OpAdam, backend.OpMuon, backend.OpNewtonSchulz:
			continue
		}
		want = append(want, fmt.Sprintf("%s bf16", op))
	}
	slices.Sort(want)
	return want
}

// TestProbeScenarios: the flavour and dtypes an emulated device runs with
// when it probes at start-up, for devices that report their family
// truthfully or not, and compute the probes right, wrong or not at all;
// and the conformance suite passes on each, skipping exactly the bf16
// cases where bfloat was not found.
func TestProbeScenarios(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      EmuConfig
		flavour  Flavour
		bfloat   bool
		probed   []string // parts of the Probed line
		runSuite bool
	}{
		{
			// (a) The hosted runner's device: Apple5 by its family, but
			// every probe passes: the default path runs.
			name: "under-reports, every probe passes", cfg: EmuConfig{Caps: ParavirtualCaps()},
			flavour: Simd, bfloat: true, runSuite: true,
			probed: []string{
				"simdgroup reductions and shuffles yes (supportsFamily: no)",
				"float simdgroup matrices yes (supportsFamily: no)",
				"half simdgroup matrices yes (supportsFamily: no)",
				"bfloat simdgroup matrices yes (supportsFamily: no)",
				"bfloat conversion and arithmetic yes (supportsFamily: no)",
			},
		},
		{
			// (b) Float matrices come out wrong: portable kernels, bf16
			// kept (its own probe passed).
			name: "float matrix probe wrong",
			cfg: EmuConfig{Caps: ParavirtualCaps(), Kernels: kernelsWith("probe_matrix_float",
				func(k EmuKernel) EmuKernel { return corrupted{k, 3, 2} })},
			flavour: Portable, bfloat: true, runSuite: true,
			probed: []string{"float simdgroup matrices no (supportsFamily: no), probe wrong answer: element (0, 0) of a·b + c"},
		},
		{
			// A device that reports Apple7 but computes float matrices
			// wrong is not trusted with them.
			name: "reports Apple7, float matrix probe wrong",
			cfg: EmuConfig{Caps: EmulatorCaps(Simd), Kernels: kernelsWith("probe_matrix_float",
				func(k EmuKernel) EmuKernel { return corrupted{k, 3, 9} })},
			flavour: Portable, bfloat: true,
			probed: []string{"float simdgroup matrices no (supportsFamily: yes), probe wrong answer: element (0, 2)"},
		},
		{
			name: "bfloat probe wrong",
			cfg: EmuConfig{Caps: EmulatorCaps(Simd), Kernels: kernelsWith("probe_bfloat",
				func(k EmuKernel) EmuKernel { return corrupted{k, 2, 4*9 + 1} })},
			flavour: Simd, bfloat: false,
			probed: []string{"bfloat conversion and arithmetic no (supportsFamily: yes), probe wrong answer: float(bfloat(123.456))"},
		},
		{
			name: "simd probe wrong",
			cfg: EmuConfig{Caps: EmulatorCaps(Simd), Kernels: kernelsWith("probe_simd",
				func(k EmuKernel) EmuKernel { return corrupted{k, 0, 4*(3*32+7) + 2} })},
			flavour: Portable, bfloat: true,
			probed: []string{"simdgroup reductions and shuffles no (supportsFamily: yes), probe wrong answer: simd_prefix_exclusive_sum on lane 7"},
		},
		{
			// (c) The probes' pipelines fail to build: the family's
			// answer stands, here Apple5: portable, no bfloat.
			name: "probes do not build, family says no", cfg: EmuConfig{Caps: ParavirtualCaps(), PipelineFault: failProbes},
			flavour: Portable, bfloat: false, runSuite: true,
			probed: []string{"float simdgroup matrices no (supportsFamily: no), probe did not build: metal: the pipeline of kernel probe_matrix_float did not build (2 attempts)"},
		},
		{
			name: "probes do not build, family says yes", cfg: EmuConfig{Caps: EmulatorCaps(Simd), PipelineFault: failProbes},
			flavour: Simd, bfloat: true,
			probed: []string{"bfloat conversion and arithmetic yes (supportsFamily: yes), probe did not build: metal: the pipeline of kernel probe_bfloat"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Probe = true
			rt := NewEmulatedRuntimeFor(withEmulator(cfg))
			caps := rt.Caps()
			assert.Equal(t, c.flavour, caps.Flavour)
			assert.Equal(t, c.bfloat, caps.BFloat)
			assert.Equal(t, 1, strings.Count(caps.Probed, "probed: "), caps.Probed)
			assert.NotContains(t, caps.Probed, "\n")
			for _, p := range c.probed {
				assert.Contains(t, caps.Probed, p)
			}
			t.Log(caps.Probed)
			b, err := Open(rt)
			require.NoError(t, err)
			assert.Contains(t, b.Device(), caps.Probed, "the device line logs what the probes found")
			for name := range rt.(*goRuntime).pipes {
				assert.NotContains(t, name, "probe_", "a probe's pipeline outlived the probes")
			}
			if !c.runSuite {
				return
			}
			skipped := runSuite(t, rt)
			slices.Sort(skipped)
			if c.bfloat {
				assert.Empty(t, skipped)
			} else {
				assert.Equal(t, bf16Cases(), skipped)
			}
		})
	}
}

// TestProbesRejectEveryWrongValue: each probe's check passes the emulator's
// output and fails it with any one output byte changed, so a device that
// gets any one value wrong is caught (the simd probe's last
// simd_shuffle_down lane is undefined in MSL and not checked, and it
// compares floats as values).
func TestProbesRejectEveryWrongValue(t *testing.T) {
	rt := NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(Simd)})).(*goRuntime)
	for _, p := range probes {
		t.Run(p.kernel, func(t *testing.T) {
			pl, err := rt.Pipeline(p.kernel)
			require.NoError(t, err)
			init := p.bufs()
			args := make([]Arg, len(init))
			bufs := make([]Buffer, len(init))
			for i, b := range init {
				bufs[i], err = rt.NewBuffer(len(b))
				require.NoError(t, err)
				copy(bufs[i].Bytes(), b)
				args[i] = Arg{Buf: bufs[i]}
			}
			require.NoError(t, rt.Dispatch(pl, [3]int{1, 1, 1}, [3]int{p.threads, 1, 1}, args, nil))
			require.NoError(t, rt.Sync())
			got := make([][]byte, len(bufs))
			outputs := 0
			for i, b := range bufs {
				got[i] = b.Bytes()
				if string(got[i]) != string(init[i]) {
					outputs++
				}
			}
			require.NoError(t, p.check(got), "the emulator's answer")
			require.Positive(t, outputs)
			for i := range got {
				if string(got[i]) == string(init[i]) {
					continue // an input
				}
				for off := range got[i] {
					if p.kernel == "probe_simd" && (off/4 == 5*32+31 || off/4 == 3*32 && off%4 == 3) {
						// The undefined lane, and the sign of lane 0's
						// exclusive sum: the probe compares values, and
						// -0 is 0.
						continue
					}
					got[i][off] ^= 0x80
					assert.Error(t, p.check(got), "buffer %d byte %d changed", i, off)
					got[i][off] ^= 0x80
				}
			}
		})
	}
}

// TestBFloatProbeAnswers: the bfloat probe's known answers for its first
// inputs, worked out by hand from the float bits (round to nearest, ties
// to even, on the top 16 bits).
func TestBFloatProbeAnswers(t *testing.T) {
	want := []struct{ bits, square uint16 }{
		{0x3f80, 0x3f80}, // 1, 1
		{0x3f80, 0x3f80}, // the tie 1 + 2⁻⁸ goes down to 1
		{0x3f82, 0x3f84}, // the tie 1 + 3·2⁻⁸ goes up to 1 + 2⁻⁶; squared 1 + 2⁻⁵ + 2⁻¹² → 1 + 2⁻⁵
		{0x3f81, 0x3f82}, // above the tie: 1 + 2⁻⁷; squared 1 + 2⁻⁶ + 2⁻¹⁴ → 1 + 2⁻⁶
		{0x3f80, 0x3f80}, // below the tie: 1
		{0xc020, 0x40c8}, // -2.5; 6.25
		{0x8000, 0x0000}, // -0; +0
		{0x7f80, 0x7f80}, // the largest float → +Inf; Inf
		{0x7f80, 0x7f80}, // +Inf
	}
	rt := NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(Simd)}))
	var out [][]byte
	_, _ = runProbe(rt, probeBFloat, func(p probe) (Pipeline, error) { return rt.Pipeline(p.kernel) })
	// runProbe frees its buffers; run the kernel again to read them.
	pl, err := rt.Pipeline("probe_bfloat")
	require.NoError(t, err)
	init := probeBFloat.bufs()
	args := make([]Arg, len(init))
	for i, b := range init {
		buf, err := rt.NewBuffer(len(b))
		require.NoError(t, err)
		copy(buf.Bytes(), b)
		args[i] = Arg{Buf: buf}
		out = append(out, buf.Bytes())
	}
	require.NoError(t, rt.Dispatch(pl, [3]int{1, 1, 1}, [3]int{32, 1, 1}, args, nil))
	require.NoError(t, rt.Sync())
	for i, w := range want {
		assert.Equal(t, w.bits, uint16(out[1][2*i])|uint16(out[1][2*i+1])<<8, "bits of input %d", i)
		assert.Equal(t, w.square, uint16(out[3][2*i])|uint16(out[3][2*i+1])<<8, "square of input %d", i)
	}
	require.NoError(t, probeBFloat.check(out))
}

// TestPipelineRetry: a pipeline that fails to build once is built at the
// second attempt (and counted); one that always fails is an error from
// Open naming the kernel and carrying the device's message.
func TestPipelineRetry(t *testing.T) {
	flaky := KernelName("relu_sq", "fwd", Portable, "float")
	attempts := 0
	rt := NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(Portable),
		PipelineFault: func(name string, attempt int) error {
			if name != flaky {
				return nil
			}
			attempts++
			if attempt == 1 {
				return errors.New("the first attempt fails")
			}
			return nil
		}}))
	b, err := Open(rt)
	require.NoError(t, err)
	assert.Equal(t, 2, attempts)
	assert.Equal(t, uint64(1), rt.Stats().PipelineRetries)
	x, y := b.New(backend.F32, 4), b.New(backend.F32, 4)
	b.Upload(x, []float32{-1, 2, 3, -4})
	b.ReluSqForward(y, x)
	assert.Equal(t, []float32{0, 4, 9, 0}, b.Download(y), "the retried pipeline runs")

	broken := KernelName("softcap_ce", "bwd", Portable, "half")
	attempts = 0
	rt = NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(Portable),
		PipelineFault: func(name string, attempt int) error {
			if name != broken {
				return nil
			}
			attempts++
			return fmt.Errorf("no diagnostic (attempt %d)", attempt)
		}}))
	_, err = Open(rt)
	require.Error(t, err)
	assert.Equal(t, 2, attempts, "one retry, then the error")
	assert.Contains(t, err.Error(), broken)
	assert.Contains(t, err.Error(), "did not build (2 attempts)")
	assert.Contains(t, err.Error(), "no diagnostic (attempt 2)")
}

// TestProbeSource: the source compiled for each probe instantiates that
// probe only, and every probe is a kernel of the emulated library.
func TestProbeSource(t *testing.T) {
	var names []string
	for _, p := range probes {
		names = append(names, p.kernel)
		src, err := probeSource(p)
		require.NoError(t, err)
		n := strings.Count(src, "instantiate_kernel(\"")
		if strings.HasPrefix(p.kernel, "probe_matrix_") {
			assert.Equal(t, 1, n, p.kernel)
			assert.Contains(t, src, "instantiate_kernel(\""+p.kernel+"\"")
		} else {
			assert.Zero(t, n, p.kernel)
			assert.Contains(t, src, "void "+p.kernel+"(")
		}
		assert.Contains(t, src, "#include <metal_stdlib>")
		assert.NotRegexp(t, `(?m)^\s*#\s*include\s*"`, src, "a quoted include left in a probe's source")
	}
	slices.Sort(names)
	assert.Equal(t, msl.Probes(), names, "the probes run are the library's probe kernels")
	_, err := probeSource(probe{kernel: "probe_matrix_int", file: "probe/probe_matrix.metal"})
	assert.ErrorContains(t, err, "does not instantiate probe probe_matrix_int")
}

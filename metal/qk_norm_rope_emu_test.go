//go:build cgo

package metal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// qkTestNormal returns n draws of N(0, 1) as float32.
func qkTestNormal(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// qkTestClose reports the first element of got further than tol·(1 + |want|)
// from want; a NaN or an infinity in either fails.
func qkTestClose(t *testing.T, name string, got, want []float32, tol float64) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: length", name)
	for i := range want {
		w, lim := float64(want[i]), tol*(1+math.Abs(float64(want[i])))
		if d := math.Abs(float64(got[i]) - w); !(d <= lim) { // NaNs and infinities fail
			if math.IsNaN(w) || math.IsInf(w, 0) {
				assert.Failf(t, "not a finite reference", "%s[%d] = %g, want %g", name, i, got[i], want[i])
			} else {
				assert.InDelta(t, w, float64(got[i]), lim, "%s[%d]", name, i)
			}
			return
		}
	}
}

// TestQKNormRopeWideHeads covers head dims whose D/2 pairs exceed a
// simdgroup (each lane loops over several pairs), which the conformance
// cases (D ≤ 64) do not reach, against the CPU backend in float32; dgain
// accumulates into a non-zero start and is summed over more rows than a
// threadgroup has threads.
func TestQKNormRopeWideHeads(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		for _, D := range []int{66, 130} {
			const B, T, Hx = 2, 150, 3
			N := B * T
			rng := rand.New(rand.NewPCG(uint64(D), 7))
			xv, dv, gv, dg0 := qkTestNormal(rng, N*Hx*D), qkTestNormal(rng, N*Hx*D), qkTestNormal(rng, Hx), qkTestNormal(rng, Hx)
			var outs [2][4][]float32 // [metal, cpu][out, rstd, dx, dgain]
			for k, be := range []backend.Backend{New(NewEmulatedRuntime(f)), cpu.New()} {
				x, dout := be.New(backend.F32, N, Hx, D), be.New(backend.F32, N, Hx, D)
				gain, dgain := be.New(backend.F32, Hx), be.New(backend.F32, Hx)
				out, dx := be.New(backend.F32, N, Hx, D), be.New(backend.F32, N, Hx, D)
				rstd := be.New(backend.F32, N, Hx)
				be.Upload(x, xv)
				be.Upload(dout, dv)
				be.Upload(gain, gv)
				be.Upload(dgain, dg0)
				be.QKNormRopeForward(out, rstd, x, gain, T, 10000)
				be.QKNormRopeBackward(dx, dgain, dout, x, rstd, gain, T, 10000)
				outs[k] = [4][]float32{be.Download(out), be.Download(rstd), be.Download(dx), be.Download(dgain)}
				require.NoError(t, be.Sync(), "%s D%d: Sync of backend %d", f, D, k)
			}
			for j, name := range []string{"out", "rstd", "dx", "dgain"} {
				tol := 1e-5
				if name == "dgain" {
					tol = 1e-4 // a sum of N·D terms of order one
				}
				qkTestClose(t, fmt.Sprintf("%s D%d %s", f, D, name), outs[0][j], outs[1][j], tol)
			}
		}
	}
}

// qkTestNullRuntime is a Runtime whose Dispatch only counts: it isolates
// the host code's allocations from the runtime's.
type qkTestNullRuntime struct {
	nullStream
	dispatches int
}

type qkTestNullPipeline struct{ name string }

func (p qkTestNullPipeline) Name() string    { return p.name }
func (p qkTestNullPipeline) MaxThreads() int { return 1024 }

func (r *qkTestNullRuntime) Caps() Caps {
	return Caps{Name: "null", BFloat: true, MaxThreadsPerGroup: 1024, ThreadgroupMemory: 32 << 10}
}
func (r *qkTestNullRuntime) NewBuffer(n int) (Buffer, error) {
	return &goBuffer{b: make([]byte, n)}, nil
}
func (r *qkTestNullRuntime) Free(Buffer) {}
func (r *qkTestNullRuntime) Pipeline(name string) (Pipeline, error) {
	return qkTestNullPipeline{name}, nil
}
func (r *qkTestNullRuntime) Dispatch(Pipeline, [3]int, [3]int, []Arg, []int) error {
	r.dispatches++
	return nil
}
func (r *qkTestNullRuntime) Sync() error  { return nil }
func (r *qkTestNullRuntime) Close() error { return nil }

// TestNormFamilyNoAllocs checks that, once pipelines, rotary tables and
// scratch exist, RMSNorm, QK-norm + RoPE, softcapped cross-entropy, Adam
// and Muon momentum encode their dispatches without allocating.
func TestNormFamilyNoAllocs(t *testing.T) {
	const N, C, Hx, D, T, V = 4, 40, 2, 8, 2, 50
	rt := &qkTestNullRuntime{}
	b := New(rt)
	x, y, r := b.New(backend.BF16, N, C), b.New(backend.BF16, N, C), b.New(backend.F32, N)
	q, dq, qr := b.New(backend.BF16, N, Hx, D), b.New(backend.BF16, N, Hx, D), b.New(backend.F32, N, Hx)
	gain, dgain := b.New(backend.F32, Hx), b.New(backend.F32, Hx)
	logits, dl, loss := b.New(backend.BF16, N, V), b.New(backend.BF16, N, V), b.New(backend.F32, N)
	targets := b.New(backend.I32, N)
	p, g, m, v := b.New(backend.F32, C), b.New(backend.F32, C), b.New(backend.F32, C), b.New(backend.F32, C)
	hp := backend.AdamParams{LR: 0.01, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 3}
	step := func() {
		b.RMSNormForward(y, r, x)
		b.RMSNormBackward(y, x, x, r, y)
		b.QKNormRopeForward(dq, qr, q, gain, T, 10000)
		b.QKNormRopeBackward(dq, dgain, q, q, qr, gain, T, 10000)
		b.SoftcapCEForward(loss, logits, targets, 30)
		b.SoftcapCEBackward(dl, logits, targets, 30, 0.5)
		b.AdamStep(p, g, m, v, hp)
		b.MuonMomentum(m, g, g, 0.95)
	}
	step()
	assert.Equal(t, 9, rt.dispatches, "dispatches per step") // QKNormRopeBackward with dgain is two
	assert.Zero(t, testing.AllocsPerRun(5, step), "allocations per step")
}

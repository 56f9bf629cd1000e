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

// TestAttentionManyTiles compares both flavours with the CPU backend in
// float32 on shapes the conformance cases (T ≤ 67) do not reach: several
// query tiles of every kernel (T = 150 is 3 tiles of 64 rows for every simd
// kernel, 5 backward tiles of 32 for the portable ones, none full at the
// end), a group of three query heads (dk and dv summed over them), and
// head dims of 24 (three 8-wide matrix columns, the simd kernels' checked
// path), 64 and 128: both tile shapes and both compile-time head dims.
func TestAttentionManyTiles(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		for _, D := range []int{24, 64, 128} {
			const B, T, H, Hkv = 2, 150, 3, 1
			N := B * T
			rng := rand.New(rand.NewPCG(uint64(D), 11))
			normal := func(n int, sigma float64) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(sigma * rng.NormFloat64())
				}
				return v
			}
			qv, kv, vv, dov := normal(N*H*D, 1.5), normal(N*Hkv*D, 1), normal(N*Hkv*D, 1), normal(N*H*D, 1)
			var got [2][5][]float32 // [metal, cpu][out, lse, dq, dk, dv]
			for i, be := range []backend.Backend{New(NewEmulatedRuntime(f)), cpu.New()} {
				q, dout := be.New(backend.F32, N, H, D), be.New(backend.F32, N, H, D)
				k, v := be.New(backend.F32, N, Hkv, D), be.New(backend.F32, N, Hkv, D)
				out, dq := be.New(backend.F32, N, H, D), be.New(backend.F32, N, H, D)
				dk, dv := be.New(backend.F32, N, Hkv, D), be.New(backend.F32, N, Hkv, D)
				lse := be.New(backend.F32, N, H)
				be.Upload(q, qv)
				be.Upload(k, kv)
				be.Upload(v, vv)
				be.Upload(dout, dov)
				be.AttentionForward(out, lse, q, k, v, T)
				be.AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse, T)
				got[i] = [5][]float32{be.Download(out), be.Download(lse), be.Download(dq), be.Download(dk), be.Download(dv)}
				require.NoError(t, be.Sync(), "%s D%d: Sync of backend %d", f, D, i)
			}
			for j, name := range []string{"out", "lse", "dq", "dk", "dv"} {
				// Sums of up to G·T = 450 terms of order one, in float32
				// in a different order on each side.
				attTestClose(t, fmt.Sprintf("%s D%d %s", f, D, name), got[0][j], got[1][j], 2e-5)
			}
		}
	}
}

// TestAttentionRisingScores compares both flavours with the CPU backend in
// float32 where each query's scores rise steeply along the keys (about
// 0.3 per key in natural units, 60 over the sequence, plus noise): the
// running max of every row grows by more than the simd forward's lazy
// threshold (2^8) across its key tiles again and again, so O is rescaled
// many times; head dims 40 (checked path), 64 and 128.
func TestAttentionRisingScores(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		for _, D := range []int{40, 64, 128} {
			const B, T, H, Hkv = 1, 200, 2, 1
			N := B * T
			rng := rand.New(rand.NewPCG(uint64(D), 23))
			qv, kv, vv, dov := make([]float32, N*H*D), make([]float32, N*Hkv*D), make([]float32, N*Hkv*D), make([]float32, N*H*D)
			for i := range qv {
				qv[i] = float32(1 + 0.1*rng.NormFloat64())
				dov[i] = float32(rng.NormFloat64())
			}
			for n := range N {
				u := n % T
				for d := range D {
					kv[n*D+d] = float32((0.3*float64(u) + 0.5*rng.NormFloat64()) / math.Sqrt(float64(D)))
					vv[n*D+d] = float32(rng.NormFloat64())
				}
			}
			var got [2][5][]float32
			for i, be := range []backend.Backend{New(NewEmulatedRuntime(f)), cpu.New()} {
				q, dout := be.New(backend.F32, N, H, D), be.New(backend.F32, N, H, D)
				k, v := be.New(backend.F32, N, Hkv, D), be.New(backend.F32, N, Hkv, D)
				out, dq := be.New(backend.F32, N, H, D), be.New(backend.F32, N, H, D)
				dk, dv := be.New(backend.F32, N, Hkv, D), be.New(backend.F32, N, Hkv, D)
				lse := be.New(backend.F32, N, H)
				be.Upload(q, qv)
				be.Upload(k, kv)
				be.Upload(v, vv)
				be.Upload(dout, dov)
				be.AttentionForward(out, lse, q, k, v, T)
				be.AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse, T)
				got[i] = [5][]float32{be.Download(out), be.Download(lse), be.Download(dq), be.Download(dk), be.Download(dv)}
				require.NoError(t, be.Sync(), "%s D%d: Sync of backend %d", f, D, i)
			}
			// The scores reach about 60: lse is about that large, and the
			// products behind dq and dk carry its relative error.
			lse := got[1][1]
			require.Greater(t, float64(lse[len(lse)-1]), 40.0, "the scores rise as intended")
			for j, name := range []string{"out", "lse", "dq", "dk", "dv"} {
				attTestClose(t, fmt.Sprintf("%s D%d %s", f, D, name), got[0][j], got[1][j], 1e-4)
			}
		}
	}
}

// attTestClose reports the first element of got further than
// tol·(1 + |want|) from want; a NaN or an infinity in either fails.
func attTestClose(t *testing.T, name string, got, want []float32, tol float64) {
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

// attTestNullRuntime is a Runtime whose Dispatch only counts: it isolates
// the host code's allocations from the runtime's.
type attTestNullRuntime struct {
	nullStream
	flavour    Flavour
	dispatches int
}

type attTestNullPipeline struct{ name string }

func (p attTestNullPipeline) Name() string    { return p.name }
func (p attTestNullPipeline) MaxThreads() int { return 1024 }

func (r *attTestNullRuntime) Caps() Caps {
	return Caps{Name: "null", Flavour: r.flavour, BFloat: true, MaxThreadsPerGroup: 1024, ThreadgroupMemory: 32 << 10}
}
func (r *attTestNullRuntime) NewBuffer(n int) (Buffer, error) {
	return &goBuffer{b: make([]byte, n)}, nil
}
func (r *attTestNullRuntime) Free(Buffer) {}
func (r *attTestNullRuntime) Pipeline(name string) (Pipeline, error) {
	return attTestNullPipeline{name}, nil
}
func (r *attTestNullRuntime) Dispatch(Pipeline, [3]int, [3]int, []Arg, []int) error {
	r.dispatches++
	return nil
}
func (r *attTestNullRuntime) Sync() error  { return nil }
func (r *attTestNullRuntime) Close() error { return nil }

// TestAttentionNoAllocs checks that, once the pipelines and the δ scratch
// exist, a forward and a backward encode their dispatches without
// allocating, in both flavours, on the simd kernels' checked (D = 8) and
// vector (D = 64) paths: four, or three at D = 64 in the simd flavour,
// whose dK/dV computes δ itself.
func TestAttentionNoAllocs(t *testing.T) {
	for _, c := range []struct {
		f          Flavour
		D          int
		dispatches int
	}{{Simd, 8, 4}, {Simd, 64, 3}, {Portable, 8, 4}} {
		f, D := c.f, c.D
		const N, H, Hkv, T = 8, 4, 2, 4
		rt := &attTestNullRuntime{flavour: f}
		b := New(rt)
		q, out, dq, dout := b.New(backend.BF16, N, H, D), b.New(backend.BF16, N, H, D), b.New(backend.BF16, N, H, D), b.New(backend.BF16, N, H, D)
		k, v, dk, dv := b.New(backend.BF16, N, Hkv, D), b.New(backend.BF16, N, Hkv, D), b.New(backend.BF16, N, Hkv, D), b.New(backend.BF16, N, Hkv, D)
		lse := b.New(backend.F32, N, H)
		step := func() {
			b.AttentionForward(out, lse, q, k, v, T)
			b.AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse, T)
		}
		step()
		assert.Equal(t, c.dispatches, rt.dispatches, "%s D%d: dispatches per step", f, D)
		assert.Zero(t, testing.AllocsPerRun(5, step), "%s D%d: allocations per step", f, D)
	}
}

// TestAttentionShapePanics checks that programmer errors panic with the
// op's name: a head dim beyond the kernels', query heads not a multiple of
// the key/value heads, rows not a multiple of seqLen, a wrong lse dtype.
func TestAttentionShapePanics(t *testing.T) {
	b := New(&attTestNullRuntime{})
	f32 := func(shape ...int) *backend.Tensor { return b.New(backend.F32, shape...) }
	cases := []struct {
		name              string
		out, lse, q, k, v *backend.Tensor
		seqLen            int
		want              string
	}{
		{"D=130", f32(4, 2, 130), f32(4, 2), f32(4, 2, 130), f32(4, 1, 130), f32(4, 1, 130), 2, "head dim 130"},
		{"H=3,Hkv=2", f32(4, 3, 8), f32(4, 3), f32(4, 3, 8), f32(4, 2, 8), f32(4, 2, 8), 2, "not a multiple of 2 key/value heads"},
		{"N=4,T=3", f32(4, 2, 8), f32(4, 2), f32(4, 2, 8), f32(4, 1, 8), f32(4, 1, 8), 3, "not a multiple of seqLen 3"},
		{"lse bf16", f32(4, 2, 8), b.New(backend.BF16, 4, 2), f32(4, 2, 8), f32(4, 1, 8), f32(4, 1, 8), 2, "lse"},
	}
	// The simd kernels' vector path (D = 64) needs 16-byte aligned tensors:
	// a view starting one element into its buffer is refused by name.
	bs := New(&attTestNullRuntime{flavour: Simd})
	qv := bs.New(backend.BF16, 4*2*64+1).Rows(1, 4*2*64) // 2 bytes in
	func() {
		defer func() {
			msg, _ := recover().(string)
			assert.Contains(t, msg, "AttentionForward", "misaligned view: the panic names the op")
			assert.Contains(t, msg, "multiple of 16", "misaligned view: the panic names the problem")
		}()
		bs.AttentionForward(bs.New(backend.BF16, 4, 2, 64), bs.New(backend.F32, 4, 2), qv.Reshape(4, 2, 64),
			bs.New(backend.BF16, 4, 1, 64), bs.New(backend.BF16, 4, 1, 64), 2)
	}()
	for _, c := range cases {
		func() {
			defer func() {
				msg, _ := recover().(string)
				assert.Contains(t, msg, "AttentionForward", "%s: the panic names the op", c.name)
				assert.Contains(t, msg, c.want, "%s: the panic names the problem", c.name)
			}()
			b.AttentionForward(c.out, c.lse, c.q, c.k, c.v, c.seqLen)
		}()
	}
}

// attTestSeen is a Runtime that records the kernels dispatched through it.
type attTestSeen struct {
	Runtime
	seen map[string]int
}

func (r *attTestSeen) Dispatch(p Pipeline, grid, group [3]int, args []Arg, tgMem []int) error {
	r.seen[p.Name()]++
	return r.Runtime.Dispatch(p, grid, group, args, tgMem)
}

// TestAttentionBackwardPaths runs the backward both ways in both flavours,
// dS stored by dk/dv and read back by dq (the default), and with a dS
// scratch bound of one byte, dq recomputing S and dP: each path dispatches
// its own kernels and no other, dk and dv are the same bits on both (the
// same code computes them), dq agrees with the CPU backend in float32 on
// both, and in the portable flavour, whose dq from the scratch adds the
// same products in the same order as its recomputing dq, dq is the same
// bits too. The scratch starts as NaNs, so dq reading an element that dk/dv
// did not write (or not masking one it must not use) fails. T = 150 leaves the last 64-row block of the scratch partial
// and T = 64 fills one; G = 2 query heads per key/value head; D = 24 (the
// checked path), 64 and 128 (the vector paths), in float and, for the
// bits across the paths only, bfloat. In the simd flavour at D = 64 and
// 128 the stored-dS path has dk/dv compute δ itself, with no attention_delta
// dispatch; its δ must be the δ pass's bits for dk and dv to agree.
func TestAttentionBackwardPaths(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		for _, c := range []struct {
			T, D int
			dt   backend.DType
		}{{150, 24, backend.F32}, {150, 64, backend.F32}, {64, 64, backend.F32}, {150, 128, backend.F32},
			{150, 64, backend.BF16}, {150, 128, backend.BF16}} {
			T, D, dt := c.T, c.D, c.dt
			const B, H, Hkv = 2, 4, 2
			N := B * T
			rng := rand.New(rand.NewPCG(uint64(T*D), 5))
			normal := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			qv, kv, vv, dov := normal(N*H*D), normal(N*Hkv*D), normal(N*Hkv*D), normal(N*H*D)
			run := func(be backend.Backend) (dq, dk, dv []float32) {
				q, dout := be.New(dt, N, H, D), be.New(dt, N, H, D)
				k, v := be.New(dt, N, Hkv, D), be.New(dt, N, Hkv, D)
				out, lse := be.New(dt, N, H, D), be.New(backend.F32, N, H)
				dqt, dkt, dvt := be.New(dt, N, H, D), be.New(dt, N, Hkv, D), be.New(dt, N, Hkv, D)
				be.Upload(q, qv)
				be.Upload(k, kv)
				be.Upload(v, vv)
				be.Upload(dout, dov)
				be.AttentionForward(out, lse, q, k, v, T)
				be.AttentionBackward(dqt, dkt, dvt, dout, q, k, v, out, lse, T)
				dq, dk, dv = be.Download(dqt), be.Download(dkt), be.Download(dvt)
				require.NoError(t, be.Sync())
				return dq, dk, dv
			}
			var wantDq, wantDk, wantDv []float32
			if dt == backend.F32 {
				wantDq, wantDk, wantDv = run(cpu.New())
			}
			var got [2][3][]float32
			for i, bound := range []int{0, 1} {
				name := fmt.Sprintf("%s %s T%d D%d bound %d", f, dt, T, D, bound)
				rt := &attTestSeen{Runtime: NewEmulatedRuntime(f), seen: map[string]int{}}
				b := New(rt)
				b.att.dsMax = bound
				// A scratch of NaNs: an element dq reads that dk/dv did
				// not write, unmasked, makes dq NaN.
				n := attDSFloats(B, T, H)
				b.att.ds = b.New(backend.F32, n)
				poison := make([]float32, n)
				for i := range poison {
					poison[i] = float32(math.NaN())
				}
				b.Upload(b.att.ds, poison)
				dq, dk, dv := run(b)
				got[i] = [3][]float32{dq, dk, dv}
				stored, recomputed, deltas := 0, 0, 0
				for _, e := range ElemTypes {
					stored += rt.seen[KernelName("attention", "dq_ds", f, e)] + rt.seen[KernelName("attention", "dkv_ds", f, e)]
					recomputed += rt.seen[KernelName("attention", "dq", f, e)] + rt.seen[KernelName("attention", "dkv", f, e)]
					deltas += rt.seen[KernelName("attention", "delta", f, e)]
				}
				if f == Simd && bound == 0 && (D == 64 || D == 128) {
					assert.Zero(t, deltas, "%s: δ computed by dk/dv, no attention_delta", name)
				} else {
					assert.Equal(t, 1, deltas, "%s: one attention_delta", name)
				}
				if bound == 0 {
					assert.Equal(t, 2, stored, "%s: dkv_ds and dq_ds dispatched", name)
					assert.Zero(t, recomputed, "%s: no recomputing kernel", name)
				} else {
					assert.Zero(t, stored, "%s: no stored-dS kernel past the bound", name)
					assert.Equal(t, 2, recomputed, "%s: dq and dkv dispatched", name)
				}
				if dt == backend.F32 {
					attTestClose(t, name+" dq", dq, wantDq, 2e-5)
					attTestClose(t, name+" dk", dk, wantDk, 2e-5)
					attTestClose(t, name+" dv", dv, wantDv, 2e-5)
				}
			}
			name := fmt.Sprintf("%s %s T%d D%d", f, dt, T, D)
			assert.Equal(t, got[1][1], got[0][1], "%s: dk the same bits on both paths", name)
			assert.Equal(t, got[1][2], got[0][2], "%s: dv the same bits on both paths", name)
			if f == Portable {
				assert.Equal(t, got[1][0], got[0][0], "%s: dq the same bits on both paths", name)
			}
		}
	}
}

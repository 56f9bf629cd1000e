//go:build cgo

package metal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/modeltest"
)

// The fused ops against the unfused sequences that define them, on the
// emulated backend: the same inputs (accumulators starting from the same
// values) through both, then every output compared bit for bit, in both
// flavours and every dtype, at widths that are odd, below a simdgroup,
// not multiples of the threadgroup size, on both sides of the
// threadgroup-memory limit of rmsnorm_resid_mix_bwd's column sums, and
// over several row blocks, with head counts that are not powers of two.

var fusedDTypes = []backend.DType{backend.F32, backend.F16, backend.BF16}

// fusedRig makes the tensors of one comparison on backend b.
type fusedRig struct {
	t   *testing.T
	b   *Backend
	dt  backend.DType
	rng *rand.Rand
}

func newFusedRig(t *testing.T, b *Backend, dt backend.DType, seed uint64) *fusedRig {
	return &fusedRig{t: t, b: b, dt: dt, rng: rand.New(rand.NewPCG(seed, uint64(dt)))}
}

// normal returns n draws of N(0, σ²).
func (r *fusedRig) normal(n int, sigma float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(sigma * r.rng.NormFloat64())
	}
	return v
}

// tensor uploads vals into a new tensor of dtype dt.
func (r *fusedRig) tensor(dt backend.DType, vals []float32, shape ...int) *backend.Tensor {
	x := r.b.New(dt, shape...)
	r.b.Upload(x, vals)
	return x
}

// in is a new input of N(0, σ²) values.
func (r *fusedRig) in(dt backend.DType, sigma float64, shape ...int) *backend.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return r.tensor(dt, r.normal(n, sigma), shape...)
}

// twin returns two tensors holding the same values: for the fused op and
// for the unfused sequence (accumulators, or an x the op overwrites).
func (r *fusedRig) twin(dt backend.DType, sigma float64, shape ...int) (a, b *backend.Tensor) {
	a = r.in(dt, sigma, shape...)
	b = r.b.New(dt, shape...)
	r.b.Upload(b, r.b.Download(a))
	return a, b
}

// outs returns two outputs poisoned with different values, so that an
// element either side leaves unwritten differs.
func (r *fusedRig) outs(dt backend.DType, shape ...int) (a, b *backend.Tensor) {
	a, b = r.b.New(dt, shape...), r.b.New(dt, shape...)
	pa, pb := make([]float32, a.Len()), make([]float32, a.Len())
	for i := range pa {
		pa[i], pb[i] = 7.25, -3.5
	}
	r.b.Upload(a, pa)
	r.b.Upload(b, pb)
	return a, b
}

// dispatches counts the dispatches that run encodes.
func (r *fusedRig) dispatches(run func()) int {
	before := r.b.Stats().Dispatches
	run()
	return int(r.b.Stats().Dispatches - before)
}

// same asserts that each pair (fused, unfused) of tensors holds the same
// bits, reporting the first element that differs.
func (r *fusedRig) same(name string, pairs ...*backend.Tensor) {
	r.t.Helper()
	require.NoError(r.t, r.b.Sync(), name)
	for i := 0; i < len(pairs); i += 2 {
		got, want := r.b.Download(pairs[i]), r.b.Download(pairs[i+1])
		require.Len(r.t, got, len(want), name)
		for j := range want {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				assert.Failf(r.t, "fused op differs from the unfused sequence",
					"%s: output %d, element %d of %d: fused %g (%#08x), unfused %g (%#08x)",
					name, i/2, j, len(want), got[j], math.Float32bits(got[j]), want[j], math.Float32bits(want[j]))
				break
			}
		}
	}
}

// forFused runs body for both flavours and every dtype on a fresh
// emulated backend whose pipelines follow cfg (MaxThreads may be nil).
func forFused(t *testing.T, maxThreads func(string) int, body func(t *testing.T, b *Backend, dt backend.DType)) {
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntimeFor(withEmulator(EmuConfig{Caps: EmulatorCaps(f), MaxThreads: maxThreads})))
		for _, dt := range fusedDTypes {
			t.Run(fmt.Sprintf("%s/%v", f, dt), func(t *testing.T) { body(t, b, dt) })
		}
	}
}

var fusedWidths = []struct{ N, C int }{{1, 1}, {3, 31}, {17, 33}, {2, 200}, {5, 512}, {2, 4099}}

func TestFusedResidMixRMSNormIsUnfused(t *testing.T) {
	forFused(t, nil, func(t *testing.T, b *Backend, dt backend.DType) {
		for _, sh := range fusedWidths {
			r := newFusedRig(t, b, dt, uint64(sh.N*10000+sh.C))
			N, C := sh.N, sh.C
			x, x0, w := r.in(dt, 3, N, C), r.in(dt, 1, N, C), r.in(backend.F32, 1, 2, C)
			mix, mix2 := r.outs(dt, N, C)
			h, h2 := r.outs(dt, N, C)
			rs, rs2 := r.outs(backend.F32, N)
			n := r.dispatches(func() { b.ResidMixRMSNormForward(mix, h, rs, x, x0, w) })
			assert.Equal(t, 1, n, "dispatches")
			b.ResidMixForward(mix2, x, x0, w)
			b.RMSNormForward(h2, rs2, mix2)
			r.same(fmt.Sprintf("N%d C%d", N, C), mix, mix2, h, h2, rs, rs2)
		}
	})
}

func TestFusedScaledAddRMSNormIsUnfused(t *testing.T) {
	forFused(t, nil, func(t *testing.T, b *Backend, dt backend.DType) {
		for _, sh := range fusedWidths {
			for _, v := range []struct{ noS, alias bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
				name := fmt.Sprintf("N%d C%d s=nil:%v out=x:%v", sh.N, sh.C, v.noS, v.alias)
				r := newFusedRig(t, b, dt, uint64(sh.N*10000+sh.C))
				N, C := sh.N, sh.C
				var s *backend.Tensor
				if !v.noS {
					s = r.in(backend.F32, 1, C)
				}
				y := r.in(dt, 2, N, C)
				x, x2 := r.twin(dt, 3, N, C)
				out, out2 := x, x2
				if !v.alias {
					out, out2 = r.outs(dt, N, C)
				}
				h, h2 := r.outs(dt, N, C)
				rs, rs2 := r.outs(backend.F32, N)
				n := r.dispatches(func() { b.ScaledAddRMSNormForward(out, h, rs, x, y, s) })
				assert.Equal(t, 1, n, "%s: dispatches", name)
				b.ScaledAddForward(out2, x2, y, s)
				b.RMSNormForward(h2, rs2, out2)
				r.same(name, out, out2, h, h2, rs, rs2)
			}
		}
	})
}

func TestFusedRMSNormResidMixBackwardIsUnfused(t *testing.T) {
	// 130 and 200 rows: several row blocks; 1024 and 1025 columns: the
	// column sums in threadgroup memory, then in the partials.
	shapes := append([]struct{ N, C int }{{130, 33}, {200, 7}, {3, 1024}, {3, 1025}}, fusedWidths...)
	forFused(t, nil, func(t *testing.T, b *Backend, dt backend.DType) {
		for _, sh := range shapes {
			for _, noRes := range []bool{false, true} {
				name := fmt.Sprintf("N%d C%d dres=nil:%v", sh.N, sh.C, noRes)
				r := newFusedRig(t, b, dt, uint64(sh.N*10000+sh.C))
				N, C := sh.N, sh.C
				xm, dout := r.in(dt, 2, N, C), r.in(dt, 1, N, C)
				rstd := r.b.New(backend.F32, N)
				b.RMSNormForward(r.b.New(dt, N, C), rstd, xm)
				var dres *backend.Tensor
				if !noRes {
					dres = r.in(dt, 1, N, C)
				}
				x, x0, w := r.in(dt, 1, N, C), r.in(dt, 1, N, C), r.in(backend.F32, 1, 2, C)
				dx, dx2 := r.outs(dt, N, C)
				dx0, dx02 := r.twin(backend.F32, 1, N, C)
				dmix, dmix2 := r.twin(backend.F32, 1, 2, C)
				n := r.dispatches(func() { b.RMSNormResidMixBackward(dx, dx0, dmix, dout, xm, rstd, dres, x, x0, w) })
				assert.Equal(t, 2, n, "%s: dispatches", name)
				dm := r.b.New(dt, N, C)
				b.RMSNormBackward(dm, dout, xm, rstd, dres)
				b.ResidMixBackward(dx2, dx02, dmix2, dm, x, x0, w)
				r.same(name, dx, dx2, dx0, dx02, dmix, dmix2)
			}
		}
	})
}

func TestFusedQKNormRopePairIsUnfused(t *testing.T) {
	shapes := []struct{ B, T, Hq, Hk, D int }{
		{1, 1, 1, 1, 2}, {2, 17, 3, 1, 8}, {1, 33, 6, 5, 64}, {2, 5, 3, 2, 66}, {1, 9, 7, 3, 130},
	}
	gains := []struct{ q, k bool }{{true, false}, {true, true}, {false, false}, {false, true}}
	forFused(t, nil, func(t *testing.T, b *Backend, dt backend.DType) {
		for _, sh := range shapes {
			for _, g := range gains {
				name := fmt.Sprintf("B%d T%d Hq%d Hk%d D%d qgain:%v kgain:%v", sh.B, sh.T, sh.Hq, sh.Hk, sh.D, g.q, g.k)
				r := newFusedRig(t, b, dt, uint64(sh.T*1000+sh.D))
				N, D := sh.B*sh.T, sh.D
				q, k := r.in(dt, 2, N, sh.Hq, D), r.in(dt, 2, N, sh.Hk, D)
				var qg, kg, dqg, dqg2, dkg, dkg2 *backend.Tensor
				if g.q {
					qg = r.in(backend.F32, 1, sh.Hq)
					dqg, dqg2 = r.twin(backend.F32, 1, sh.Hq)
				}
				if g.k {
					kg = r.in(backend.F32, 1, sh.Hk)
					dkg, dkg2 = r.twin(backend.F32, 1, sh.Hk)
				}
				qo, qo2 := r.outs(dt, N, sh.Hq, D)
				ko, ko2 := r.outs(dt, N, sh.Hk, D)
				qr, qr2 := r.outs(backend.F32, N, sh.Hq)
				kr, kr2 := r.outs(backend.F32, N, sh.Hk)
				n := r.dispatches(func() { b.QKNormRopePairForward(qo, qr, q, qg, ko, kr, k, kg, sh.T, 10000) })
				assert.Equal(t, 1, n, "%s: forward dispatches", name)
				b.QKNormRopeForward(qo2, qr2, q, qg, sh.T, 10000)
				b.QKNormRopeForward(ko2, kr2, k, kg, sh.T, 10000)
				r.same(name+" forward", qo, qo2, ko, ko2, qr, qr2, kr, kr2)

				dqo, dko := r.in(dt, 1, N, sh.Hq, D), r.in(dt, 1, N, sh.Hk, D)
				dq, dq2 := r.outs(dt, N, sh.Hq, D)
				dk, dk2 := r.outs(dt, N, sh.Hk, D)
				want := 1
				if g.q || g.k {
					want = 2
				}
				n = r.dispatches(func() {
					b.QKNormRopePairBackward(dq, dqg, dqo, q, qr, qg, dk, dkg, dko, k, kr, kg, sh.T, 10000)
				})
				assert.Equal(t, want, n, "%s: backward dispatches", name)
				b.QKNormRopeBackward(dq2, dqg2, dqo, q, qr, qg, sh.T, 10000)
				b.QKNormRopeBackward(dk2, dkg2, dko, k, kr, kg, sh.T, 10000)
				pairs := []*backend.Tensor{dq, dq2, dk, dk2}
				if g.q {
					pairs = append(pairs, dqg, dqg2)
				}
				if g.k {
					pairs = append(pairs, dkg, dkg2)
				}
				r.same(name+" backward", pairs...)
			}
		}
	})
}

func TestFusedSoftcapCEIsUnfused(t *testing.T) {
	shapes := []struct {
		N, V       int
		cap, sigma float64
		scale      float32
	}{
		{1, 1, 30, 1, 1}, {3, 31, 30, 20, 0.37}, {17, 33, 5, 10, 1.0 / 17}, {2, 200, 30, 3, 1},
		{8, 1024, 30, 30, 65536.0 / 8}, {2, 4099, 30, 3, 0.5},
	}
	forFused(t, nil, func(t *testing.T, b *Backend, dt backend.DType) {
		for _, sh := range shapes {
			name := fmt.Sprintf("N%d V%d cap%g", sh.N, sh.V, sh.cap)
			r := newFusedRig(t, b, dt, uint64(sh.N*10000+sh.V))
			logits := r.in(dt, sh.sigma, sh.N, sh.V)
			tv := make([]int32, sh.N)
			for i := range tv {
				tv[i] = int32(r.rng.IntN(sh.V))
			}
			if sh.N > 2 {
				tv[1] = int32(sh.V) // outside the vocabulary: a NaN loss, no target column
			}
			targets := b.New(backend.I32, sh.N)
			b.Upload(targets, tv)
			loss, loss2 := r.outs(backend.F32, sh.N)
			dl, dl2 := r.outs(dt, sh.N, sh.V)
			n := r.dispatches(func() { b.SoftcapCEForwardBackward(loss, dl, logits, targets, float32(sh.cap), sh.scale) })
			assert.Equal(t, 1, n, "%s: dispatches", name)
			b.SoftcapCEForward(loss2, logits, targets, float32(sh.cap))
			b.SoftcapCEBackward(dl2, logits, targets, float32(sh.cap), sh.scale)
			r.same(name, loss, loss2, dl, dl2)
		}
	})
}

// TestFusedLinearReluSqIsUnfused: the MLP's linear + relu² (forward and
// backward) against LinearForward then ReluSqForward, and LinearBackward
// then ReluSqBackward, bit for bit: one GEMM dispatch each (and the weight
// gradient's), at widths that are multiples of no tile, a tile-aligned
// shape, outputs at an odd offset (no paired stores), and a product that
// gemmSlice splits, which runs the unfused sequence (its dispatches).
func TestFusedLinearReluSqIsUnfused(t *testing.T) {
	shapes := []struct {
		N, I, O  int
		odd      bool // outputs at an odd element offset
		fwd, bwd int  // dispatches (the backward's with dw)
	}{
		{1, 1, 1, false, 1, 2}, {70, 40, 65, false, 1, 2}, {128, 64, 96, false, 1, 2}, {33, 17, 31, true, 1, 2},
		{9, 1030, 1027, false, 3, 4}, // split k: the unfused sequences (slices, reduce, relu_sq; dw's GEMM)
	}
	forFused(t, nil, func(t *testing.T, b *Backend, dt backend.DType) {
		for _, sh := range shapes {
			name := fmt.Sprintf("N%d I%d O%d odd=%v", sh.N, sh.I, sh.O, sh.odd)
			r := newFusedRig(t, b, dt, uint64(sh.N*10000+sh.O))
			out := func(rows, cols int) (x, y *backend.Tensor) {
				if !sh.odd {
					return r.outs(dt, rows, cols)
				}
				x, y = r.outs(dt, rows+1, cols)
				return x.Rows(1, rows), y.Rows(1, rows)
			}
			x, w := r.in(dt, 1, sh.N, sh.I), r.in(dt, 1, sh.O, sh.I)
			h, h2 := out(sh.N, sh.O)
			a, a2 := out(sh.N, sh.O)
			assert.Equal(t, sh.fwd, r.dispatches(func() { b.LinearReluSqForward(h, a, x, w) }), "%s: forward dispatches", name)
			b.LinearForward(h2, x, w)
			b.ReluSqForward(a2, h2)
			r.same(name+" forward", h, h2, a, a2)

			// The backward: dout (N, O)·w (O, I) through relu² at hIn (N, I).
			av, hIn, dout := r.in(dt, 1, sh.N, sh.I), r.in(dt, 1, sh.N, sh.I), r.in(dt, 1, sh.N, sh.O)
			dh, dh2 := out(sh.N, sh.I)
			dw, dw2 := r.twin(backend.F32, 1, sh.O, sh.I)
			assert.Equal(t, sh.bwd, r.dispatches(func() { b.LinearReluSqBackward(dh, dw, dout, av, hIn, w) }),
				"%s: backward dispatches", name)
			da := b.New(dt, sh.N, sh.I)
			b.LinearBackward(da, dw2, dout, av, w, false)
			b.ReluSqBackward(dh2, da, hIn)
			r.same(name+" backward", dh, dh2, dw, dw2)
			assert.Equal(t, sh.bwd-1, r.dispatches(func() { b.LinearReluSqBackward(dh, nil, dout, av, hIn, w) }),
				"%s: backward dispatches without dw", name)
			r.same(name+" backward, dw nil", dh, dh2)
		}
	})
}

// TestFusedLinearScaledAddIsUnfused: the MLP's second product and the
// block's residual add against LinearForward then ScaledAddForward, bit
// for bit: one GEMM dispatch, at widths that are multiples of no tile, a
// tile-aligned shape, s nil, out aliasing res, outputs at an odd offset (no
// paired stores), and a product that gemmSlice splits, which runs the
// unfused sequence (its dispatches: slices, reduce, scaled_add_fwd).
func TestFusedLinearScaledAddIsUnfused(t *testing.T) {
	shapes := []struct {
		N, I, O         int
		odd, noS, alias bool
		fwd             int // dispatches
	}{
		{1, 1, 1, false, false, false, 1}, {70, 40, 65, false, false, false, 1}, {128, 64, 96, false, false, false, 1},
		{33, 17, 31, true, false, false, 1}, {66, 48, 70, false, true, false, 1}, {66, 48, 70, true, false, true, 1},
		{9, 1030, 1027, false, false, false, 3},
	}
	forFused(t, nil, func(t *testing.T, b *Backend, dt backend.DType) {
		for _, sh := range shapes {
			name := fmt.Sprintf("N%d I%d O%d odd=%v s=nil:%v out=res:%v", sh.N, sh.I, sh.O, sh.odd, sh.noS, sh.alias)
			r := newFusedRig(t, b, dt, uint64(sh.N*10000+sh.O+7))
			out := func(rows, cols int) (x, y *backend.Tensor) {
				if !sh.odd {
					return r.outs(dt, rows, cols)
				}
				x, y = r.outs(dt, rows+1, cols)
				return x.Rows(1, rows), y.Rows(1, rows)
			}
			x, w := r.in(dt, 1, sh.N, sh.I), r.in(dt, 1, sh.O, sh.I)
			var s *backend.Tensor
			if !sh.noS {
				s = r.in(backend.F32, 1, sh.O)
			}
			y, y2 := out(sh.N, sh.O)
			var res, res2, o, o2 *backend.Tensor
			if sh.alias {
				res, res2 = r.twin(dt, 1, sh.N, sh.O)
				o, o2 = res, res2
			} else {
				res = r.in(dt, 1, sh.N, sh.O)
				res2 = res
				o, o2 = out(sh.N, sh.O)
			}
			assert.Equal(t, sh.fwd, r.dispatches(func() { b.LinearScaledAddForward(y, o, x, w, res, s) }), "%s: dispatches", name)
			b.LinearForward(y2, x, w)
			b.ScaledAddForward(o2, res2, y2, s)
			r.same(name, y, y2, o, o2)
		}
	})
}

// TestFusedFallsBackToUnfused: where a fused row kernel's pipeline allows
// fewer threads than the unfused kernel whose sums it must reproduce, the
// op runs the unfused sequence (the same dispatches), and still the same
// bits.
func TestFusedFallsBackToUnfused(t *testing.T) {
	fused := []string{"resid_mix_rmsnorm_", "scaled_add_rmsnorm_", "rmsnorm_resid_mix_", "qk_norm_rope_pair_dgain_", "softcap_ce_fused_"}
	limit := func(name string) int {
		for _, p := range fused {
			if strings.HasPrefix(name, p) {
				return 64
			}
		}
		return 0
	}
	forFused(t, limit, func(t *testing.T, b *Backend, dt backend.DType) {
		const N, C, T, H = 6, 400, 3, 2 // 100 chunks of 4: 128 threads, over the limit
		r := newFusedRig(t, b, dt, 99)
		x, x0, w := r.in(dt, 3, N, C), r.in(dt, 1, N, C), r.in(backend.F32, 1, 2, C)
		mix, mix2 := r.outs(dt, N, C)
		h, h2 := r.outs(dt, N, C)
		rs, rs2 := r.outs(backend.F32, N)
		assert.Equal(t, 2, r.dispatches(func() { b.ResidMixRMSNormForward(mix, h, rs, x, x0, w) }), "resid mix + rmsnorm")
		b.ResidMixForward(mix2, x, x0, w)
		b.RMSNormForward(h2, rs2, mix2)
		r.same("resid mix + rmsnorm", mix, mix2, h, h2, rs, rs2)

		y, s := r.in(dt, 1, N, C), r.in(backend.F32, 1, C)
		out, out2 := r.outs(dt, N, C)
		assert.Equal(t, 2, r.dispatches(func() { b.ScaledAddRMSNormForward(out, h, rs, x, y, s) }), "scaled add + rmsnorm")
		b.ScaledAddForward(out2, x, y, s)
		b.RMSNormForward(h2, rs2, out2)
		r.same("scaled add + rmsnorm", out, out2, h, h2, rs, rs2)

		dout, dres := r.in(dt, 1, N, C), r.in(dt, 1, N, C)
		dx, dx2 := r.outs(dt, N, C)
		dx0, dx02 := r.twin(backend.F32, 1, N, C)
		dmix, dmix2 := r.twin(backend.F32, 1, 2, C)
		assert.Equal(t, 3, r.dispatches(func() { b.RMSNormResidMixBackward(dx, dx0, dmix, dout, mix, rs, dres, x, x0, w) }),
			"rmsnorm + resid mix backward")
		dm := b.New(dt, N, C)
		b.RMSNormBackward(dm, dout, mix, rs, dres)
		b.ResidMixBackward(dx2, dx02, dmix2, dm, x, x0, w)
		r.same("rmsnorm + resid mix backward", dx, dx2, dx0, dx02, dmix, dmix2)

		q := r.in(dt, 1, 100*T, H, 8) // 100 sequences: dgain over 300 rows
		qg := r.in(backend.F32, 1, H)
		qr := b.New(backend.F32, 100*T, H)
		b.QKNormRopeForward(b.New(dt, 100*T, H, 8), qr, q, qg, T, 10000)
		dqo := r.in(dt, 1, 100*T, H, 8)
		dq, dq2 := r.outs(dt, 100*T, H, 8)
		dk, dk2 := r.outs(dt, 100*T, H, 8)
		dqg, dqg2 := r.twin(backend.F32, 1, H)
		assert.Equal(t, 3, r.dispatches(func() {
			b.QKNormRopePairBackward(dq, dqg, dqo, q, qr, qg, dk, nil, dqo, q, qr, nil, T, 10000)
		}), "q/k pair backward")
		b.QKNormRopeBackward(dq2, dqg2, dqo, q, qr, qg, T, 10000)
		b.QKNormRopeBackward(dk2, nil, dqo, q, qr, nil, T, 10000)
		r.same("q/k pair backward", dq, dq2, dk, dk2, dqg, dqg2)

		logits := r.in(dt, 5, N, C)
		targets := b.New(backend.I32, N)
		b.Upload(targets, []int32{0, 1, 2, 199, 5, 77})
		loss, loss2 := r.outs(backend.F32, N)
		dl, dl2 := r.outs(dt, N, C)
		assert.Equal(t, 2, r.dispatches(func() { b.SoftcapCEForwardBackward(loss, dl, logits, targets, 30, 0.5) }), "softcap CE")
		b.SoftcapCEForward(loss2, logits, targets, 30)
		b.SoftcapCEBackward(dl2, logits, targets, 30, 0.5)
		r.same("softcap CE", loss, loss2, dl, dl2)
	})
}

// TestFusedIdentityEmulated: the model's fused passes give the bits of its
// unfused ones on the emulated backend, in both flavours and every dtype.
func TestFusedIdentityEmulated(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		t.Run(f.String(), func(t *testing.T) { modeltest.RunFusedIdentity(t, New(NewEmulatedRuntime(f))) })
	}
}

// TestFusedNoAllocs checks that, once pipelines, rotary tables and scratch
// exist, the fused ops encode their dispatches without allocating, and
// with how many.
func TestFusedNoAllocs(t *testing.T) {
	const N, C, Hq, Hk, D, T, V = 4, 40, 3, 1, 8, 2, 50
	rt := &qkTestNullRuntime{}
	b := New(rt)
	bf := backend.BF16
	x, x0, mix, h := b.New(bf, N, C), b.New(bf, N, C), b.New(bf, N, C), b.New(bf, N, C)
	w, s, r := b.New(backend.F32, 2, C), b.New(backend.F32, C), b.New(backend.F32, N)
	dx0, dmix := b.New(backend.F32, N, C), b.New(backend.F32, 2, C)
	q, dq, qr := b.New(bf, N, Hq, D), b.New(bf, N, Hq, D), b.New(backend.F32, N, Hq)
	k, dk, kr := b.New(bf, N, Hk, D), b.New(bf, N, Hk, D), b.New(backend.F32, N, Hk)
	gain, dgain := b.New(backend.F32, Hq), b.New(backend.F32, Hq)
	logits, dl, loss := b.New(bf, N, V), b.New(bf, N, V), b.New(backend.F32, N)
	targets := b.New(backend.I32, N)
	wl, dwl := b.New(bf, C, C), b.New(backend.F32, C, C) // the MLP's (square here) linear + relu²
	step := func() {
		b.ResidMixRMSNormForward(mix, h, r, x, x0, w)
		b.ScaledAddRMSNormForward(x, h, r, x, mix, s)
		b.RMSNormResidMixBackward(mix, dx0, dmix, h, x, r, nil, x, x0, w)
		b.QKNormRopePairForward(dq, qr, q, gain, dk, kr, k, nil, T, 10000)
		b.QKNormRopePairBackward(dq, dgain, q, q, qr, gain, dk, nil, k, k, kr, nil, T, 10000)
		b.SoftcapCEForwardBackward(loss, dl, logits, targets, 30, 0.5)
		b.LinearReluSqForward(mix, h, x, wl)
		b.LinearReluSqBackward(mix, dwl, x, h, x0, wl)
		b.LinearScaledAddForward(h, x, mix, wl, x, s)
	}
	step()
	// The backwards with column sums are two each, and LinearReluSqBackward
	// (its dx GEMM, then dw's).
	assert.Equal(t, 12, rt.dispatches, "dispatches per step")
	assert.Zero(t, testing.AllocsPerRun(5, step), "allocations per step")
}

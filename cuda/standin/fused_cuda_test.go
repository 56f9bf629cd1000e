//go:build cuda

package standin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cuda"
)

// TestFusedOpsMatchUnfused: each fused op of the CUDA backend gives the
// bits of its unfused sequence on the same backend (the contract's
// definition of a fused op), in every flavour and element type, at widths
// that are not multiples of a 16-byte chunk or of a warp's, with head
// counts that are not powers of two, and with every tensor of the fused
// call misaligned by one element (so its kernels take the element-wise
// path where the unfused kernels, on aligned tensors, take the 16-byte
// one): the result must not depend on how memory is accessed.
func TestFusedOpsMatchUnfused(t *testing.T) {
	for _, fl := range []struct {
		name string
		o    cuda.Options
	}{
		{"portable", cuda.Options{Flavour: cuda.PortableFlavour, GEMM: cuda.GEMMKernels}},
		{"tc", cuda.Options{Flavour: cuda.TCFlavour, GEMM: cuda.GEMMKernels}},
	} {
		t.Run(fl.name, func(t *testing.T) {
			b := open(t, fl.o)
			for _, dt := range []backend.DType{backend.F32, backend.F16, backend.BF16} {
				t.Run(dt.String(), func(t *testing.T) {
					for _, misalign := range []bool{false, true} {
						name := "aligned"
						if misalign {
							name = "misaligned"
						}
						t.Run(name, func(t *testing.T) {
							f := &fusedRig{t: t, b: b, dt: dt, misalign: misalign, rng: rand.New(rand.NewPCG(7, uint64(dt)))}
							t.Run("resid_mix_rmsnorm", f.residMixRMSNorm)
							t.Run("scaled_add_rmsnorm", f.scaledAddRMSNorm)
							t.Run("qk_norm_rope_pair", f.qkNormRopePair)
							t.Run("rmsnorm_resid_mix_bwd", f.rmsNormResidMixBackward)
							t.Run("softcap_ce_fused", f.softcapCE)
						})
					}
				})
			}
		})
	}
}

// fusedRig makes the tensors of one comparison: inputs the fused and the
// unfused calls share, and for the fused call, when misalign is set,
// copies of them one element into a larger allocation.
type fusedRig struct {
	t        *testing.T
	b        *cuda.Backend
	dt       backend.DType
	misalign bool
	rng      *rand.Rand
	owned    []*backend.Tensor
}

// widths are the row widths of the row ops: one element, around a warp of
// 16-byte chunks and a warp of elements, and wide rows with tails.
var widths = []struct{ N, C int }{{3, 1}, {5, 31}, {4, 33}, {3, 200}, {2, 512}, {2, 4099}}

func (f *fusedRig) free() {
	for _, t := range f.owned {
		f.b.Free(t)
	}
	f.owned = nil
}

// alloc makes a zeroed tensor, one element into its allocation when
// shifted.
func (f *fusedRig) alloc(dt backend.DType, shifted bool, shape ...int) *backend.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if !shifted {
		t := f.b.New(dt, shape...)
		f.owned = append(f.owned, t)
		return t
	}
	p := f.b.New(dt, n+1)
	f.owned = append(f.owned, p)
	return &backend.Tensor{Shape: append([]int(nil), shape...), DType: dt, Offset: p.Offset + 1, Data: p.Data}
}

// values are n normal values scaled by s.
func (f *fusedRig) values(n int, s float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(s * f.rng.NormFloat64())
	}
	return v
}

// pair uploads vals into a tensor for the unfused sequence and one for the
// fused op (misaligned when the rig is).
func (f *fusedRig) pair(dt backend.DType, vals []float32, shape ...int) (unfused, fused *backend.Tensor) {
	unfused = f.alloc(dt, false, shape...)
	fused = f.alloc(dt, f.misalign, shape...)
	f.b.Upload(unfused, vals)
	f.b.Upload(fused, vals)
	return unfused, fused
}

// out makes an output pair, poisoned differently (NaN for the unfused
// sequence, a number for the fused op), so that an element either leaves
// unwritten differs.
func (f *fusedRig) out(dt backend.DType, shape ...int) (unfused, fused *backend.Tensor) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	nan, num := make([]float32, n), make([]float32, n)
	for i := range nan {
		nan[i], num[i] = float32(math.NaN()), 1234.5
	}
	unfused = f.alloc(dt, false, shape...)
	fused = f.alloc(dt, f.misalign, shape...)
	f.b.Upload(unfused, nan)
	f.b.Upload(fused, num)
	return unfused, fused
}

// same demands identical bits.
func (f *fusedRig) same(what string, unfused, fused *backend.Tensor) {
	f.t.Helper()
	a, b := f.b.Download(unfused), f.b.Download(fused)
	require.NoError(f.t, f.b.Sync())
	require.Len(f.t, b, len(a))
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			require.Failf(f.t, "fused op differs from the unfused sequence",
				"%s %v element %d: unfused %g (%#08x), fused %g (%#08x)", what, unfused.Shape, i, a[i],
				math.Float32bits(a[i]), b[i], math.Float32bits(b[i]))
		}
	}
}

func (f *fusedRig) residMixRMSNorm(t *testing.T) {
	for _, w := range widths {
		t.Run(fmt.Sprintf("N%d_C%d", w.N, w.C), func(t *testing.T) {
			f.t = t
			defer f.free()
			N, C := w.N, w.C
			x, xf := f.pair(f.dt, f.values(N*C, 1), N, C)
			x0, x0f := f.pair(f.dt, f.values(N*C, 1), N, C)
			mw, mwf := f.pair(backend.F32, f.values(2*C, 1), 2, C)
			mix, mixf := f.out(f.dt, N, C)
			h, hf := f.out(f.dt, N, C)
			rstd, rstdf := f.out(backend.F32, N)
			f.b.ResidMixForward(mix, x, x0, mw)
			f.b.RMSNormForward(h, rstd, mix)
			f.b.ResidMixRMSNormForward(mixf, hf, rstdf, xf, x0f, mwf)
			f.same("mix", mix, mixf)
			f.same("h", h, hf)
			f.same("rstd", rstd, rstdf)
		})
	}
}

func (f *fusedRig) scaledAddRMSNorm(t *testing.T) {
	for _, w := range widths {
		for _, v := range []struct {
			name       string
			noS, alias bool
		}{{"s", false, false}, {"s=nil", true, false}, {"out=x", false, true}} {
			t.Run(fmt.Sprintf("N%d_C%d_%s", w.N, w.C, v.name), func(t *testing.T) {
				f.t = t
				defer f.free()
				N, C := w.N, w.C
				x, xf := f.pair(f.dt, f.values(N*C, 1), N, C)
				y, yf := f.pair(f.dt, f.values(N*C, 1), N, C)
				var s, sf *backend.Tensor
				if !v.noS {
					s, sf = f.pair(backend.F32, f.values(C, 1), C)
				}
				out, outf := x, xf
				if !v.alias {
					out, outf = f.out(f.dt, N, C)
				}
				h, hf := f.out(f.dt, N, C)
				rstd, rstdf := f.out(backend.F32, N)
				f.b.ScaledAddForward(out, x, y, s)
				f.b.RMSNormForward(h, rstd, out)
				f.b.ScaledAddRMSNormForward(outf, hf, rstdf, xf, yf, sf)
				f.same("out", out, outf)
				f.same("h", h, hf)
				f.same("rstd", rstd, rstdf)
			})
		}
	}
}

func (f *fusedRig) qkNormRopePair(t *testing.T) {
	for _, c := range []struct {
		T, B, Hq, Hk, D int
		qGain, kGain    bool
	}{
		{1, 1, 1, 1, 2, true, true},
		{3, 2, 3, 1, 6, true, false},
		{5, 1, 5, 3, 64, false, true},
		{2, 3, 6, 2, 66, true, true},
		{4, 1, 3, 5, 128, false, false},
		{2, 2, 7, 3, 130, true, false},
		{1, 2, 2, 1, 600, true, true}, // 38 chunks of pairs: more than one per lane
	} {
		t.Run(fmt.Sprintf("T%d_B%d_Hq%d_Hk%d_D%d_qgain%v_kgain%v", c.T, c.B, c.Hq, c.Hk, c.D, c.qGain, c.kGain), func(t *testing.T) {
			f.t = t
			defer f.free()
			N, D := c.T*c.B, c.D
			const base = 10000
			q, qf := f.pair(f.dt, f.values(N*c.Hq*D, 1), N, c.Hq, D)
			k, kf := f.pair(f.dt, f.values(N*c.Hk*D, 1), N, c.Hk, D)
			var qg, qgf, kg, kgf, dqg, dqgf, dkg, dkgf *backend.Tensor
			if c.qGain {
				qg, qgf = f.pair(backend.F32, f.values(c.Hq, 1), c.Hq)
				dqg, dqgf = f.pair(backend.F32, f.values(c.Hq, 1), c.Hq)
			}
			if c.kGain {
				kg, kgf = f.pair(backend.F32, f.values(c.Hk, 1), c.Hk)
				dkg, dkgf = f.pair(backend.F32, f.values(c.Hk, 1), c.Hk)
			}
			qo, qof := f.out(f.dt, N, c.Hq, D)
			ko, kof := f.out(f.dt, N, c.Hk, D)
			qr, qrf := f.out(backend.F32, N, c.Hq)
			kr, krf := f.out(backend.F32, N, c.Hk)
			f.b.QKNormRopeForward(qo, qr, q, qg, c.T, base)
			f.b.QKNormRopeForward(ko, kr, k, kg, c.T, base)
			f.b.QKNormRopePairForward(qof, qrf, qf, qgf, kof, krf, kf, kgf, c.T, base)
			f.same("qOut", qo, qof)
			f.same("qRstd", qr, qrf)
			f.same("kOut", ko, kof)
			f.same("kRstd", kr, krf)

			dqo, dqof := f.pair(f.dt, f.values(N*c.Hq*D, 1), N, c.Hq, D)
			dko, dkof := f.pair(f.dt, f.values(N*c.Hk*D, 1), N, c.Hk, D)
			dq, dqf := f.out(f.dt, N, c.Hq, D)
			dk, dkf := f.out(f.dt, N, c.Hk, D)
			// The backward reads the forward's rstd (the same bits on both
			// sides, checked above).
			f.b.QKNormRopeBackward(dq, dqg, dqo, q, qr, qg, c.T, base)
			f.b.QKNormRopeBackward(dk, dkg, dko, k, kr, kg, c.T, base)
			f.b.QKNormRopePairBackward(dqf, dqgf, dqof, qf, qrf, qgf, dkf, dkgf, dkof, kf, krf, kgf, c.T, base)
			f.same("dq", dq, dqf)
			f.same("dk", dk, dkf)
			if c.qGain {
				f.same("dqGain", dqg, dqgf)
			}
			if c.kGain {
				f.same("dkGain", dkg, dkgf)
			}
		})
	}
}

func (f *fusedRig) rmsNormResidMixBackward(t *testing.T) {
	// 8,300 rows: row blocks of 65 rows, more than one tile of the fused
	// kernel; 5 rows: most row blocks empty.
	shapes := append([]struct{ N, C int }{{8300, 3}, {130, 9}}, widths...)
	for _, w := range shapes {
		for _, withRes := range []bool{false, true} {
			t.Run(fmt.Sprintf("N%d_C%d_dres%v", w.N, w.C, withRes), func(t *testing.T) {
				f.t = t
				defer f.free()
				N, C := w.N, w.C
				x, xf := f.pair(f.dt, f.values(N*C, 1), N, C)
				x0, x0f := f.pair(f.dt, f.values(N*C, 1), N, C)
				mw, mwf := f.pair(backend.F32, f.values(2*C, 1), 2, C)
				xm, xmf := f.pair(f.dt, f.values(N*C, 1), N, C)
				rstd, rstdf := f.pair(backend.F32, f.values(N, 0.3), N)
				dout, doutf := f.pair(f.dt, f.values(N*C, 1), N, C)
				var dres, dresf *backend.Tensor
				if withRes {
					dres, dresf = f.pair(f.dt, f.values(N*C, 1), N, C)
				}
				dx, dxf := f.out(f.dt, N, C)
				dx0, dx0f := f.pair(backend.F32, f.values(N*C, 1), N, C)
				dmix, dmixf := f.pair(backend.F32, f.values(2*C, 1), 2, C)
				dm := f.alloc(f.dt, false, N, C)
				f.b.RMSNormBackward(dm, dout, xm, rstd, dres)
				f.b.ResidMixBackward(dx, dx0, dmix, dm, x, x0, mw)
				f.b.RMSNormResidMixBackward(dxf, dx0f, dmixf, doutf, xmf, rstdf, dresf, xf, x0f, mwf)
				f.same("dx", dx, dxf)
				f.same("dx0", dx0, dx0f)
				f.same("dmix", dmix, dmixf)
			})
		}
	}
}

func (f *fusedRig) softcapCE(t *testing.T) {
	for _, w := range []struct{ N, V int }{{3, 1}, {4, 31}, {3, 33}, {5, 200}, {3, 1024}, {2, 4099}} {
		t.Run(fmt.Sprintf("N%d_V%d", w.N, w.V), func(t *testing.T) {
			f.t = t
			defer f.free()
			N, V := w.N, w.V
			logits, logitsf := f.pair(f.dt, f.values(N*V, 20), N, V)
			tg := make([]int32, N)
			for i := range tg {
				tg[i] = int32(f.rng.IntN(V))
			}
			tg[0] = int32(V) // outside the vocabulary: a NaN loss, no target column
			if N > 2 {
				tg[1] = -1
			}
			targets := f.b.New(backend.I32, N)
			f.owned = append(f.owned, targets)
			f.b.Upload(targets, tg)
			loss, lossf := f.out(backend.F32, N)
			dl, dlf := f.out(f.dt, N, V)
			const cap, scale = 30, 1.0 / 77
			f.b.SoftcapCEForward(loss, logits, targets, cap)
			f.b.SoftcapCEBackward(dl, logits, targets, cap, scale)
			f.b.SoftcapCEForwardBackward(lossf, dlf, logitsf, targets, cap, scale)
			f.same("loss", loss, lossf)
			f.same("dlogits", dl, dlf)
		})
	}
}

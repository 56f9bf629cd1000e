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
)

// The row and element-wise kernels that move 4-element chunks (golf_rows.h)
// against float64 oracles written here, on the emulated backend, in both
// flavours and every float dtype, at row widths that are not multiples of
// 4 (the short last chunk of each row), of the threadgroup or of a
// simdgroup, and with every tensor either on a 4-element boundary (the
// vector path where the width allows it) or one element off it (the
// scalar path). Each op also gives the same bits on both placements of the
// same values: the vector and the scalar accesses compute the same thing.

var (
	vecWidths  = []int{37, 510, 512, 513, 1000}
	vecDTypes  = []backend.DType{backend.F32, backend.F16, backend.BF16}
	vecOffsets = []int{0, 1}
)

// vecTol is the tolerance of a result rounded to dt, relative to
// 1 + |want|.
func vecTol(dt backend.DType) float64 {
	switch dt {
	case backend.F16:
		return 4e-3
	case backend.BF16:
		return 3e-2
	}
	return 2e-5
}

// vecRig makes the tensors of one case: each a view starting off elements
// into a buffer of its own, holding values drawn from a generator seeded
// alike for both placements.
type vecRig struct {
	t   *testing.T
	b   *Backend
	off int
	rng *rand.Rand
}

func newVecRig(t *testing.T, b *Backend, off int, seed uint64) *vecRig {
	return &vecRig{t: t, b: b, off: off, rng: rand.New(rand.NewPCG(seed, 7))}
}

// tensor is a (shape) view of dtype dt, off elements into its buffer,
// holding vals; it returns the values as stored (rounded to dt).
func (r *vecRig) tensor(dt backend.DType, vals []float32, shape ...int) (*backend.Tensor, []float64) {
	n := len(vals)
	whole := r.b.New(dt, n+r.off)
	padded := make([]float32, n+r.off)
	for i := 0; i < r.off; i++ {
		padded[i] = 99
	}
	copy(padded[r.off:], vals)
	r.b.Upload(whole, padded)
	v := whole.Rows(r.off, n).Reshape(shape...)
	got := r.b.Download(v)
	w := make([]float64, n)
	for i, x := range got {
		w[i] = float64(x)
	}
	return v, w
}

// in is a tensor of N(0, σ²) draws.
func (r *vecRig) in(dt backend.DType, sigma float64, shape ...int) (*backend.Tensor, []float64) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(sigma * r.rng.NormFloat64())
	}
	return r.tensor(dt, vals, shape...)
}

// out is an output tensor poisoned with a value no kernel writes.
func (r *vecRig) out(dt backend.DType, shape ...int) *backend.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = 12345
	}
	t, _ := r.tensor(dt, vals, shape...)
	return t
}

// near asserts got (a tensor of dtype dt) against want within dt's
// tolerance, reporting the first element outside it.
func (r *vecRig) near(name string, dt backend.DType, got *backend.Tensor, want []float64) []float32 {
	r.t.Helper()
	require.NoError(r.t, r.b.Sync(), name)
	g := r.b.Download(got)
	require.Len(r.t, g, len(want), name)
	tol := vecTol(dt)
	for i := range want {
		if math.Abs(float64(g[i])-want[i]) > tol*(1+math.Abs(want[i])) {
			assert.InDelta(r.t, want[i], float64(g[i]), tol*(1+math.Abs(want[i])), "%s: element %d of %d", name, i, len(want))
			break
		}
	}
	return g
}

// vecCase runs body for both flavours, every dtype, every width and both
// placements; body returns its outputs, and the two placements' outputs
// must be the same bits.
func vecCase(t *testing.T, dts []backend.DType, body func(r *vecRig, dt backend.DType, N, C int) [][]float32) {
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		for _, dt := range dts {
			for _, C := range vecWidths {
				t.Run(fmt.Sprintf("%s/%v/C=%d", f, dt, C), func(t *testing.T) {
					const N = 5
					var outs [][][]float32
					for _, off := range vecOffsets {
						outs = append(outs, body(newVecRig(t, b, off, uint64(C)), dt, N, C))
					}
					for i := range outs[0] {
						for j := range outs[0][i] {
							if math.Float32bits(outs[0][i][j]) != math.Float32bits(outs[1][i][j]) {
								assert.Failf(t, "the placements differ", "output %d, element %d: aligned %g, offset %g",
									i, j, outs[0][i][j], outs[1][i][j])
								break
							}
						}
					}
				})
			}
		}
	}
}

// oracleRstd is 1/sqrt(mean of the row's squares + eps) per row.
func oracleRstd(x []float64, N, C int) []float64 {
	rs := make([]float64, N)
	for n := 0; n < N; n++ {
		ss := 0.0
		for c := 0; c < C; c++ {
			ss += x[n*C+c] * x[n*C+c]
		}
		rs[n] = 1 / math.Sqrt(ss/float64(C)+float64(backend.RMSNormEps))
	}
	return rs
}

// oracleNormed is x·rstd of each row.
func oracleNormed(x, rs []float64, N, C int) []float64 {
	h := make([]float64, N*C)
	for i := range h {
		h[i] = x[i] * rs[i/C]
	}
	return h
}

// oracleRMSNormBwd is dres + rstd·(dout − x̂·mean(dout·x̂)) per row.
func oracleRMSNormBwd(dout, x, rs, dres []float64, N, C int) []float64 {
	dx := make([]float64, N*C)
	for n := 0; n < N; n++ {
		dot := 0.0
		for c := 0; c < C; c++ {
			dot += dout[n*C+c] * x[n*C+c] * rs[n]
		}
		m := dot / float64(C)
		for c := 0; c < C; c++ {
			i := n*C + c
			dx[i] = rs[n]*(dout[i]-x[i]*rs[n]*m) + dres[i]
		}
	}
	return dx
}

func TestRowsVectorRMSNorm(t *testing.T) {
	vecCase(t, vecDTypes, func(r *vecRig, dt backend.DType, N, C int) [][]float32 {
		x, xv := r.in(dt, 2, N, C)
		out, rstd := r.out(dt, N, C), r.out(backend.F32, N)
		r.b.RMSNormForward(out, rstd, x)
		rs := oracleRstd(xv, N, C)
		gr := r.near("rstd", backend.F32, rstd, rs)
		gh := r.near("out", dt, out, oracleNormed(xv, rs, N, C))

		dout, dov := r.in(dt, 1, N, C)
		dres, drv := r.in(dt, 1, N, C)
		dx := r.out(dt, N, C)
		rs32 := make([]float64, N)
		for i, v := range gr {
			rs32[i] = float64(v)
		}
		r.b.RMSNormBackward(dx, dout, x, rstd, dres)
		gd := r.near("dx", dt, dx, oracleRMSNormBwd(dov, xv, rs32, drv, N, C))
		return [][]float32{gr, gh, gd}
	})
}

func TestRowsVectorScaledAdd(t *testing.T) {
	vecCase(t, vecDTypes, func(r *vecRig, dt backend.DType, N, C int) [][]float32 {
		x, xv := r.in(dt, 1, N, C)
		y, yv := r.in(dt, 1, N, C)
		s, sv := r.in(backend.F32, 1, C)
		out := r.out(dt, N, C)
		r.b.ScaledAddForward(out, x, y, s)
		want := make([]float64, N*C)
		for i := range want {
			want[i] = xv[i] + sv[i%C]*yv[i]
		}
		go1 := r.near("out", dt, out, want)

		dout, dov := r.in(dt, 1, N, C)
		dy := r.out(dt, N, C)
		ds, dsv := r.in(backend.F32, 1, C)
		r.b.ScaledAddBackward(dy, ds, dout, y, s)
		wdy, wds := make([]float64, N*C), append([]float64(nil), dsv...)
		for i := range wdy {
			wdy[i] = sv[i%C] * dov[i]
			wds[i%C] += dov[i] * yv[i]
		}
		gdy := r.near("dy", dt, dy, wdy)
		gds := r.near("ds", backend.F32, ds, wds)
		return [][]float32{go1, gdy, gds}
	})
}

func TestRowsVectorResidMix(t *testing.T) {
	vecCase(t, vecDTypes, func(r *vecRig, dt backend.DType, N, C int) [][]float32 {
		x, xv := r.in(dt, 1, N, C)
		x0, x0v := r.in(dt, 1, N, C)
		mix, mv := r.in(backend.F32, 1, 2, C)
		out := r.out(dt, N, C)
		r.b.ResidMixForward(out, x, x0, mix)
		want := make([]float64, N*C)
		for i := range want {
			want[i] = mv[i%C]*xv[i] + mv[C+i%C]*x0v[i]
		}
		gout := r.near("out", dt, out, want)

		dout, dov := r.in(dt, 1, N, C)
		dx := r.out(dt, N, C)
		dx0, dx0v := r.in(backend.F32, 1, N, C)
		dmix, dmv := r.in(backend.F32, 1, 2, C)
		r.b.ResidMixBackward(dx, dx0, dmix, dout, x, x0, mix)
		wdx, wdx0, wdm := oracleResidMixBwd(mv, dov, xv, x0v, dx0v, dmv, C)
		gdx := r.near("dx", dt, dx, wdx)
		gdx0 := r.near("dx0", backend.F32, dx0, wdx0)
		gdm := r.near("dmix", backend.F32, dmix, wdm)
		return [][]float32{gout, gdx, gdx0, gdm}
	})
}

func TestRowsVectorFused(t *testing.T) {
	vecCase(t, vecDTypes, func(r *vecRig, dt backend.DType, N, C int) [][]float32 {
		x, xv := r.in(dt, 1, N, C)
		x0, x0v := r.in(dt, 1, N, C)
		w, wv := r.in(backend.F32, 1, 2, C)
		mix, h, rstd := r.out(dt, N, C), r.out(dt, N, C), r.out(backend.F32, N)
		r.b.ResidMixRMSNormForward(mix, h, rstd, x, x0, w)
		wmix := make([]float64, N*C)
		for i := range wmix {
			wmix[i] = wv[i%C]*xv[i] + wv[C+i%C]*x0v[i]
		}
		gmix := r.near("mix", dt, mix, wmix)
		mixv := make([]float64, N*C) // as stored: the norm reads the rounded mix
		for i, v := range gmix {
			mixv[i] = float64(v)
		}
		rs := oracleRstd(mixv, N, C)
		grs := r.near("rstd", backend.F32, rstd, rs)
		gh := r.near("h", dt, h, oracleNormed(mixv, rs, N, C))

		y, yv := r.in(dt, 1, N, C)
		s, sv := r.in(backend.F32, 1, C)
		sum, h2, rstd2 := r.out(dt, N, C), r.out(dt, N, C), r.out(backend.F32, N)
		r.b.ScaledAddRMSNormForward(sum, h2, rstd2, x, y, s)
		wsum := make([]float64, N*C)
		for i := range wsum {
			wsum[i] = xv[i] + sv[i%C]*yv[i]
		}
		gsum := r.near("sum", dt, sum, wsum)
		sumv := make([]float64, N*C)
		for i, v := range gsum {
			sumv[i] = float64(v)
		}
		rs2 := oracleRstd(sumv, N, C)
		grs2 := r.near("rstd2", backend.F32, rstd2, rs2)
		gh2 := r.near("h2", dt, h2, oracleNormed(sumv, rs2, N, C))

		dout, dov := r.in(dt, 1, N, C)
		dres, drv := r.in(dt, 1, N, C)
		dx := r.out(dt, N, C)
		dx0, dx0v := r.in(backend.F32, 1, N, C)
		dmix, dmv := r.in(backend.F32, 1, 2, C)
		r.b.RMSNormResidMixBackward(dx, dx0, dmix, dout, mix, rstd, dres, x, x0, w)
		rs32 := make([]float64, N)
		for i, v := range grs {
			rs32[i] = float64(v)
		}
		dm := oracleRMSNormBwd(dov, mixv, rs32, drv, N, C)
		wdx, wdx0, wdm := oracleResidMixBwd(wv, dm, xv, x0v, dx0v, dmv, C)
		gdx := r.near("dx", dt, dx, wdx)
		gdx0 := r.near("dx0", dt, dx0, wdx0) // from dm rounded to dt
		// dmix sums N terms each rounded to dt: the tolerance of dt times N.
		require.NoError(r.t, r.b.Sync())
		gdm := r.b.Download(dmix)
		for i := range wdm {
			if !assert.InDelta(r.t, wdm[i], float64(gdm[i]), float64(N)*vecTol(dt)*(1+math.Abs(wdm[i])), "dmix %d", i) {
				break
			}
		}
		return [][]float32{gmix, grs, gh, gsum, grs2, gh2, gdx, gdx0, gdm}
	})
}

func TestRowsVectorElementwise(t *testing.T) {
	vecCase(t, vecDTypes, func(r *vecRig, dt backend.DType, N, C int) [][]float32 {
		n := N*C + 3 // a short last chunk whatever C
		src, sv := r.in(backend.F32, 3, n)
		dst := r.out(dt, n)
		r.b.Cast(dst, src)
		gc := r.near("cast from float", dt, dst, sv)
		back := r.out(backend.F32, n)
		r.b.Cast(back, dst)
		gcv := make([]float64, n)
		for i, v := range gc {
			gcv[i] = float64(v)
		}
		gb := r.near("cast to float", backend.F32, back, gcv)

		acc, av := r.in(backend.F32, 1, n)
		r.b.Axpy(acc, dst, -0.75)
		wa := make([]float64, n)
		for i := range wa {
			wa[i] = av[i] - 0.75*gcv[i]
		}
		ga := r.near("axpy", backend.F32, acc, wa)

		z, _ := r.in(dt, 1, n)
		r.b.Zero(z)
		gz := r.near("zero", dt, z, make([]float64, n))
		for i, v := range gz {
			if math.Float32bits(v) != 0 {
				assert.Failf(r.t, "zero", "element %d is %g, not +0", i, v)
				break
			}
		}
		outs := [][]float32{gc, gb, ga, gz}
		if dt != backend.F32 {
			return outs
		}

		x, xv := r.in(backend.F32, 1, n)
		r.b.Scale(x, 1.5)
		ws := make([]float64, n)
		for i := range ws {
			ws[i] = 1.5 * xv[i]
		}
		outs = append(outs, r.near("scale", backend.F32, x, ws))

		buf, bv := r.in(backend.F32, 1, n)
		g, gv := r.in(backend.F32, 1, n)
		geff := r.out(backend.F32, n)
		r.b.MuonMomentum(buf, geff, g, 0.95)
		wb, we := make([]float64, n), make([]float64, n)
		for i := range wb {
			wb[i] = 0.95*bv[i] + gv[i]
			we[i] = gv[i] + 0.95*wb[i]
		}
		outs = append(outs, r.near("momentum buf", backend.F32, buf, wb), r.near("momentum geff", backend.F32, geff, we))

		p, pv := r.in(backend.F32, 1, n)
		m, mv := r.in(backend.F32, 0.1, n)
		vs := make([]float32, n)
		for i := range vs {
			vs[i] = float32(0.01 + r.rng.Float64())
		}
		v, vv := r.tensor(backend.F32, vs, n)
		hp := backend.AdamParams{LR: 0.01, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 3}
		r.b.AdamStep(p, g, m, v, hp)
		b1 := 1 - math.Pow(0.9, 3)
		b2 := 1 - math.Pow(0.95, 3)
		wp, wm, wv := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range wp {
			wm[i] = 0.9*mv[i] + 0.1*gv[i]
			wv[i] = 0.95*vv[i] + 0.05*gv[i]*gv[i]
			wp[i] = pv[i] - 0.01*(wm[i]/b1)/(math.Sqrt(wv[i]/b2)+1e-8)
		}
		return append(outs, r.near("adam p", backend.F32, p, wp), r.near("adam m", backend.F32, m, wm),
			r.near("adam v", backend.F32, v, wv))
	})
}

// oracleQKFwd is RMSNorm over each head, the rotation at position
// n mod seqLen (θ_i = base^(−2i/D)) and the gain: out and rstd.
func oracleQKFwd(x, gain []float64, N, H, D, seqLen int, base float64) (out, rstd []float64) {
	out, rstd = make([]float64, N*H*D), make([]float64, N*H)
	half := D / 2
	for n := 0; n < N; n++ {
		p := float64(n % seqLen)
		for h := 0; h < H; h++ {
			o := (n*H + h) * D
			ss := 0.0
			for d := 0; d < D; d++ {
				ss += x[o+d] * x[o+d]
			}
			rs := 1 / math.Sqrt(ss/float64(D)+float64(backend.RMSNormEps))
			rstd[n*H+h] = rs
			for i := 0; i < half; i++ {
				th := p * math.Pow(base, -2*float64(i)/float64(D))
				cs, sn := math.Cos(th), math.Sin(th)
				a, c := x[o+i]*rs, x[o+i+half]*rs
				out[o+i] = gain[h] * (a*cs - c*sn)
				out[o+i+half] = gain[h] * (a*sn + c*cs)
			}
		}
	}
	return out, rstd
}

// oracleQKBwd is the backward from the forward's rstd: dx, and dgain's
// increment Σ dout·R(u) per head.
func oracleQKBwd(dout, x, rstd, gain []float64, N, H, D, seqLen int, base float64) (dx, dgain []float64) {
	dx, dgain = make([]float64, N*H*D), make([]float64, H)
	half := D / 2
	for n := 0; n < N; n++ {
		p := float64(n % seqLen)
		for h := 0; h < H; h++ {
			o, rs, g := (n*H+h)*D, rstd[n*H+h], gain[h]
			dua, duc := make([]float64, half), make([]float64, half)
			dot := 0.0
			for i := 0; i < half; i++ {
				th := p * math.Pow(base, -2*float64(i)/float64(D))
				cs, sn := math.Cos(th), math.Sin(th)
				a, c := x[o+i]*rs, x[o+i+half]*rs
				ga, gc := dout[o+i], dout[o+i+half]
				dgain[h] += ga*(a*cs-c*sn) + gc*(a*sn+c*cs)
				dua[i], duc[i] = g*(ga*cs+gc*sn), g*(gc*cs-ga*sn)
				dot += dua[i]*a + duc[i]*c
			}
			m := dot / float64(D)
			for i := 0; i < half; i++ {
				dx[o+i] = rs * (dua[i] - x[o+i]*rs*m)
				dx[o+i+half] = rs * (duc[i] - x[o+i+half]*rs*m)
			}
		}
	}
	return dx, dgain
}

// TestRowsVectorQKNormRope: the single and the pair kernels against the
// oracle at head dims whose half is odd (10, 66), a multiple of 4 (64,
// 128) and neither (12: three pairs short of a second chunk), both
// placements giving the same bits.
func TestRowsVectorQKNormRope(t *testing.T) {
	const seqLen, H, Hk, base = 3, 3, 2, 10000.0
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		for _, dt := range vecDTypes {
			for _, D := range []int{10, 12, 64, 66, 128} {
				t.Run(fmt.Sprintf("%s/%v/D=%d", f, dt, D), func(t *testing.T) {
					const N = 2 * seqLen
					var outs [][][]float32
					for _, off := range vecOffsets {
						r := newVecRig(t, b, off, uint64(D))
						x, xv := r.in(dt, 1, N, H, D)
						gain, gv := r.in(backend.F32, 1, H)
						out, rstd := r.out(dt, N, H, D), r.out(backend.F32, N, H)
						r.b.QKNormRopeForward(out, rstd, x, gain, seqLen, base)
						wo, wr := oracleQKFwd(xv, gv, N, H, D, seqLen, base)
						gr := r.near("rstd", backend.F32, rstd, wr)
						go1 := r.near("out", dt, out, wo)
						rs := make([]float64, len(gr))
						for i, v := range gr {
							rs[i] = float64(v)
						}

						dout, dov := r.in(dt, 1, N, H, D)
						dx := r.out(dt, N, H, D)
						dgain, dgv := r.in(backend.F32, 1, H)
						r.b.QKNormRopeBackward(dx, dgain, dout, x, rstd, gain, seqLen, base)
						wdx, wdg := oracleQKBwd(dov, xv, rs, gv, N, H, D, seqLen, base)
						for h := range wdg {
							wdg[h] += dgv[h]
						}
						gdx := r.near("dx", dt, dx, wdx)
						gdg := r.near("dgain", dt, dgain, wdg)

						// The pair: q as above, k with Hk heads.
						k, kv := r.in(dt, 1, N, Hk, D)
						kg, kgv := r.in(backend.F32, 1, Hk)
						qo, qr, ko, kr := r.out(dt, N, H, D), r.out(backend.F32, N, H), r.out(dt, N, Hk, D), r.out(backend.F32, N, Hk)
						r.b.QKNormRopePairForward(qo, qr, x, gain, ko, kr, k, kg, seqLen, base)
						wko, wkr := oracleQKFwd(kv, kgv, N, Hk, D, seqLen, base)
						gqo := r.near("pair q out", dt, qo, wo)
						gko := r.near("pair k out", dt, ko, wko)
						gkr := r.near("pair k rstd", backend.F32, kr, wkr)
						krs := make([]float64, len(gkr))
						for i, v := range gkr {
							krs[i] = float64(v)
						}
						dko, dkov := r.in(dt, 1, N, Hk, D)
						dq, dk := r.out(dt, N, H, D), r.out(dt, N, Hk, D)
						dkg, dkgv := r.in(backend.F32, 1, Hk)
						r.b.QKNormRopePairBackward(dq, nil, dout, x, rstd, gain, dk, dkg, dko, k, kr, kg, seqLen, base)
						wdk, wdkg := oracleQKBwd(dkov, kv, krs, kgv, N, Hk, D, seqLen, base)
						for h := range wdkg {
							wdkg[h] += dkgv[h]
						}
						gdq := r.near("pair dq", dt, dq, wdx)
						gdk := r.near("pair dk", dt, dk, wdk)
						gdkg := r.near("pair dk gain", dt, dkg, wdkg)
						outs = append(outs, [][]float32{gr, go1, gdx, gdg, gqo, gko, gkr, gdq, gdk, gdkg})
					}
					for i := range outs[0] {
						for j := range outs[0][i] {
							if math.Float32bits(outs[0][i][j]) != math.Float32bits(outs[1][i][j]) {
								assert.Failf(t, "the placements differ", "output %d, element %d: aligned %g, offset %g",
									i, j, outs[0][i][j], outs[1][i][j])
								break
							}
						}
					}
				})
			}
		}
	}
}

// oracleResidMixBwd is the residual mix's backward in float64, for
// x' = mix[0]·x + mix[1]·x0 with upstream gradient d (N×C): dx = mix[0]·d,
// dx0 += mix[1]·d, dmix[0] += Σ d·x and dmix[1] += Σ d·x0 per column, from
// the accumulators' prior values dx0 and dmix.
func oracleResidMixBwd(mix, d, x, x0, dx0, dmix []float64, C int) (wdx, wdx0, wdm []float64) {
	wdx, wdx0, wdm = make([]float64, len(d)), append([]float64(nil), dx0...), append([]float64(nil), dmix...)
	for i := range wdx {
		c := i % C
		wdx[i] = mix[c] * d[i]
		wdx0[i] += mix[C+c] * d[i]
		wdm[c] += d[i] * x[i]
		wdm[C+c] += d[i] * x0[i]
	}
	return wdx, wdx0, wdm
}

package cpu

import "github.com/golf-ml/golf/backend"

// ResidMixForward mixes the residual stream with the embedding stream:
//
//	out[n,c] = mix[0,c]·x[n,c] + mix[1,c]·x0[n,c]
//	out, x, x0 CD (N, C), mix F32 (2, C)
func (b *Backend) ResidMixForward(out, x, x0, mix *backend.Tensor) {
	const op = "ResidMixForward"
	wantCD(op, []string{"out", "x", "x0"}, out, x, x0)
	wantF32(op, []string{"mix"}, mix)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	wantShape(op, "out", out, N, C)
	wantShape(op, "x0", x0, N, C)
	wantShape(op, "mix", mix, 2, C)
	m := f32s(mix)
	m0, m1 := m[:C], m[C:]
	parallelFor(N, 16, func(lo, hi int) {
		xb, zb, ob := make([]float32, C), make([]float32, C), make([]float32, C)
		for n := lo; n < hi; n++ {
			xs := view(x, n*C, C, xb)
			zs := view(x0, n*C, C, zb)
			os := dest(out, n*C, C, ob)
			for c := range os {
				os[c] = m0[c]*xs[c] + m1[c]*zs[c]
			}
			flush(out, n*C, os)
		}
	})
}

// ResidMixBackward:
//
//	dx[n,c] = mix[0,c]·dout[n,c]                      dx CD (N, C), overwritten
//	dx0[n,c] += mix[1,c]·dout[n,c]                    dx0 F32 (N, C)
//	dmix[0,c] += Σn dout·x;  dmix[1,c] += Σn dout·x0   dmix F32 (2, C)
//	dout, x, x0 CD (N, C), mix F32 (2, C)
func (b *Backend) ResidMixBackward(dx, dx0, dmix, dout, x, x0, mix *backend.Tensor) {
	const op = "ResidMixBackward"
	wantCD(op, []string{"dx", "dout", "x", "x0"}, dx, dout, x, x0)
	wantF32(op, []string{"dx0", "dmix", "mix"}, dx0, dmix, mix)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	for i, t := range []*backend.Tensor{dx, dx0, dout, x0} {
		wantShape(op, []string{"dx", "dx0", "dout", "x0"}[i], t, N, C)
	}
	wantShape(op, "dmix", dmix, 2, C)
	wantShape(op, "mix", mix, 2, C)
	m := f32s(mix)
	m0, m1 := m[:C], m[C:]
	d0 := f32s(dx0)
	sums := reduceRows(N, 2*C, func(lo, hi int, acc []float64) {
		gb, xb, zb, ob := make([]float32, C), make([]float32, C), make([]float32, C), make([]float32, C)
		for n := lo; n < hi; n++ {
			g := view(dout, n*C, C, gb)
			xs := view(x, n*C, C, xb)
			zs := view(x0, n*C, C, zb)
			os := dest(dx, n*C, C, ob)
			z0 := d0[n*C : (n+1)*C]
			for c, v := range g {
				os[c] = m0[c] * v
				z0[c] += m1[c] * v
				acc[c] += float64(v) * float64(xs[c])
				acc[C+c] += float64(v) * float64(zs[c])
			}
			flush(dx, n*C, os)
		}
	})
	addInto(f32s(dmix), sums)
}

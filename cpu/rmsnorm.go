package cpu

import "github.com/golf-ml/golf/backend"

// RMSNormForward normalises each row without a weight:
//
//	rstd[n] = 1/sqrt(mean_c x[n,c]² + RMSNormEps)
//	out[n,c] = x[n,c]·rstd[n]
//	out CD (N, C), rstd F32 (N), x CD (N, C)
func (b *Backend) RMSNormForward(out, rstd, x *backend.Tensor) {
	const op = "RMSNormForward"
	wantCD(op, []string{"out", "x"}, out, x)
	wantF32(op, []string{"rstd"}, rstd)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	wantShape(op, "out", out, N, C)
	wantShape(op, "rstd", rstd, N)
	r := f32s(rstd)
	parallelFor(N, 16, func(lo, hi int) {
		xb, ob := make([]float32, C), make([]float32, C)
		for n := lo; n < hi; n++ {
			xs := view(x, n*C, C, xb)
			os := dest(out, n*C, C, ob)
			r[n] = rmsRow(os, xs)
			flush(out, n*C, os)
		}
	})
}

// rmsRow writes x·rstd into out and returns rstd = 1/sqrt(mean x² + eps),
// the mean taken in float64.
func rmsRow(out, x []float32) float32 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	rs := rsqrt64(ss/float64(len(x)) + backend.RMSNormEps)
	for c, v := range x {
		out[c] = v * rs
	}
	return rs
}

// RMSNormBackward, with x̂ = x·rstd:
//
//	dx[n,c] = dres[n,c] + rstd[n]·(dout[n,c] − x̂[n,c]·mean_c'(dout[n,c']·x̂[n,c']))
//	dx CD (N, C), dout CD (N, C), x CD (N, C), rstd F32 (N), dres CD (N, C) or nil
//
// dx may alias dres.
func (b *Backend) RMSNormBackward(dx, dout, x, rstd, dres *backend.Tensor) {
	const op = "RMSNormBackward"
	wantCD(op, []string{"dx", "dout", "x", "dres"}, dx, dout, x, dres)
	wantF32(op, []string{"rstd"}, rstd)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	wantShape(op, "dx", dx, N, C)
	wantShape(op, "dout", dout, N, C)
	wantShape(op, "rstd", rstd, N)
	if dres != nil {
		wantShape(op, "dres", dres, N, C)
	}
	r := f32s(rstd)
	parallelFor(N, 16, func(lo, hi int) {
		xb, gb, rb, ob := make([]float32, C), make([]float32, C), make([]float32, C), make([]float32, C)
		for n := lo; n < hi; n++ {
			xs := view(x, n*C, C, xb)
			gs := view(dout, n*C, C, gb)
			var res []float32
			if dres != nil {
				res = view(dres, n*C, C, rb)
			}
			os := dest(dx, n*C, C, ob)
			rmsBackRow(os, gs, xs, res, r[n])
			flush(dx, n*C, os)
		}
	})
}

// rmsBackRow writes dx = res + rs·(g − x̂·mean(g·x̂)) with x̂ = x·rs; res may
// be nil (0) or the same slice as dx.
func rmsBackRow(dx, g, x, res []float32, rs float32) {
	var dot float64
	for c, v := range x {
		dot += float64(g[c]) * float64(v*rs)
	}
	m := float32(dot / float64(len(x)))
	for c, v := range x {
		d := rs * (g[c] - v*rs*m)
		if res != nil {
			d += res[c]
		}
		dx[c] = d
	}
}

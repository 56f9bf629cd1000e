package cpu

import "github.com/golf-ml/golf/backend"

// ScaledAddForward adds a per-channel scaled branch to the residual:
//
//	out[n,c] = x[n,c] + s[c]·y[n,c]    (s nil means 1)
//	out, x, y CD (N, C), s F32 (C) or nil
//
// out may alias x.
func (b *Backend) ScaledAddForward(out, x, y, s *backend.Tensor) {
	const op = "ScaledAddForward"
	wantCD(op, []string{"out", "x", "y"}, out, x, y)
	wantF32(op, []string{"s"}, s)
	N, C := scaledShapes(op, x, s)
	wantShape(op, "out", out, N, C)
	wantShape(op, "y", y, N, C)
	sc := gains(s, C)
	parallelFor(N, 16, func(lo, hi int) {
		xb, yb, ob := make([]float32, C), make([]float32, C), make([]float32, C)
		for n := lo; n < hi; n++ {
			xs := view(x, n*C, C, xb)
			ys := view(y, n*C, C, yb)
			os := dest(out, n*C, C, ob)
			for c, v := range ys {
				os[c] = xs[c] + sc[c]*v
			}
			flush(out, n*C, os)
		}
	})
}

// ScaledAddBackward; the gradient with respect to x is dout itself:
//
//	dy[n,c] = s[c]·dout[n,c]      dy CD (N, C), overwritten; nil to skip
//	ds[c] += Σn dout[n,c]·y[n,c]  ds F32 (C); nil to skip
//	dout, y CD (N, C), s F32 (C) or nil (1)
func (b *Backend) ScaledAddBackward(dy, ds, dout, y, s *backend.Tensor) {
	const op = "ScaledAddBackward"
	wantCD(op, []string{"dy", "dout", "y"}, dy, dout, y)
	wantF32(op, []string{"ds", "s"}, ds, s)
	N, C := scaledShapes(op, dout, s)
	if dy != nil {
		wantShape(op, "dy", dy, N, C)
	}
	if ds != nil {
		wantShape(op, "ds", ds, C)
		wantShape(op, "y", y, N, C)
	}
	sc := gains(s, C)
	if dy != nil {
		parallelFor(N, 16, func(lo, hi int) {
			gb, ob := make([]float32, C), make([]float32, C)
			for n := lo; n < hi; n++ {
				g := view(dout, n*C, C, gb)
				os := dest(dy, n*C, C, ob)
				for c, v := range g {
					os[c] = sc[c] * v
				}
				flush(dy, n*C, os)
			}
		})
	}
	if ds != nil {
		sums := reduceRows(N, C, func(lo, hi int, acc []float64) {
			gb, yb := make([]float32, C), make([]float32, C)
			for n := lo; n < hi; n++ {
				g := view(dout, n*C, C, gb)
				ys := view(y, n*C, C, yb)
				for c, v := range g {
					acc[c] += float64(v) * float64(ys[c])
				}
			}
		})
		addInto(f32s(ds), sums)
	}
}

// scaledShapes checks x (N, C) against s (C) or nil and returns N, C.
func scaledShapes(op string, x, s *backend.Tensor) (N, C int) {
	sh := wantRank(op, "x", x, 2)
	N, C = sh[0], sh[1]
	if s != nil {
		wantShape(op, "s", s, C)
	}
	return N, C
}

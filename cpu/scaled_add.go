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
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runRows(N, rowLoop{kind: rowScaledAdd, C: C, out: out, x: x, y: y, v0: b.gains(s, C)})
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
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case ds == nil && dy == nil:
	case ds == nil:
		b.runRows(N, rowLoop{kind: rowScale, C: C, out: dy, x: dout, v0: b.gains(s, C)})
	case dy == nil:
		addInto(f32s(ds), b.reduceCols(N, C, colReducer{kind: colDot, C: C, g: dout, x: y}))
	default:
		// One pass over dout for both.
		sums := b.reduceCols(N, C, colReducer{kind: colScaledAdd, C: C, g: dout, x: y, dx: dy, m0: b.gains(s, C)})
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

// gains returns the per-channel or per-head scales of s, ones when s is
// nil (a reused buffer; b.mu held).
func (b *Backend) gains(s *backend.Tensor, n int) []float32 {
	if s != nil {
		return f32s(s)
	}
	if len(b.ones) < n {
		b.ones = make([]float32, n)
		for i := range b.ones {
			b.ones[i] = 1
		}
	}
	return b.ones[:n]
}

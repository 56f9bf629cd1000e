package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
)

// MuonMomentum is Nesterov momentum:
//
//	buf = μ·buf + g;  geff = g + μ·buf
//	buf, geff, g F32, same shape
//
// geff may alias g.
func (b *Backend) MuonMomentum(buf, geff, g *backend.Tensor, momentum float32) {
	const op = "MuonMomentum"
	wantF32(op, []string{"buf", "geff", "g"}, buf, geff, g)
	wantSame(op, "g", g, "buf", buf)
	wantSame(op, "g", g, "geff", geff)
	bs, es, gs := f32s(buf), f32s(geff), f32s(g)
	parallelFor(len(gs), grain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gi := gs[i]
			bi := momentum*bs[i] + gi
			bs[i] = bi
			es[i] = gi + momentum*bi
		}
	})
}

// NewtonSchulz writes the quintic Newton–Schulz orthogonalisation of g
// (R, C) into out (R, C), in float32 (g and out any float dtype):
//
//	X = g/(‖g‖_F + NSEps); if R > C work on Xᵀ (r = min(R,C), c = max(R,C))
//	repeat steps: A = X·Xᵀ (r, r); B = NSB·A + NSC·A·A; X = NSA·X + B·X
//
// ‖g‖_F is summed in float64.
func (b *Backend) NewtonSchulz(out, g *backend.Tensor, steps int) {
	const op = "NewtonSchulz"
	wantFloat(op, []string{"out", "g"}, out, g)
	s := wantRank(op, "g", g, 2)
	R, C := s[0], s[1]
	wantShape(op, "out", out, R, C)
	if steps < 0 {
		fail(op, "steps %d < 0", steps)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, c := R, C
	trans := R > C
	if trans {
		r, c = C, R
	}
	x := b.panel(panelA, r*c)  // X (r, c)
	xn := b.panel(panelB, r*c) // next X (r, c)
	a := b.panel(panelC, r*r)  // A (r, r)
	bb := b.panel(panelD, r*r) // B (r, r)

	gs := make([]float32, R*C)
	loadRange(g, 0, gs)
	ss := reduceRows(R, 1, func(lo, hi int, acc []float64) {
		for _, v := range gs[lo*C : hi*C] {
			acc[0] += float64(v) * float64(v)
		}
	})
	norm := float32(math.Sqrt(ss[0])) + backend.NSEps
	for i := range R {
		for j := range C {
			if trans {
				x[j*c+i] = gs[i*C+j] / norm
			} else {
				x[i*c+j] = gs[i*C+j] / norm
			}
		}
	}
	for range steps {
		gemm.Sgemm(false, true, r, r, c, 1, x, c, x, c, 0, a, r)
		gemm.Sgemm(false, false, r, r, r, backend.NSC, a, r, a, r, 0, bb, r)
		for i, v := range a {
			bb[i] += backend.NSB * v
		}
		for i, v := range x {
			xn[i] = backend.NSA * v
		}
		gemm.Sgemm(false, false, r, c, r, 1, bb, r, x, c, 1, xn, c)
		x, xn = xn, x
	}
	for i := range R {
		for j := range C {
			if trans {
				gs[i*C+j] = x[j*c+i]
			} else {
				gs[i*C+j] = x[i*c+j]
			}
		}
	}
	storeRange(out, 0, gs)
}

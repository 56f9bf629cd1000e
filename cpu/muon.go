package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
	"github.com/golf-ml/golf/internal/vmath"
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
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runElem(g.Len(), elemLoop{kind: elemMomentum, f: [4][]float32{f32s(buf), f32s(geff), f32s(g)}, momentum: momentum})
}

// NewtonSchulz writes the quintic Newton–Schulz orthogonalisation of g
// (R, C) into out (R, C), in float32 (g and out any float dtype):
//
//	X = g/(‖g‖_F + NSEps); if R > C work on Xᵀ (r = min(R,C), c = max(R,C))
//	repeat steps: A = X·Xᵀ (r, r); B = NSB·A + NSC·A·A; X = NSA·X + B·X
//
// ‖g‖_F is summed in float64. A and A·A are symmetric, so only the tiles
// that meet their lower triangles are multiplied (gemm.SgemmLower) and the
// upper triangles mirrored: each element is the sum Sgemm would form, in
// the same order (element (j, i) of A·A is Σ_p A[j][p]·A[p][i], the same
// products as element (i, j)'s since A is exactly symmetric), for about
// two thirds of the work of full products.
func (b *Backend) NewtonSchulz(out, g *backend.Tensor, steps int) {
	const op = "NewtonSchulz"
	wantFloat(op, []string{"out", "g"}, out, g)
	s := wantRank(op, "g", g, 2)
	R, C := s[0], s[1]
	wantShape(op, "out", out, R, C)
	if steps < 0 {
		fail(op, "steps %d < 0", steps)
	}
	if R == 0 || C == 0 {
		return
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
	gs := b.asF32(panelE, g)   // g (R, C)

	sq := &b.loops.sq
	*sq = sumSqRows{v: gs, cols: C}
	ss := b.reduceRows(R, 1, sq)[0]
	*sq = sumSqRows{}
	norm := float32(math.Sqrt(ss)) + backend.NSEps
	if trans {
		gemm.Transpose(x, c, gs, C, R, C)
		vmath.Div(x, x, norm)
	} else {
		vmath.Div(x, gs, norm)
	}
	for range steps {
		gemm.SgemmLower(false, true, r, c, 1, x, c, x, c, 0, a, r) // A = X·Xᵀ
		mirrorLower(a, r)
		gemm.SgemmLower(false, false, r, r, backend.NSC, a, r, a, r, 0, bb, r) // B = NSC·A·A
		mirrorLower(bb, r)
		vmath.Axpy(bb, a, backend.NSB) // B += NSB·A
		vmath.Scale(xn, x, backend.NSA)
		gemm.Sgemm(false, false, r, c, r, 1, bb, r, x, c, 1, xn, c) // X' = NSA·X + B·X
		x, xn = xn, x
	}
	o := x
	if trans {
		o = b.panel(panelE, R*C)
		gemm.Transpose(o, C, x, c, r, c)
	}
	b.storeAll(out, o)
}

// mirrorLower copies the lower triangle of the n×n matrix m onto its upper
// triangle: 16×16 blocks transposed whole, the diagonal blocks element by
// element.
func mirrorLower(m []float32, n int) {
	const bs = 16
	for i0 := 0; i0 < n; i0 += bs {
		rows := min(bs, n-i0)
		for j0 := 0; j0 < i0; j0 += bs {
			gemm.Transpose(m[j0*n+i0:], n, m[i0*n+j0:], n, rows, bs)
		}
		for i := i0; i < i0+rows; i++ {
			for j := i + 1; j < i0+rows; j++ {
				m[i*n+j] = m[j*n+i]
			}
		}
	}
}

// sumSqRows sums the squares of rows of a cols-wide matrix.
type sumSqRows struct {
	v    []float32
	cols int
}

func (s *sumSqRows) reduce(w, lo, hi int, acc []float64) {
	for i := lo; i < hi; i++ {
		acc[0] += vmath.SumSq64(s.v[i*s.cols : (i+1)*s.cols])
	}
}

package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
	"github.com/golf-ml/golf/internal/parallel"
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
// ‖g‖_F is summed in float64. A and A·A are symmetric, so only their
// lower triangles are multiplied (block rows of products run in parallel)
// and the upper ones mirrored: each element is the sum Sgemm would form,
// in the same order (element (j, i) of A·A is Σ_p A[j][p]·A[p][i], the
// same products as element (i, j)'s since A is exactly symmetric), at
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
	for i := range R {
		row := gs[i*C : (i+1)*C]
		if !trans {
			vmath.Div(x[i*c:(i+1)*c], row, norm)
			continue
		}
		for j, v := range row {
			x[j*c+i] = v / norm
		}
	}
	for range steps {
		b.lowerProduct(r, c, true, 1, x, a)             // A = X·Xᵀ
		b.lowerProduct(r, r, false, backend.NSC, a, bb) // B = NSC·A·A
		vmath.Axpy(bb, a, backend.NSB)                  // B += NSB·A
		vmath.Scale(xn, x, backend.NSA)
		gemm.Sgemm(false, false, r, c, r, 1, bb, r, x, c, 1, xn, c) // X' = NSA·X + B·X
		x, xn = xn, x
	}
	o := b.panel(panelE, R*C)
	if trans {
		for i := range R {
			for j := range C {
				o[i*C+j] = x[j*c+i]
			}
		}
	} else {
		o = x
	}
	b.storeAll(out, o)
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

// lowerBlock is the row count of one block of a lowerProduct.
const lowerBlock = 32

// lowerLoop computes the block rows of a lowerProduct, largest first.
type lowerLoop struct {
	n, k   int
	trans  bool
	alpha  float32
	src    []float32
	dst    []float32
	blocks int
}

func (l *lowerLoop) Run(w, lo, hi int) {
	for u := lo; u < hi; u++ {
		blk := l.blocks - 1 - u
		i0 := blk * lowerBlock
		i1 := min(i0+lowerBlock, l.n)
		if l.trans {
			// rows [i0, i1) of S·Sᵀ, columns [0, i1): S is n×k.
			gemm.SgemmSerial(false, true, i1-i0, i1, l.k, l.alpha, l.src[i0*l.k:], l.k, l.src, l.k, 0, l.dst[i0*l.n:], l.n)
		} else {
			// rows [i0, i1) of S·S, columns [0, i1): S is n×n symmetric.
			gemm.SgemmSerial(false, false, i1-i0, i1, l.n, l.alpha, l.src[i0*l.n:], l.n, l.src, l.n, 0, l.dst[i0*l.n:], l.n)
		}
	}
}

// lowerProduct writes the symmetric n×n product alpha·S·Sᵀ (trans; S is
// n×k) or alpha·S·S (S n×n and symmetric) into dst: the lower triangle by
// block rows in parallel, then the upper triangle mirrored (b.mu held).
func (b *Backend) lowerProduct(n, k int, trans bool, alpha float32, src, dst []float32) {
	l := &b.loops.lower
	*l = lowerLoop{n: n, k: k, trans: trans, alpha: alpha, src: src, dst: dst, blocks: (n + lowerBlock - 1) / lowerBlock}
	parallel.For(l.blocks, 1, l)
	*l = lowerLoop{}
	for i := range n {
		for j := i + 1; j < n; j++ {
			dst[i*n+j] = dst[j*n+i]
		}
	}
}

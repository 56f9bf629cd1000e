package cpu

import (
	"math"
	"slices"

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
	var o []float32
	if trans {
		// gs may be this panel (a g not in F32): nsIterate reads it only
		// before it writes o.
		o = b.panel(panelE, R*C)
	}
	b.storeAll(out, nsIterate(true, gs, R, C, steps, norm, x, xn, a, bb, o))
}

// nsIterate runs NewtonSchulz's iteration on gs (R, C) divided by norm, on
// the worker pool (par) or on the calling goroutine alone (the same bits:
// the serial GEMMs are bitwise the parallel ones), in the panels x, xn
// (r·c), a, bb (r·r) and, when R > C, o (R·C) for the result transposed
// back; it returns the result, (R, C).
func nsIterate(par bool, gs []float32, R, C, steps int, norm float32, x, xn, a, bb, o []float32) []float32 {
	r, c := R, C
	trans := R > C
	if trans {
		r, c = C, R
	}
	sgemm, lower := gemm.Sgemm, gemm.SgemmLower
	if !par {
		sgemm, lower = gemm.SgemmSerial, gemm.SgemmLowerSerial
	}
	if trans {
		gemm.Transpose(x, c, gs, C, R, C)
		vmath.Div(x, x, norm)
	} else {
		vmath.Div(x, gs, norm)
	}
	for range steps {
		lower(false, true, r, c, 1, x, c, x, c, 0, a, r) // A = X·Xᵀ
		mirrorLower(a, r)
		lower(false, false, r, r, backend.NSC, a, r, a, r, 0, bb, r) // B = NSC·A·A
		mirrorLower(bb, r)
		vmath.Axpy(bb, a, backend.NSB) // B += NSB·A
		vmath.Scale(xn, x, backend.NSA)
		sgemm(false, false, r, c, r, 1, bb, r, x, c, 1, xn, c) // X' = NSA·X + B·X
		x, xn = xn, x
	}
	if !trans {
		return x
	}
	gemm.Transpose(o, C, x, c, r, c)
	return o
}

// sumSqSerial is ‖v‖² of rows×cols v as reduceRows(rows, 1, sumSqRows)
// sums it, on the calling goroutine: the same chunks of rows, each summed
// in float64 row by row, the chunks added in order.
func sumSqSerial(v []float32, rows, cols int) float64 {
	k := min(rows, reduceChunks)
	total := 0.0
	for c := range k {
		part := 0.0
		for i := c * rows / k; i < (c+1)*rows/k; i++ {
			part += vmath.SumSq64(v[i*cols : (i+1)*cols])
		}
		total += part
	}
	return total
}

// MuonUpdate implements backend.MuonBatcher: the matrices run side by
// side, one per participant (largest first), each with the serial GEMMs
// and its participant's buffers, so a step's many small Newton–Schulz
// products keep every core busy instead of splitting each product.
func (b *Backend) MuonUpdate(ws, gs, bufs []*backend.Tensor, momentum float32, alphas []float32, steps int) {
	const op = "MuonUpdate"
	if len(gs) != len(ws) || len(bufs) != len(ws) || len(alphas) != len(ws) {
		fail(op, "%d weights, %d gradients, %d buffers, %d alphas", len(ws), len(gs), len(bufs), len(alphas))
	}
	if steps < 0 {
		fail(op, "steps %d < 0", steps)
	}
	for i := range ws {
		wantF32(op, []string{"w", "g", "buf"}, ws[i], gs[i], bufs[i])
		wantRank(op, "w", ws[i], 2)
		wantSame(op, "w", ws[i], "g", gs[i])
		wantSame(op, "w", ws[i], "buf", bufs[i])
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	l := &b.loops.muon
	*l = muonLoop{b: b, ws: ws, gs: gs, bufs: bufs, alphas: alphas, momentum: momentum, steps: steps, order: l.order[:0]}
	for i := range ws {
		l.order = append(l.order, i)
	}
	slices.SortStableFunc(l.order, func(i, j int) int { return ws[j].Len() - ws[i].Len() })
	b.begin()
	parallel.ForChunks(len(ws), len(ws), l)
	order := l.order
	*l = muonLoop{order: order}
}

// muonLoop is MuonUpdate's body: matrices order[lo:hi].
type muonLoop struct {
	b            *Backend
	ws, gs, bufs []*backend.Tensor
	alphas       []float32
	momentum     float32
	steps        int
	order        []int
}

func (l *muonLoop) Run(w, lo, hi int) {
	for _, i := range l.order[lo:hi] {
		R, C := l.ws[i].Shape[0], l.ws[i].Shape[1]
		if R == 0 || C == 0 {
			continue
		}
		r := min(R, C)
		geff := l.b.buf(w, 0, R*C)
		vmath.Momentum(f32s(l.bufs[i]), geff, f32s(l.gs[i]), l.momentum)
		norm := float32(math.Sqrt(sumSqSerial(geff, R, C))) + backend.NSEps
		x, xn := l.b.buf(w, 1, R*C), l.b.buf(w, 2, R*C)
		a, bb := l.b.buf(w, 3, r*r), l.b.buf(w, 4, r*r)
		var o []float32
		if R > C {
			o = l.b.buf(w, 5, R*C)
		}
		vmath.Axpy(f32s(l.ws[i]), nsIterate(false, geff, R, C, l.steps, norm, x, xn, a, bb, o), l.alphas[i])
	}
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

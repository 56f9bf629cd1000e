package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// muon: shaders/muon.metal, four elements per thread (dispatchVec4), or
// 4-element chunks over Newton–Schulz's sum-of-squares grid
// (muonMomentumSumsq), moved as vectors where every tensor starts on a
// 4-element boundary; and the update of a weight from its transposed
// Newton–Schulz iterate (muonAxpyT), a 4×4 block per thread.

func init() { supported[backend.OpMuon] = true }

// MuonMomentum is Nesterov momentum:
//
//	buf = μ·buf + g;  geff = g + μ·buf
//	buf, geff, g F32, same number of elements
//
// geff may alias g.
func (b *Backend) MuonMomentum(buf, geff, g *backend.Tensor, momentum float32) {
	const op = "MuonMomentum"
	checkDType(op, backend.F32, buf, geff, g)
	n := g.Len()
	checkLen(op, n, buf, geff)
	if n == 0 {
		return
	}
	b.a.momentum = shaders.MomentumArgs{N: uint32(n), Momentum: momentum}
	b.begin()
	b.arg(buf)
	b.arg(g)
	b.arg(geff)
	bytesArg(b, &b.a.momentum)
	b.alignedArg(vecAligned(0, buf, g, geff))
	b.dispatchVec4(b.pipe("muon", "momentum", backend.F32), n)
}

// muonMomentumSumsq is MuonMomentum(buf, geff, g, momentum), bitwise,
// fused with Newton–Schulz's first norm pass over geff as matrix z of a
// batch: it writes the nsParts(n) partial sums of squares of the geff it
// stores into partial from z·nsParts(n), as newton_schulz_sumsq would
// (newtonSchulz with summed). geff may alias g.
func (b *Backend) muonMomentumSumsq(buf, geff, g, partial *backend.Tensor, momentum float32, z int) {
	n := g.Len()
	parts := nsParts(n)
	b.a.muonSumsq = shaders.MuonSumsqArgs{N: uint32(n), Momentum: momentum, Z: uint32(z), Parts: uint32(parts)}
	p := nsThreadsPipe(b.pipe("muon", "momentum_sumsq", backend.F32))
	b.begin()
	b.arg(buf)
	b.arg(g)
	b.arg(geff)
	b.arg(partial)
	bytesArg(b, &b.a.muonSumsq)
	b.alignedArg(vecAligned(0, buf, g, geff))
	b.dispatch(p, [3]int{parts, 1, 1}, [3]int{nsThreads, 1, 1})
}

// muonAxpyT is Axpy(w, Xᵀ, alpha), bitwise, for w (R, C) and X matrix z
// (C, R) of x, a transposed Newton–Schulz batch left in its scratch
// (newtonSchulz with keepT): the store of Xᵀ to F32 is exact, and the
// update is Axpy's expression per element.
func (b *Backend) muonAxpyT(w, x *backend.Tensor, R, C, z int, alpha float32) {
	b.a.muonAxpy = shaders.MuonAxpyArgs{Rows: uint32(R), Cols: uint32(C), Z: uint32(z), Alpha: alpha}
	b.begin()
	b.arg(x)
	b.arg(w)
	bytesArg(b, &b.a.muonAxpy)
	b.alignedArg(R%4 == 0 && C%4 == 0 && vecAligned(0, x, w))
	b.dispatch1D(b.pipe("muon", "axpy_t", x.DType), nsBlocks(R, C))
}

// nsBatchMaxElems bounds the elements of one batch of Newton–Schulz
// matrices (count·R·C; 32 MB per F32 scratch buffer); a larger group of
// same-shaped matrices runs as several batches.
const nsBatchMaxElems = 1 << 23

// muonPlan is MuonUpdate's grouping of its matrices, kept while the shapes
// stay the same: the batches of same-shaped matrices, and each matrix's
// F32 view of geff, the scratch that holds its momentum-corrected gradient
// and then, unless the matrix is tall (R > C: its update stays transposed
// in Newton–Schulz's scratch), its orthogonalised update. geff is read
// only within MuonUpdate.
type muonPlan struct {
	shapes  [][2]int
	batches []muonBatch
	views   []*backend.Tensor // per matrix: its (R, C) view of geff
	geff    *backend.Tensor   // F32, the largest batch's elements
}

// muonBatch is matrices idx, all (R, C), laid out one after another in
// geff from its start (flat: the batch's view of geff).
type muonBatch struct {
	R, C int
	idx  []int
	flat *backend.Tensor
}

// muonPlanFor returns the plan of ws's shapes, reusing the last one.
func (b *Backend) muonPlanFor(ws []*backend.Tensor) *muonPlan {
	if p := b.muon; p != nil && len(p.shapes) == len(ws) {
		same := true
		for i, w := range ws {
			if p.shapes[i] != [2]int{w.Shape[0], w.Shape[1]} {
				same = false
				break
			}
		}
		if same {
			return p
		}
	}
	if b.muon != nil && b.muon.geff != nil {
		b.Free(b.muon.geff)
	}
	p := &muonPlan{shapes: make([][2]int, len(ws)), views: make([]*backend.Tensor, len(ws))}
	byShape := map[[2]int]int{} // shape → its open batch
	for i, w := range ws {
		sh := [2]int{w.Shape[0], w.Shape[1]}
		p.shapes[i] = sh
		n := sh[0] * sh[1]
		if n == 0 {
			continue
		}
		k, ok := byShape[sh]
		if !ok || (len(p.batches[k].idx)+1)*n > nsBatchMaxElems {
			k = len(p.batches)
			byShape[sh] = k
			p.batches = append(p.batches, muonBatch{R: sh[0], C: sh[1]})
		}
		p.batches[k].idx = append(p.batches[k].idx, i)
	}
	most := 0
	for _, bt := range p.batches {
		most = max(most, len(bt.idx)*bt.R*bt.C)
	}
	if most > 0 {
		p.geff = b.New(backend.F32, most)
	}
	for k := range p.batches {
		bt := &p.batches[k]
		n := bt.R * bt.C
		bt.flat = p.geff.Rows(0, len(bt.idx)*n)
		for j, i := range bt.idx {
			p.views[i] = p.geff.Rows(j*n, n).Reshape(bt.R, bt.C)
		}
	}
	b.muon = p
	return p
}

// MuonUpdate implements backend.MuonBatcher: Muon's update of every matrix
// i, bitwise
//
//	MuonMomentum(bufs[i], geff, gs[i], momentum)
//	NewtonSchulz(x, geff, steps)
//	Axpy(ws[i], x, alphas[i])
//
// with Newton–Schulz run on all matrices of one shape together (up to
// nsBatchMaxElems elements a batch): each of its dispatches (the norm's
// final pass, the scaling, every product, the store) covers the batch, the
// grid's third dimension indexing the matrix, so a step of k shapes
// dispatches about k·(3·steps + 3) of them however many matrices there
// are. The momentum and the axpy stay one dispatch per matrix (each
// matrix's weight and momentum buffer are tensors of their own); the
// momentum also writes its matrix's partial sums of squares
// (muonMomentumSumsq), so that the norm's first pass, a re-read of the
// whole batch, is not dispatched. A tall shape (R > C) has no store: its
// X stays transposed in the scratch and each weight is updated from it
// (muonAxpyT), the bits of the store and the axpy. ws, gs and bufs are F32
// and 2-D, gs[i] and bufs[i] shaped like ws[i].
func (b *Backend) MuonUpdate(ws, gs, bufs []*backend.Tensor, momentum float32, alphas []float32, steps int) {
	const op = "MuonUpdate"
	if len(gs) != len(ws) || len(bufs) != len(ws) || len(alphas) != len(ws) {
		panic(fmt.Sprintf("metal: %s: %d weights, %d gradients, %d buffers, %d alphas",
			op, len(ws), len(gs), len(bufs), len(alphas)))
	}
	if steps < 0 {
		panic(fmt.Sprintf("metal: %s: steps %d < 0", op, steps))
	}
	for i, w := range ws {
		if len(w.Shape) != 2 {
			panic(fmt.Sprintf("metal: %s: weight %d %v is not a matrix", op, i, w))
		}
		checkDType(op, backend.F32, w, gs[i], bufs[i])
		linearWantShape(op, "gradient", gs[i], w.Shape[0], w.Shape[1])
		linearWantShape(op, "momentum buffer", bufs[i], w.Shape[0], w.Shape[1])
	}
	p := b.muonPlanFor(ws)
	for k := range p.batches {
		bt := &p.batches[k]
		s := b.nsScratchFor(bt.R, bt.C, len(bt.idx))
		for j, i := range bt.idx {
			b.muonMomentumSumsq(bufs[i], p.views[i], gs[i], s.partial, momentum, j)
		}
		if x := b.newtonSchulz(bt.flat, bt.flat, bt.R, bt.C, len(bt.idx), steps, true, true); x != nil {
			for j, i := range bt.idx {
				b.muonAxpyT(ws[i], x, bt.R, bt.C, j, alphas[i])
			}
			continue
		}
		for _, i := range bt.idx {
			b.Axpy(ws[i], p.views[i], alphas[i])
		}
	}
}

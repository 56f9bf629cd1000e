package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// Muon's quintic Newton–Schulz over cuda/kernels/newton_schulz.cu and the
// backend's float GEMMs (as metal/newton_schulz.go): the norm stays on the
// device; with r = min(R, C), c = max(R, C):
//
//	X = g/(‖g‖_F + NSEps) as (r, c);  steps × (A = X·Xᵀ; B = NSC·A·A + NSB·A; X = B·X + NSA·X)

type nsScratch struct {
	x, xn, a, bm, partial, norm *backend.Tensor
}

// NewtonSchulz writes the orthogonalisation of g (R, C) into out.
func (b *Backend) NewtonSchulz(out, g *backend.Tensor, steps int) {
	const op = "NewtonSchulz"
	if len(g.Shape) != 2 || !g.DType.IsFloat() {
		panic(fmt.Sprintf("cuda: %s: g %v, want a float matrix (R, C)", op, g))
	}
	R, C := g.Shape[0], g.Shape[1]
	if len(out.Shape) != 2 || out.Shape[0] != R || out.Shape[1] != C || !out.DType.IsFloat() {
		panic(fmt.Sprintf("cuda: %s: out %v, want a float (%d, %d)", op, out, R, C))
	}
	if steps < 0 {
		panic(fmt.Sprintf("cuda: %s: steps %d < 0", op, steps))
	}
	n := R * C
	if n == 0 {
		return
	}
	r, c := R, C
	trans := R > C
	if trans {
		r, c = C, R
	}
	if b.ns == nil {
		b.ns = new(nsScratch)
	}
	s := b.ns
	x, xn := b.scratch(&s.x, n), b.scratch(&s.xn, n)
	am, bm := b.scratch(&s.a, r*r), b.scratch(&s.bm, r*r)
	partial, norm := b.scratch(&s.partial, NewtonSchulzMaxBlocks), b.scratch(&s.norm, 1)
	x, xn, am, bm = x.Rows(0, n), xn.Rows(0, n), am.Rows(0, r*r), bm.Rows(0, r*r)

	t := b.threads("newton_schulz", "sumsq", g.DType)
	parts := min(NewtonSchulzMaxBlocks, blocks(n, 16*t))
	b.a.reduce = shaders.ReduceArgs{N: uint32(n), Kind: uint32(backend.ReduceSumSquares)}
	b.launch("newton_schulz", "sumsq", g.DType, [3]int{parts, 1, 1}, g, partial, structArg(&b.a.reduce))
	b.a.reduce = shaders.ReduceArgs{N: uint32(parts), Kind: uint32(backend.ReduceSum)}
	b.launch("newton_schulz", "norm", backend.F32, [3]int{1, 1, 1}, partial, norm, structArg(&b.a.reduce))
	b.a.ns = shaders.NSArgs{Rows: uint32(R), Cols: uint32(C), A: backend.NSA, B: backend.NSB, C: backend.NSC}
	b.launch1D("newton_schulz", "scale", g.DType, n, g, norm, x, structArg(&b.a.ns))

	// The last X goes straight into out when out is float and needs no
	// transpose.
	direct := out.DType == backend.F32 && !trans
	for i := range steps {
		b.gemm(x, x, am, am, shaders.GemmArgs{M: uint32(r), N: uint32(r), K: uint32(c),
			Lda: uint32(c), Ldb: uint32(c), Ldc: uint32(r), TransB: 1, Alpha: 1}, backend.F32, false)
		b.gemm(am, am, am, bm, shaders.GemmArgs{M: uint32(r), N: uint32(r), K: uint32(r),
			Lda: uint32(r), Ldb: uint32(r), Ldc: uint32(r), Alpha: backend.NSC, Beta: backend.NSB}, backend.F32, false)
		next := xn
		if direct && i == steps-1 {
			next = out
		}
		b.gemm(bm, x, x, next, shaders.GemmArgs{M: uint32(r), N: uint32(c), K: uint32(r),
			Lda: uint32(r), Ldb: uint32(c), Ldc: uint32(c), Alpha: 1, Beta: backend.NSA}, backend.F32, false)
		x, xn = next, x
	}
	if direct && steps > 0 {
		return
	}
	b.a.ns = shaders.NSArgs{Rows: uint32(R), Cols: uint32(C), A: backend.NSA, B: backend.NSB, C: backend.NSC}
	b.launch1D("newton_schulz", "store", out.DType, n, x, out, structArg(&b.a.ns))
}

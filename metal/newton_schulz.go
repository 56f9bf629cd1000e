package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// newton_schulz: shaders/newton_schulz.metal (norm, scaling, store) and the
// float gemm of shaders/linear.metal (the products), all on the device: the
// Frobenius norm goes from a two-pass reduction into a one-element buffer
// that the scaling kernel reads, with no host sync.

func init() { supported[backend.OpNewtonSchulz] = true }

// nsThreads is the threadgroup size of the reduction kernels, and
// nsMaxPartials the most threadgroups of the first reduction pass.
const (
	nsThreads     = 256
	nsMaxPartials = 64
)

// nsScratch holds Newton–Schulz's device buffers, all F32, grown to the
// largest batch of matrices seen and reused: the iterate X and the next one
// (r·c per matrix), A = X·Xᵀ and B (r·r), the per-threadgroup partial sums
// of ‖g‖²_F and the norms.
type nsScratch struct {
	x, xn, a, bm, partial, norm *backend.Tensor
}

// nsGrow makes *t an F32 buffer of at least n elements.
func (b *Backend) nsGrow(t **backend.Tensor, n int) {
	if *t != nil && (*t).Len() >= n {
		return
	}
	if *t != nil {
		// Command buffers still using the old buffer keep it alive.
		b.Free(*t)
		b.scratchGrowths++
	}
	*t = b.New(backend.F32, n)
}

// NewtonSchulz writes the quintic Newton–Schulz orthogonalisation of g
// (R, C) into out (R, C), in float32 (g and out any float dtype):
//
//	X = g/(‖g‖_F + NSEps); if R > C work on Xᵀ (r = min(R,C), c = max(R,C))
//	repeat steps: A = X·Xᵀ (r, r); B = NSB·A + NSC·A·A; X = NSA·X + B·X
//
// Dispatches: two reduction passes for the norm, the scaling (four
// elements per thread, or a 4×4 block when it transposes), three gemms per step
// (the two symmetric ones, X·Xᵀ and A·A, on the tiles on and above the
// diagonal only: gemmSym), and the store
// (transposing back and rounding to out's dtype; skipped when the last
// product can write an F32, untransposed out directly).
func (b *Backend) NewtonSchulz(out, g *backend.Tensor, steps int) {
	const op = "NewtonSchulz"
	if len(g.Shape) != 2 || !g.DType.IsFloat() {
		panic(fmt.Sprintf("metal: %s: g %v, want a float matrix (R, C)", op, g))
	}
	R, C := g.Shape[0], g.Shape[1]
	if len(out.Shape) != 2 || out.Shape[0] != R || out.Shape[1] != C || !out.DType.IsFloat() {
		panic(fmt.Sprintf("metal: %s: out %v, want a float (%d, %d)", op, out, R, C))
	}
	if steps < 0 {
		panic(fmt.Sprintf("metal: %s: steps %d < 0", op, steps))
	}
	if R*C == 0 {
		return
	}
	b.newtonSchulz(out, g, R, C, 1, steps, false, false)
}

// nsParts is the number of threadgroups, and of partial sums of ‖g‖²_F,
// of the norm's first pass over a matrix of n elements: one per 16·256
// elements (16 per thread, four 4-element chunks), at most nsMaxPartials.
func nsParts(n int) int {
	return min(nsMaxPartials, (n+16*nsThreads-1)/(16*nsThreads))
}

// nsScratchFor returns Newton–Schulz's scratch, grown for count matrices
// (R, C).
func (b *Backend) nsScratchFor(R, C, count int) *nsScratch {
	n, r := R*C, min(R, C)
	if b.ns == nil {
		b.ns = new(nsScratch)
	}
	s := b.ns
	b.nsGrow(&s.x, count*n)
	b.nsGrow(&s.xn, count*n)
	b.nsGrow(&s.a, count*r*r)
	b.nsGrow(&s.bm, count*r*r)
	b.nsGrow(&s.partial, count*nsMaxPartials)
	b.nsGrow(&s.norm, count)
	return s
}

// nsAligned reports whether count matrices of n elements from g's offset
// all start on a 4-element boundary, with x (the F32 scratch, from its
// start) too: the aligned argument of the sum of squares and the
// untransposed scaling.
func nsAligned(n, count int, ts ...*backend.Tensor) bool {
	if count > 1 && n%4 != 0 {
		return false
	}
	return vecAligned(0, ts...)
}

// newtonSchulz runs NewtonSchulz on count matrices (R, C) side by side:
// matrix z of g and of out is the z-th run of R·C elements from the
// tensor's offset. Each dispatch covers every matrix (the grid's z), and
// each matrix gets the bits it gets alone. out may be g (g is read only by
// the scaling, before anything writes out). With summed, the partial sums
// of squares of every matrix are already in the scratch's partial
// (muon_momentum_sumsq, in the order newton_schulz_sumsq sums them: the
// same bits), and the first pass is skipped. With keepT and R > C, the
// final X stays transposed in the scratch, out untouched: newtonSchulz
// returns the scratch buffer that holds it (matrix z (C, R) from z·R·C),
// for muonAxpyT; else it returns nil.
func (b *Backend) newtonSchulz(out, g *backend.Tensor, R, C, count, steps int, summed, keepT bool) *backend.Tensor {
	n := R * C
	r, c := R, C
	trans := R > C
	if trans {
		r, c = C, R
	}
	s := b.nsScratchFor(R, C, count)

	// ‖g‖_F + NSEps into norm[z]: partial sums of squares, then their sum.
	parts := nsParts(n)
	b.a.ns = shaders.NSArgs{Rows: uint32(R), Cols: uint32(C), A: backend.NSA, B: backend.NSB, C: backend.NSC,
		Count: uint32(count), Parts: uint32(parts)}
	aligned := nsAligned(n, count, g, s.x)
	if !summed {
		p := b.nsPipe("sumsq", g.DType)
		b.begin()
		b.arg(g)
		b.arg(s.partial)
		bytesArg(b, &b.a.ns)
		b.alignedArg(aligned)
		b.dispatch(p, [3]int{parts, 1, count}, [3]int{nsThreads, 1, 1})
	}
	p := b.nsPipe("norm", backend.F32)
	b.begin()
	b.arg(s.partial)
	b.arg(s.norm)
	bytesArg(b, &b.a.ns)
	b.dispatch(p, [3]int{1, 1, count}, [3]int{nsThreads, 1, 1})

	// X = g/norm, (r, c): four elements per thread, or a 4×4 block when
	// it transposes.
	b.begin()
	b.arg(g)
	b.arg(s.norm)
	b.arg(s.x)
	bytesArg(b, &b.a.ns)
	if trans {
		b.alignedArg(R%4 == 0 && C%4 == 0 && vecAligned(0, g, s.x))
		b.nsDispatch(b.pipe("newton_schulz", "scale_t", g.DType), nsBlocks(R, C), count)
	} else {
		b.alignedArg(aligned)
		b.nsDispatch(b.pipe("newton_schulz", "scale4", g.DType), (n+3)/4, count)
	}

	x, xn := s.x, s.xn
	direct := out.DType == backend.F32 && !trans
	rc, rr := uint32(r*c), uint32(r*r)
	for i := range steps {
		// A = X·Xᵀ
		b.a.gemm = shaders.GemmArgs{M: uint32(r), N: uint32(r), K: uint32(c),
			Lda: uint32(c), Ldb: uint32(c), Ldc: uint32(r), TransB: 1, Alpha: 1,
			Batch: uint32(count), StrideA: rc, StrideB: rc, StrideC: rr}
		b.gemmSym(x, x, s.a, s.a)
		// B = NSC·A·A + NSB·A (A·A symmetric too)
		b.a.gemm = shaders.GemmArgs{M: uint32(r), N: uint32(r), K: uint32(r),
			Lda: uint32(r), Ldb: uint32(r), Ldc: uint32(r), Alpha: backend.NSC, Beta: backend.NSB,
			Batch: uint32(count), StrideA: rr, StrideB: rr, StrideC: rr}
		b.gemmSym(s.a, s.a, s.a, s.bm)
		// X' = B·X + NSA·X
		next := xn
		if direct && i == steps-1 {
			next = out
		}
		b.a.gemm = shaders.GemmArgs{M: uint32(r), N: uint32(c), K: uint32(r),
			Lda: uint32(r), Ldb: uint32(c), Ldc: uint32(c), Alpha: 1, Beta: backend.NSA,
			Batch: uint32(count), StrideA: rr, StrideB: rc, StrideC: rc}
		b.gemm(s.bm, x, x, next, backend.F32, false)
		x, xn = next, x
	}
	if direct && steps > 0 {
		return nil
	}
	if keepT && trans {
		return x
	}

	// out = X (transposed back), rounded to out's dtype.
	b.begin()
	b.arg(x)
	b.arg(out)
	bytesArg(b, &b.a.ns)
	b.nsDispatch(b.pipe("newton_schulz", "store", out.DType), n, count)
	return nil
}

// nsBlocks is the number of 4×4 blocks of an (R, C) matrix, the last of
// a side possibly short: the threads of scale_t and muon_axpy_t.
func nsBlocks(R, C int) int {
	return ((R + 3) / 4) * ((C + 3) / 4)
}

// nsDispatch runs n threads for each of count matrices (one per element,
// per 4-element chunk for scale4, or per 4×4 block for scale_t): groups
// of up to 256 threads along x, the matrix along z.
func (b *Backend) nsDispatch(p Pipeline, n, count int) {
	t := min(256, p.MaxThreads())
	b.dispatch(p, [3]int{(n + t - 1) / t, 1, count}, [3]int{t, 1, 1})
}

// nsPipe is the newton_schulz reduction kernel dir in dtype dt, checked to
// run nsThreads threads per threadgroup.
func (b *Backend) nsPipe(dir string, dt backend.DType) Pipeline {
	return nsThreadsPipe(b.pipe("newton_schulz", dir, dt))
}

// nsThreadsPipe is p, checked to run nsThreads threads per threadgroup.
func nsThreadsPipe(p Pipeline) Pipeline {
	if p.MaxThreads() < nsThreads {
		panic(fmt.Sprintf("metal: kernel %s runs at most %d threads per threadgroup, it needs %d",
			p.Name(), p.MaxThreads(), nsThreads))
	}
	return p
}

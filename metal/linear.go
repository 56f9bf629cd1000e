package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// linear: shaders/linear.metal. Every product is one dispatch of a gemm
// kernel, d = alpha·op(a)·op(b) + beta·c, on 64×64 output tiles (two for a
// split k, gemmSlice):
//
//	LinearForward   out = x·wᵀ      (N, O) = (N, I)·(O, I)ᵀ
//	LinearBackward  dx = dout·w     (N, I) = (N, O)·(O, I)       (+ dx)
//	                dw += doutᵀ·x   (O, I) = (N, O)ᵀ·(N, I)      F32
//
// and Newton–Schulz (newton_schulz.go) uses it on float matrices. The
// MLP's linear + relu² and its second product with the residual add
// (fused.go) run on the same kernel with a fused epilogue (gemm_nt_relu_sq,
// gemm_nn_drelu_sq, gemm_nt_scaled_add).

func init() { supported[backend.OpLinear] = true }

// Tile of d per threadgroup and threads per threadgroup of each flavour (as
// in shaders/linear.metal).
const (
	gemmTile            = 64
	gemmThreadsSimd     = 128
	gemmThreadsPortable = 256
	gemmBK              = 16 // k per staged step
)

// Split-K: a product with fewer output tiles than gemmMinGroups and a k
// of at least 2·gemmMinSlice is cut into slices of k (each a multiple of
// gemmBK and at least gemmMinSlice long) so that the slices' threadgroups
// number about gemmMinGroups: 128, about 4× the cores of a 32-core GPU and
// 12× a 10-core one, for the weight gradients (O×I outputs, k = N rows).
// Each slice writes a float partial; a second dispatch sums them in slice
// order. The choice depends on the shape alone, so every dtype sums in the
// same order.
const (
	gemmMinGroups = 128
	gemmMinSlice  = 512
)

// gemmSlice returns the k per slice of a split-K product of g's shape, or
// 0 for none. Batched products are not split.
func gemmSlice(g *shaders.GemmArgs) uint32 {
	groups := ((int(g.N) + gemmTile - 1) / gemmTile) * ((int(g.M) + gemmTile - 1) / gemmTile)
	k := int(g.K)
	if g.Batch > 1 || groups >= gemmMinGroups || k < 2*gemmMinSlice {
		return 0
	}
	s := min((gemmMinGroups+groups-1)/groups, k/gemmMinSlice)
	if s < 2 {
		return 0
	}
	chunk := ((k+s-1)/s + gemmBK - 1) / gemmBK * gemmBK
	if chunk >= k {
		return 0
	}
	return uint32(chunk)
}

// gemmDir is the kernel direction of a product's transposes: "nn", "nt",
// "tn" or "tt" (op(a) then op(b); t is transposed).
func gemmDir(transA, transB uint32) string {
	dirs := [4]string{"nn", "nt", "tn", "tt"}
	return dirs[b2i(transA != 0)*2+b2i(transB != 0)]
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// gemmAligned reports whether t's start and rows ld elements apart are
// 16-byte aligned (buffers are), so the simd flavour may read it by 16-byte
// vectors.
func gemmAligned(t *backend.Tensor, ld uint32, dt backend.DType) bool {
	es := dt.Size()
	return t.Offset*es%16 == 0 && int(ld)*es%16 == 0
}

// gemm dispatches d = alpha·op(a)·op(b) + beta·c with args (m, n, k, the
// strides, transposes, alpha and beta, and for a batch of products the
// count and the matrix strides) set by the caller in b.a.gemm. a and
// b have dtype in; d and c (c may be d; read only when beta ≠ 0) have dtype
// in, or F32 when f32Out. The kernel is the one of the transposes
// (gemm[_f32]_<dir>); a product with few output tiles and a long k is
// split (gemmSlice): its slices write float partials to a scratch and
// gemm[_f32]_reduce sums them into d.
func (b *Backend) gemm(a, bm, c, d *backend.Tensor, in backend.DType, f32Out bool) {
	b.gemmRun(a, bm, c, d, in, f32Out, false)
}

// gemmSym is gemm for a float product known to be symmetric (m = n): a·aᵀ
// (bm = a, trans_b) or a·a of a symmetric a (bm = a, no transposes), with
// c symmetric or unread. Its kernel, gemm_<dir>_sym, computes only the
// ⌈m/64⌉·(⌈m/64⌉+1)/2 tiles on and above the diagonal (one threadgroup
// each, gemmSymGroups) and stores each off-diagonal tile twice, at its
// place and transposed: every element gets the bits the full product
// gives it (float products commute and the k order is the same). The
// split-K decision is the full product's, so the bits are too.
func (b *Backend) gemmSym(a, bm, c, d *backend.Tensor) {
	g := &b.a.gemm
	if g.M != g.N || g.TransA != 0 {
		panic(fmt.Sprintf("metal: gemmSym: a %d×%d product with trans_a %d, want a square a·aᵀ or a·a",
			g.M, g.N, g.TransA))
	}
	b.gemmRun(a, bm, c, d, backend.F32, false, true)
}

// gemmSymGroups is the number of threadgroups of a symmetric m×m product's
// grid: T(T+1)/2 tiles on and above the diagonal of T = ⌈m/64⌉.
func gemmSymGroups(m uint32) int {
	t := (int(m) + gemmTile - 1) / gemmTile
	return t * (t + 1) / 2
}

// gemmRun is gemm, or gemmSym when sym.
func (b *Backend) gemmRun(a, bm, c, d *backend.Tensor, in backend.DType, f32Out, sym bool) {
	op := "gemm"
	if f32Out {
		op = "gemm_f32"
	}
	g := &b.a.gemm
	g.Aligned = 0
	if gemmAligned(a, g.Lda, in) {
		g.Aligned |= 1
	}
	if gemmAligned(bm, g.Ldb, in) {
		g.Aligned |= 2
	}
	g.SliceK = gemmSlice(g)
	threads := gemmThreadsPortable
	if b.caps.Flavour == Simd {
		threads = gemmThreadsSimd
	}
	if sym && g.SliceK != 0 && in != backend.F32 {
		// No symmetric kernel writes float partials of 16-bit operands:
		// the full product's slices.
		sym = false
	}
	dir := gemmDir(g.TransA, g.TransB)
	groups := [3]int{(int(g.N) + gemmTile - 1) / gemmTile, (int(g.M) + gemmTile - 1) / gemmTile, max(int(g.Batch), 1)}
	if sym {
		dir += "_sym"
		groups[0], groups[1] = gemmSymGroups(g.M), 1
	}
	if g.SliceK == 0 {
		b.gemmDispatch(b.pipe(op, dir, in), a, bm, c, d, groups, threads)
		return
	}
	// The slices: float partials, slice z at z·m·n (rows n apart), alpha =
	// 1, beta = 0; then the reduction with the caller's alpha, beta and c.
	// (A symmetric product's slices are its own kernel's, float → float.)
	slices := int((g.K + g.SliceK - 1) / g.SliceK)
	mn := int(g.M) * int(g.N)
	p := b.partials(slices * mn)
	ldc, alpha, beta := g.Ldc, g.Alpha, g.Beta
	g.Ldc, g.Alpha, g.Beta, g.StrideA, g.StrideB, g.StrideC = g.N, 1, 0, 0, 0, uint32(mn)
	groups[2] = slices
	if sym {
		b.gemmDispatch(b.pipe("gemm", dir, backend.F32), a, bm, p, p, groups, threads)
	} else {
		b.gemmDispatch(b.pipe("gemm_f32", dir, in), a, bm, p, p, groups, threads)
	}
	g.Ldc, g.Alpha, g.Beta, g.StrideC = ldc, alpha, beta, 0
	// Four outputs per thread; bit 3: each chunk is four columns of one
	// row, every tensor's on a 16-byte boundary (vector chunks).
	g.Aligned &^= 8
	if g.Ldc%4 == 0 && vecAligned(int(g.N), p, c, d) {
		g.Aligned |= 8
	}
	rp := b.pipe(op, "reduce", in)
	t := min(256, rp.MaxThreads())
	chunks := (mn + 3) / 4
	b.begin()
	b.arg(p)
	b.arg(c)
	b.arg(d)
	bytesArg(b, g)
	b.dispatch(rp, [3]int{(chunks + t - 1) / t, 1, 1}, [3]int{t, 1, 1})
}

// gemmDispatch runs gemm kernel p over groups with a, b, c, d and b.a.gemm,
// setting bit 2 of its aligned when every row of d, in every matrix of the
// grid's z, starts on a whole pair of elements (the simd flavour's paired
// stores).
func (b *Backend) gemmDispatch(p Pipeline, a, bm, c, d *backend.Tensor, groups [3]int, threads int) {
	if p.MaxThreads() < threads {
		panic(fmt.Sprintf("metal: kernel %s runs at most %d threads per threadgroup, it needs %d",
			p.Name(), p.MaxThreads(), threads))
	}
	g := &b.a.gemm
	g.Aligned &^= 4
	if d.Offset%2 == 0 && g.Ldc%2 == 0 && (groups[2] <= 1 || g.StrideC%2 == 0) {
		g.Aligned |= 4
	}
	b.begin()
	b.arg(a)
	b.arg(bm)
	b.arg(c)
	b.arg(d)
	bytesArg(b, g)
	b.dispatch(p, groups, [3]int{threads, 1, 1})
}

// LinearForward: out = x·wᵀ, out[n,o] = Σi x[n,i]·w[o,i].
//
//	out CD (N, O), x CD (N, I), w CD (O, I)
func (b *Backend) LinearForward(out, x, w *backend.Tensor) {
	const op = "LinearForward"
	N, I, O := linearShapes(op, x, w)
	linearWantShape(op, "out", out, N, O)
	checkDType(op, x.DType, out, w)
	if N == 0 || O == 0 {
		return
	}
	b.a.gemm = shaders.GemmArgs{M: uint32(N), N: uint32(O), K: uint32(I),
		Lda: uint32(I), Ldb: uint32(I), Ldc: uint32(O), TransB: 1, Alpha: 1}
	b.gemm(x, w, out, out, x.DType, false)
}

// LinearBackward:
//
//	dx = dout·w  (+ dx when accumulate)   dx CD (N, I), nil to skip
//	dw += doutᵀ·x                         dw F32 (O, I), nil to skip
//	dout CD (N, O), x CD (N, I), w CD (O, I)
//
// dx adds its old value in float before the one rounding (beta = 1); dw
// accumulates in float (beta = 1, F32 output).
func (b *Backend) LinearBackward(dx, dw, dout, x, w *backend.Tensor, accumulate bool) {
	const op = "LinearBackward"
	N, I, O := linearShapes(op, x, w)
	linearWantShape(op, "dout", dout, N, O)
	checkDType(op, x.DType, dout, w)
	if dx != nil {
		linearWantShape(op, "dx", dx, N, I)
		checkDType(op, x.DType, dx)
	}
	if dw != nil {
		linearWantShape(op, "dw", dw, O, I)
		checkDType(op, backend.F32, dw)
	}
	if dx != nil && N > 0 && I > 0 {
		beta := float32(0)
		if accumulate {
			beta = 1
		}
		b.a.gemm = shaders.GemmArgs{M: uint32(N), N: uint32(I), K: uint32(O),
			Lda: uint32(O), Ldb: uint32(I), Ldc: uint32(I), Alpha: 1, Beta: beta}
		b.gemm(dout, w, dx, dx, x.DType, false)
	}
	if dw != nil && N > 0 && O > 0 && I > 0 {
		b.a.gemm = shaders.GemmArgs{M: uint32(O), N: uint32(I), K: uint32(N),
			Lda: uint32(O), Ldb: uint32(I), Ldc: uint32(I), TransA: 1, Alpha: 1, Beta: 1}
		b.gemm(dout, x, dw, dw, x.DType, true)
	}
}

// linearShapes checks x (N, I) against w (O, I), both float, and returns
// N, I, O.
func linearShapes(op string, x, w *backend.Tensor) (N, I, O int) {
	if len(x.Shape) != 2 || len(w.Shape) != 2 || x.Shape[1] != w.Shape[1] {
		panic(fmt.Sprintf("metal: %s: x %v and w %v, want (N, I) and (O, I)", op, x, w))
	}
	if !x.DType.IsFloat() {
		panic(fmt.Sprintf("metal: %s: x %v is not a float tensor", op, x))
	}
	return x.Shape[0], x.Shape[1], w.Shape[0]
}

// linearWantShape panics unless t is a matrix (r, c).
func linearWantShape(op, name string, t *backend.Tensor, r, c int) {
	if len(t.Shape) != 2 || t.Shape[0] != r || t.Shape[1] != c {
		panic(fmt.Sprintf("metal: %s: %s %v, want (%d, %d)", op, name, t, r, c))
	}
}

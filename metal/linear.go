package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// linear: shaders/linear.metal. Every product is one dispatch of the gemm
// kernel, d = alpha·op(a)·op(b) + beta·c, on 64×64 output tiles:
//
//	LinearForward   out = x·wᵀ      (N, O) = (N, I)·(O, I)ᵀ
//	LinearBackward  dx = dout·w     (N, I) = (N, O)·(O, I)       (+ dx)
//	                dw += doutᵀ·x   (O, I) = (N, O)ᵀ·(N, I)      F32
//
// and Newton–Schulz (newton_schulz.go) uses it on float matrices.

func init() { supported[backend.OpLinear] = true }

// Tile of d per threadgroup and threads per threadgroup of each flavour (as
// in shaders/linear.metal).
const (
	gemmTile            = 64
	gemmThreadsSimd     = 128
	gemmThreadsPortable = 256
)

// gemm dispatches d = alpha·op(a)·op(b) + beta·c with args (m, n, k, the
// strides, transposes, alpha and beta, and for a batch of products the
// count and the matrix strides) set by the caller in b.a.gemm. a and
// b have dtype in; d and c (c may be d; read only when beta ≠ 0) have dtype
// in, or F32 when f32Out.
func (b *Backend) gemm(a, bm, c, d *backend.Tensor, in backend.DType, f32Out bool) {
	op := "gemm"
	if f32Out {
		op = "gemm_f32"
	}
	p := b.pipe(op, "", in)
	threads := gemmThreadsPortable
	if b.caps.Flavour == Simd {
		threads = gemmThreadsSimd
	}
	if p.MaxThreads() < threads {
		panic(fmt.Sprintf("metal: kernel %s runs at most %d threads per threadgroup, it needs %d",
			p.Name(), p.MaxThreads(), threads))
	}
	g := &b.a.gemm
	b.begin()
	b.arg(a)
	b.arg(bm)
	b.arg(c)
	b.arg(d)
	bytesArg(b, g)
	b.dispatch(p, [3]int{(int(g.N) + gemmTile - 1) / gemmTile, (int(g.M) + gemmTile - 1) / gemmTile, max(int(g.Batch), 1)},
		[3]int{threads, 1, 1})
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

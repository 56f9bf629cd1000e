package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// The linear layer (as metal/linear.go) and the backend's one matrix
// product, gemm: cuBLASLt plans (GEMMCublasLt) or the gemm kernels of
// cuda/kernels/linear.cu (GEMMKernels).

// gemmTile is the rows and columns of d per block of the gemm kernels.
const gemmTile = 64

// gemm computes the row-major d = alpha·op(a)·op(bm) + beta·c of g (dense
// operands: lda, ldb, ldc as GEMM's contract), a and bm in dtype in, c and
// d in in or F32 (f32Out). c is read only when beta ≠ 0 and may be d.
func (b *Backend) gemm(a, bm, c, d *backend.Tensor, g shaders.GemmArgs, in backend.DType, f32Out bool) {
	if b.gemmPath == GEMMCublasLt && g.K > 0 {
		out := in
		if f32Out {
			out = backend.F32
		}
		gm := GEMM{Name: "gemm", M: int(g.M), N: int(g.N), K: int(g.K), TransA: g.TransA != 0, TransB: g.TransB != 0,
			AB: in, CD: out, Beta: g.Beta}
		// cuBLASLt's default plans assume 256-byte-aligned operands; every
		// tensor starts so aligned (sizeClass), a view into one may not.
		if aligned(a, bm, c, d) {
			b.matmul(gm, g.Alpha, g.Beta, a, bm, c, d)
			return
		}
	}
	op := "gemm"
	if f32Out {
		op = "gemm_f32"
	}
	b.a.gemm = g
	b.launch(op, "", in, [3]int{blocks(int(g.N), gemmTile), blocks(int(g.M), gemmTile), 1}, a, bm, c, d,
		structArg(&b.a.gemm))
}

// aligned reports whether every tensor's first element is 256-byte aligned.
func aligned(ts ...*backend.Tensor) bool {
	for _, t := range ts {
		if ptr(t)%256 != 0 {
			return false
		}
	}
	return true
}

// matmul enqueues g through its cuBLASLt plan (created on first use).
func (b *Backend) matmul(g GEMM, alpha, beta float32, a, bm, c, d *backend.Tensor) {
	pa, pb, pc, pd := uintptr(ptr(a)), uintptr(ptr(bm)), uintptr(ptr(c)), uintptr(ptr(d))
	if b.costs != nil {
		b.costMatmul(g)
	}
	b.stats.Matmuls++
	b.gen++
	b.do(func(Driver) error {
		p, err := b.lt.plan(g)
		if err != nil {
			return err
		}
		return b.lt.lt.Matmul(b.lt.handle, p, alpha, beta, pa, pb, pc, pd, uintptr(b.ws), uintptr(b.stream))
	})
}

// LinearForward: out = x·wᵀ.
func (b *Backend) LinearForward(out, x, w *backend.Tensor) {
	const op = "LinearForward"
	N, I, O := linearShapes(op, x, w)
	linearWantShape(op, "out", out, N, O)
	checkDType(op, x.DType, out, w)
	if N == 0 || O == 0 {
		return
	}
	b.gemm(x, w, out, out, shaders.GemmArgs{M: uint32(N), N: uint32(O), K: uint32(I),
		Lda: uint32(I), Ldb: uint32(I), Ldc: uint32(O), TransB: 1, Alpha: 1}, x.DType, false)
}

// LinearBackward: dx = dout·w (+ dx when accumulate); dw += doutᵀ·x.
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
		if O == 0 {
			if !accumulate {
				b.Zero(dx)
			}
		} else {
			b.gemm(dout, w, dx, dx, shaders.GemmArgs{M: uint32(N), N: uint32(I), K: uint32(O),
				Lda: uint32(O), Ldb: uint32(I), Ldc: uint32(I), Alpha: 1, Beta: beta}, x.DType, false)
		}
	}
	if dw != nil && N > 0 && O > 0 && I > 0 {
		b.gemm(dout, x, dw, dw, shaders.GemmArgs{M: uint32(O), N: uint32(I), K: uint32(N),
			Lda: uint32(O), Ldb: uint32(I), Ldc: uint32(I), TransA: 1, Alpha: 1, Beta: 1}, x.DType, true)
	}
}

func linearShapes(op string, x, w *backend.Tensor) (N, I, O int) {
	if len(x.Shape) != 2 || len(w.Shape) != 2 || x.Shape[1] != w.Shape[1] {
		panic(fmt.Sprintf("cuda: %s: x %v and w %v, want (N, I) and (O, I)", op, x, w))
	}
	if !x.DType.IsFloat() {
		panic(fmt.Sprintf("cuda: %s: x %v is not a float tensor", op, x))
	}
	return x.Shape[0], x.Shape[1], w.Shape[0]
}

func linearWantShape(op, name string, t *backend.Tensor, r, c int) {
	if len(t.Shape) != 2 || t.Shape[0] != r || t.Shape[1] != c {
		panic(fmt.Sprintf("cuda: %s: %s %v, want (%d, %d)", op, name, t, r, c))
	}
}

package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// Cast, Scale, Axpy and Reduce over cuda/kernels/elementwise.cu (as
// metal/elementwise.go).

// ewScratch holds the partial sums of the two-pass reductions.
type ewScratch struct {
	partials *backend.Tensor // F32, at least the largest request so far
}

// ewCheckFloat panics unless every tensor has a float dtype.
func ewCheckFloat(op string, ts ...*backend.Tensor) {
	for _, t := range ts {
		if !t.DType.IsFloat() {
			panic(fmt.Sprintf("cuda: %s: %v, want a float dtype", op, t))
		}
	}
}

// castOp is the cast kernel from src's dtype; the kernel's element type is
// the destination's.
func castOp(src backend.DType) string {
	switch src {
	case backend.F32:
		return "cast_from_float"
	case backend.F16:
		return "cast_from_half"
	case backend.BF16:
		return "cast_from_bfloat"
	}
	panic(fmt.Sprintf("cuda: Cast from %v", src))
}

// Zero sets every element of t to 0 (an I32 tensor through the float
// kernel: +0 is all bits clear in both).
func (b *Backend) Zero(t *backend.Tensor) {
	n := t.Len()
	if n == 0 {
		return
	}
	dt := t.DType
	switch dt {
	case backend.I32:
		dt = backend.F32
	case backend.F32, backend.F16, backend.BF16:
	default:
		panic(fmt.Sprintf("cuda: Zero: %v", t))
	}
	b.a.eltwise = shaders.EltwiseArgs{N: uint32(n)}
	b.launch1D("zero", "", dt, n, t, structArg(&b.a.eltwise))
}

// Cast: dst = round_dst(src).
func (b *Backend) Cast(dst, src *backend.Tensor) {
	ewCheckFloat("Cast", dst, src)
	n := src.Len()
	checkLen("Cast", n, dst)
	if n == 0 {
		return
	}
	b.a.eltwise = shaders.EltwiseArgs{N: uint32(n)}
	b.launch1D(castOp(src.DType), "", dst.DType, n, src, dst, structArg(&b.a.eltwise))
}

// Scale: x *= s (x F32).
func (b *Backend) Scale(x *backend.Tensor, s float32) {
	checkDType("Scale", backend.F32, x)
	n := x.Len()
	if n == 0 {
		return
	}
	b.a.scalar = shaders.ScalarArgs{N: uint32(n), Alpha: s}
	b.launch1D("scale", "", backend.F32, n, x, structArg(&b.a.scalar))
}

// Axpy: dst += alpha·x (dst F32).
func (b *Backend) Axpy(dst, x *backend.Tensor, alpha float32) {
	checkDType("Axpy", backend.F32, dst)
	ewCheckFloat("Axpy", x)
	n := x.Len()
	checkLen("Axpy", n, dst)
	if n == 0 {
		return
	}
	b.a.scalar = shaders.ScalarArgs{N: uint32(n), Alpha: alpha}
	b.launch1D("axpy", "", x.DType, n, x, dst, structArg(&b.a.scalar))
}

// Reduce adds the reduction of x into dst[0]: reduce_partial over
// G = min(ReduceMaxBlocks, ⌈n/(256·ReduceItemsPerThread)⌉) blocks, then
// reduce_final (one block) adds the partials in order.
func (b *Backend) Reduce(dst, x *backend.Tensor, kind backend.ReduceKind) {
	checkDType("Reduce", backend.F32, dst)
	if len(dst.Shape) != 1 || dst.Shape[0] != 1 {
		panic(fmt.Sprintf("cuda: Reduce: dst %v, want F32[1]", dst))
	}
	ewCheckFloat("Reduce", x)
	if kind != backend.ReduceSum && kind != backend.ReduceSumSquares && kind != backend.ReduceNonFinite {
		panic(fmt.Sprintf("cuda: Reduce: unknown kind %d", kind))
	}
	n := x.Len()
	if n == 0 {
		return
	}
	t := b.threads("reduce", "partial", x.DType)
	g := min(blocks(n, t*ReduceItemsPerThread), ReduceMaxBlocks)
	part := b.scratch(&b.ew.partials, ReduceMaxBlocks)
	b.a.reduce = shaders.ReduceArgs{N: uint32(n), Kind: uint32(kind)}
	b.launch("reduce", "partial", x.DType, [3]int{g, 1, 1}, x, part, structArg(&b.a.reduce))
	b.a.reduce = shaders.ReduceArgs{N: uint32(g), Kind: uint32(kind)}
	b.launch("reduce", "final", x.DType, [3]int{1, 1, 1}, part, dst, structArg(&b.a.reduce))
}

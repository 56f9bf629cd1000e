package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// elementwise: shaders/elementwise.metal. Cast, Scale and Axpy run four
// elements per thread (dispatchVec4), moved as vectors where every tensor
// starts on a 4-element boundary (vecAligned); Reduce is a deterministic two-pass reduction
// (reduce_partial into the family's scratch partials, then reduce_final
// adding their sum into dst[0]).

func init() {
	supported[backend.OpCast] = true
	supported[backend.OpScale] = true
	supported[backend.OpAxpy] = true
	supported[backend.OpReduce] = true
}

// ewScratch is the F32 scratch of the two-pass reductions of this family
// (Reduce, ScaledAddBackward's ds, ResidMixBackward's dmix): per-block
// partial sums that a finalize kernel adds up in a fixed order. Dispatches
// run in order on one queue, so one buffer serves every op; it only grows,
// sized at first for the baseline's largest request.
type ewScratch struct {
	partials *backend.Tensor // F32, at least the largest request so far
	// dm is RMSNormResidMixBackward's (or LinearReluSqBackward's)
	// intermediate where it runs as its unfused sequence (fusedDm), one
	// per dtype, grown as needed.
	dm [3]*backend.Tensor
}

// ewMinPartials is the scratch's first size in floats: enough for the
// baseline's largest request (ResidMixBackward: 128 row blocks × 2·512).
const ewMinPartials = 1 << 17

// fusedDm returns a CD (N, C) scratch of dtype dt for the unfused
// sequences of RMSNormResidMixBackward (dm) and LinearReluSqBackward (da),
// kept from call to call.
func (b *Backend) fusedDm(dt backend.DType, N, C int) *backend.Tensor {
	k := 0
	switch dt {
	case backend.F16:
		k = 1
	case backend.BF16:
		k = 2
	}
	if t := b.ew.dm[k]; t == nil || t.Len() < N*C {
		if t != nil {
			// Command buffers still using the old buffer keep it alive.
			b.Free(t)
			b.scratchGrowths++
		}
		b.ew.dm[k] = b.New(dt, N*C)
	}
	return b.ew.dm[k].Rows(0, N*C).Reshape(N, C)
}

// partials returns an F32 scratch tensor of at least n elements.
func (b *Backend) partials(n int) *backend.Tensor {
	if p := b.ew.partials; p != nil && p.Len() >= n {
		return p
	}
	if b.ew.partials != nil {
		// Command buffers still using the old buffer keep it alive: no wait.
		b.Free(b.ew.partials)
		b.scratchGrowths++
	}
	b.ew.partials = b.New(backend.F32, max(n, ewMinPartials))
	return b.ew.partials
}

// ewCheckFloat panics unless every tensor has a float dtype.
func ewCheckFloat(op string, ts ...*backend.Tensor) {
	for _, t := range ts {
		if !t.DType.IsFloat() {
			panic(fmt.Sprintf("metal: %s: %v, want a float dtype", op, t))
		}
	}
}

// castOp is the kernel op name of a cast from src: "cast_from_<elem>".
func castOp(src backend.DType) string {
	switch src {
	case backend.F32:
		return "cast_from_float"
	case backend.F16:
		return "cast_from_half"
	case backend.BF16:
		return "cast_from_bfloat"
	}
	panic(fmt.Sprintf("metal: Cast from %v", src))
}

// Cast: dst = round_dst(src), any float dtypes, same number of elements.
func (b *Backend) Cast(dst, src *backend.Tensor) {
	ewCheckFloat("Cast", dst, src)
	n := src.Len()
	checkLen("Cast", n, dst)
	if n == 0 {
		return
	}
	b.a.eltwise = shaders.EltwiseArgs{N: uint32(n)}
	b.begin()
	b.arg(src)
	b.arg(dst)
	bytesArg(b, &b.a.eltwise)
	b.alignedArg(vecAligned(0, src, dst))
	b.dispatchVec4(b.pipe(castOp(src.DType), "", dst.DType), n)
}

// Scale: x *= s in place (x F32).
func (b *Backend) Scale(x *backend.Tensor, s float32) {
	checkDType("Scale", backend.F32, x)
	n := x.Len()
	if n == 0 {
		return
	}
	b.a.scalar = shaders.ScalarArgs{N: uint32(n), Alpha: s}
	b.begin()
	b.arg(x)
	bytesArg(b, &b.a.scalar)
	b.alignedArg(vecAligned(0, x))
	b.dispatchVec4(b.pipe("scale", "", backend.F32), n)
}

// Axpy: dst += alpha·x, dst F32, x any float dtype, same number of elements.
func (b *Backend) Axpy(dst, x *backend.Tensor, alpha float32) {
	checkDType("Axpy", backend.F32, dst)
	ewCheckFloat("Axpy", x)
	n := x.Len()
	checkLen("Axpy", n, dst)
	if n == 0 {
		return
	}
	b.a.scalar = shaders.ScalarArgs{N: uint32(n), Alpha: alpha}
	b.begin()
	b.arg(x)
	b.arg(dst)
	bytesArg(b, &b.a.scalar)
	b.alignedArg(vecAligned(0, x, dst))
	b.dispatchVec4(b.pipe("axpy", "", x.DType), n)
}

// reduceMaxGroups bounds the threadgroups (and partial sums) of Reduce's
// first pass; each thread then sums at least 4 elements.
const reduceMaxGroups = 1024

// Reduce adds the reduction of x (any float dtype) into dst[0] (F32 [1]):
// Σ x, Σ x² or the number of non-finite elements, summed in float32 in a
// fixed order (deterministic for a given device).
func (b *Backend) Reduce(dst, x *backend.Tensor, kind backend.ReduceKind) {
	checkDType("Reduce", backend.F32, dst)
	if len(dst.Shape) != 1 || dst.Shape[0] != 1 {
		panic(fmt.Sprintf("metal: Reduce: dst %v, want F32[1]", dst))
	}
	ewCheckFloat("Reduce", x)
	if kind != backend.ReduceSum && kind != backend.ReduceSumSquares && kind != backend.ReduceNonFinite {
		panic(fmt.Sprintf("metal: Reduce: unknown kind %d", kind))
	}
	n := x.Len()
	if n == 0 {
		return
	}
	p := b.pipe("reduce", "partial", x.DType)
	t := min(256, p.MaxThreads())
	g := min((n+4*t-1)/(4*t), reduceMaxGroups)
	part := b.partials(g)
	b.a.reduce = shaders.ReduceArgs{N: uint32(n), Kind: uint32(kind)}
	b.begin()
	b.arg(x)
	b.arg(part)
	bytesArg(b, &b.a.reduce)
	b.dispatch(p, [3]int{g, 1, 1}, [3]int{t, 1, 1})

	f := b.pipe("reduce", "final", x.DType)
	b.a.reduce = shaders.ReduceArgs{N: uint32(g), Kind: uint32(kind)}
	b.begin()
	b.arg(part)
	b.arg(dst)
	bytesArg(b, &b.a.reduce)
	b.dispatch(f, [3]int{1, 1, 1}, [3]int{min(256, f.MaxThreads()), 1, 1})
}

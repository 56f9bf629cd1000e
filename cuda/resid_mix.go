package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// The residual mix over cuda/kernels/resid_mix.cu (as metal/resid_mix.go).

// partialScratch holds the per-row-block partial sums of the
// column-parallel backward kernels (scaled_add, resid_mix).
type partialScratch struct {
	cols *backend.Tensor
}

func residMixShape(op string, x, mix *backend.Tensor) (N, C int) {
	ewCheckFloat(op, x)
	if len(x.Shape) != 2 {
		panic(fmt.Sprintf("cuda: %s: x %v, want rank 2", op, x))
	}
	N, C = x.Shape[0], x.Shape[1]
	checkDType(op, backend.F32, mix)
	ewCheckShape(op, 2, C, mix)
	return N, C
}

// ResidMixForward: out = mix[0]·x + mix[1]·x0 per column.
func (b *Backend) ResidMixForward(out, x, x0, mix *backend.Tensor) {
	const op = "ResidMixForward"
	N, C := residMixShape(op, x, mix)
	checkDType(op, x.DType, out, x0)
	ewCheckShape(op, N, C, out, x0)
	if N*C == 0 {
		return
	}
	b.a.residMix = shaders.ResidMixArgs{Rows: uint32(N), Cols: uint32(C)}
	b.launch1D("resid_mix", "fwd", x.DType, N*chunks(x.DType, C), x, x0, mix, out, structArg(&b.a.residMix))
}

// ResidMixBackward: dx = mix[0]·dout; dx0 += mix[1]·dout; dmix sums in a
// fixed order: grid (⌈⌈C/V⌉/256⌉, RB) writes the RB row blocks' partials,
// resid_mix_dmix adds them in block order.
func (b *Backend) ResidMixBackward(dx, dx0, dmix, dout, x, x0, mix *backend.Tensor) {
	const op = "ResidMixBackward"
	N, C := residMixShape(op, x, mix)
	checkDType(op, x.DType, dx, dout, x0)
	checkDType(op, backend.F32, dx0, dmix)
	ewCheckShape(op, N, C, dx, dx0, dout, x0)
	ewCheckShape(op, 2, C, dmix)
	if N*C == 0 {
		return
	}
	t := b.threads("resid_mix", "bwd", x.DType)
	part := b.scratch(&b.res.cols, ColumnRowBlocks*2*C)
	b.a.residMix = shaders.ResidMixArgs{Rows: uint32(N), Cols: uint32(C)}
	b.launch("resid_mix", "bwd", x.DType, [3]int{blocks(chunks(x.DType, C), t), ColumnRowBlocks, 1}, dout, x, x0, mix, dx,
		dx0, part, structArg(&b.a.residMix))
	b.residMixDmix(part, dmix, x.DType, C)
}

// residMixDmix adds the RB row blocks' partials (RB, 2, C) into dmix in
// block order (resid_mix_dmix).
func (b *Backend) residMixDmix(part, dmix *backend.Tensor, dt backend.DType, C int) {
	b.a.residMix = shaders.ResidMixArgs{Rows: ColumnRowBlocks, Cols: uint32(2 * C)}
	b.launch1D("resid_mix", "dmix", dt, 2*C, part, dmix, structArg(&b.a.residMix))
}

// rowChunk is the elements of a row chunk of the row kernels
// (golf_rows.cuh's GOLF_CHUNK), in every element type.
const rowChunk = 8

// chunks is ⌈C/8⌉, the chunks of a row of C elements (golf_rows.cuh).
func chunks(_ backend.DType, C int) int { return (C + rowChunk - 1) / rowChunk }

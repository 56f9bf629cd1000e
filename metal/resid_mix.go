package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// resid_mix: shaders/resid_mix.metal. The forward is four elements per
// thread (dispatchVec4); the backward (one thread per 4-column chunk) writes dx and dx0 and per-row-block column sums of
// dout·x and dout·x0 (resid_mix_bwd), then adds the blocks' sums into dmix
// in block order (resid_mix_dmix).

func init() { supported[backend.OpResidMix] = true }

// residMixShape checks x (N, C) of a float dtype and mix F32 (2, C).
func residMixShape(op string, x, mix *backend.Tensor) (N, C int) {
	ewCheckFloat(op, x)
	if len(x.Shape) != 2 {
		panic(fmt.Sprintf("metal: %s: x %v, want rank 2", op, x))
	}
	N, C = x.Shape[0], x.Shape[1]
	checkDType(op, backend.F32, mix)
	ewCheckShape(op, 2, C, mix)
	return N, C
}

// ResidMixForward: out[n,c] = mix[0,c]·x[n,c] + mix[1,c]·x0[n,c].
func (b *Backend) ResidMixForward(out, x, x0, mix *backend.Tensor) {
	const op = "ResidMixForward"
	N, C := residMixShape(op, x, mix)
	checkDType(op, x.DType, out, x0)
	ewCheckShape(op, N, C, out, x0)
	if N*C == 0 {
		return
	}
	b.a.residMix = shaders.ResidMixArgs{Rows: uint32(N), Cols: uint32(C)}
	b.begin()
	b.arg(x)
	b.arg(x0)
	b.arg(mix)
	b.arg(out)
	bytesArg(b, &b.a.residMix)
	b.alignedArg(vecAligned(C, x, x0, mix, out))
	b.dispatchVec4(b.pipe("resid_mix", "fwd", x.DType), N*C)
}

// ResidMixBackward:
//
//	dx[n,c] = mix[0,c]·dout[n,c]                 (overwritten, CD)
//	dx0[n,c] += mix[1,c]·dout[n,c]                (F32 [N,C])
//	dmix[0,c] += Σn dout·x, dmix[1,c] += Σn dout·x0 (F32 [2,C])
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
	p := b.pipe("resid_mix", "bwd", x.DType)
	threads, groups, blocks := ewColGrid(p, N, C)
	part := b.partials(blocks * 2 * C)
	b.a.residMix = shaders.ResidMixArgs{Rows: uint32(N), Cols: uint32(C)}
	b.begin()
	b.arg(dout)
	b.arg(x)
	b.arg(x0)
	b.arg(mix)
	b.arg(dx)
	b.arg(dx0)
	b.arg(part)
	bytesArg(b, &b.a.residMix)
	b.alignedArg(vecAligned(C, dout, x, x0, mix, dx, dx0, part))
	b.dispatch(p, groups, threads)

	f := b.pipe("resid_mix", "dmix", x.DType)
	b.a.residMix = shaders.ResidMixArgs{Rows: uint32(blocks), Cols: uint32(2 * C)}
	b.begin()
	b.arg(part)
	b.arg(dmix)
	bytesArg(b, &b.a.residMix)
	b.dispatch1D(f, 2*C)
}

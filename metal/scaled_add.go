package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// scaled_add: shaders/scaled_add.metal. The forward is four elements per
// thread (dispatchVec4); the backward (one thread per 4-column chunk) writes dy and per-row-block column sums of dout·y
// (scaled_add_bwd), then adds the blocks' sums into ds in block order
// (scaled_add_ds).

func init() { supported[backend.OpScaledAdd] = true }

// colBlocks is the row blocking of the column-parallel backward kernels
// (scaled_add_bwd, resid_mix_bwd): about ewColBlockRows rows per block, at
// most ewColMaxBlocks blocks (the baseline's 8192 rows: 128 blocks of 64).
const (
	ewColBlockRows = 64
	ewColMaxBlocks = 128
)

// ewColGrid returns the threadgroup width, the grid and the number of row
// blocks of a column-parallel backward over rows × cols with pipeline p:
// one thread per 4-column chunk (rowChunks).
func ewColGrid(p Pipeline, rows, cols int) (threads, groups [3]int, blocks int) {
	chunks := rowChunks(cols)
	w := min(256, p.MaxThreads(), (chunks+31)/32*32)
	blocks = ewColBlocks(rows)
	return [3]int{w, 1, 1}, [3]int{(chunks + w - 1) / w, blocks, 1}, blocks
}

// ewColBlocks is the number of row blocks of a column-parallel backward
// over rows rows (whatever its pipeline).
func ewColBlocks(rows int) int {
	return min(max((rows+ewColBlockRows-1)/ewColBlockRows, 1), ewColMaxBlocks)
}

// scaledAddShape checks t against (N, C) and s against (C) or nil.
func scaledAddShape(op string, t, s *backend.Tensor) (N, C int) {
	if len(t.Shape) != 2 {
		panic(fmt.Sprintf("metal: %s: %v, want rank 2", op, t))
	}
	N, C = t.Shape[0], t.Shape[1]
	if s != nil {
		checkDType(op, backend.F32, s)
		if len(s.Shape) != 1 || s.Shape[0] != C {
			panic(fmt.Sprintf("metal: %s: s %v, want F32[%d]", op, s, C))
		}
	}
	return N, C
}

// ewCheckShape panics unless every tensor has shape (N, C).
func ewCheckShape(op string, N, C int, ts ...*backend.Tensor) {
	for _, t := range ts {
		if len(t.Shape) != 2 || t.Shape[0] != N || t.Shape[1] != C {
			panic(fmt.Sprintf("metal: %s: %v, want shape [%d %d]", op, t, N, C))
		}
	}
}

// ScaledAddForward: out[n,c] = x[n,c] + s[c]·y[n,c]; s (F32 [C]) nil
// means 1. out may alias x.
func (b *Backend) ScaledAddForward(out, x, y, s *backend.Tensor) {
	const op = "ScaledAddForward"
	ewCheckFloat(op, x)
	checkDType(op, x.DType, out, y)
	N, C := scaledAddShape(op, x, s)
	ewCheckShape(op, N, C, out, y)
	if N*C == 0 {
		return
	}
	hasS := uint32(0)
	if s != nil {
		hasS = 1
	} else {
		s = x // bound but unread
	}
	b.a.scaledAdd = shaders.ScaledAddArgs{Rows: uint32(N), Cols: uint32(C), HasS: hasS}
	b.begin()
	b.arg(x)
	b.arg(y)
	b.arg(s)
	b.arg(out)
	bytesArg(b, &b.a.scaledAdd)
	b.alignedArg(vecAligned(C, x, y, s, out))
	b.dispatchVec4(b.pipe("scaled_add", "fwd", x.DType), N*C)
}

// ScaledAddBackward: dy = s⊙dout (overwritten; nil to skip);
// ds[c] += Σn dout[n,c]·y[n,c] (nil to skip).
func (b *Backend) ScaledAddBackward(dy, ds, dout, y, s *backend.Tensor) {
	const op = "ScaledAddBackward"
	ewCheckFloat(op, dout)
	N, C := scaledAddShape(op, dout, s)
	if dy != nil {
		checkDType(op, dout.DType, dy)
		ewCheckShape(op, N, C, dy)
	}
	if ds != nil {
		checkDType(op, dout.DType, y)
		ewCheckShape(op, N, C, y)
		checkDType(op, backend.F32, ds)
		if len(ds.Shape) != 1 || ds.Shape[0] != C {
			panic(fmt.Sprintf("metal: %s: ds %v, want F32[%d]", op, ds, C))
		}
	}
	if (dy == nil && ds == nil) || N*C == 0 {
		return
	}
	p := b.pipe("scaled_add", "bwd", dout.DType)
	threads, groups, blocks := ewColGrid(p, N, C)
	args := shaders.ScaledAddArgs{Rows: uint32(N), Cols: uint32(C)}
	// Unused slots are bound to tensors the kernel does not touch.
	yArg, sArg, dyArg := dout, dout, dout
	part := dout
	if s != nil {
		args.HasS, sArg = 1, s
	}
	if dy != nil {
		args.HasDy, dyArg = 1, dy
	}
	if ds != nil {
		args.HasDs, yArg = 1, y
		part = b.partials(blocks * C)
	}
	b.a.scaledAdd = args
	b.begin()
	b.arg(dout)
	b.arg(yArg)
	b.arg(sArg)
	b.arg(dyArg)
	b.arg(part)
	bytesArg(b, &b.a.scaledAdd)
	b.alignedArg(vecAligned(C, dout, yArg, sArg, dyArg, part))
	b.dispatch(p, groups, threads)
	if ds == nil {
		return
	}
	f := b.pipe("scaled_add", "ds", dout.DType)
	b.a.scaledAdd = shaders.ScaledAddArgs{Rows: uint32(blocks), Cols: uint32(C)}
	b.begin()
	b.arg(part)
	b.arg(ds)
	bytesArg(b, &b.a.scaledAdd)
	b.dispatch1D(f, C)
}

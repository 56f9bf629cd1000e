package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// The scaled residual add over cuda/kernels/scaled_add.cu (as
// metal/scaled_add.go).

func scaledAddShape(op string, t, s *backend.Tensor) (N, C int) {
	if len(t.Shape) != 2 {
		panic(fmt.Sprintf("cuda: %s: %v, want rank 2", op, t))
	}
	N, C = t.Shape[0], t.Shape[1]
	if s != nil {
		checkDType(op, backend.F32, s)
		if len(s.Shape) != 1 || s.Shape[0] != C {
			panic(fmt.Sprintf("cuda: %s: s %v, want F32[%d]", op, s, C))
		}
	}
	return N, C
}

// ScaledAddForward: out = x + s⊙y (s nil: 1); out may alias x.
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
	}
	b.a.scaledAdd = shaders.ScaledAddArgs{Rows: uint32(N), Cols: uint32(C), HasS: hasS}
	b.launch1D("scaled_add", "fwd", x.DType, N*chunks(x.DType, C), x, y, s, out, structArg(&b.a.scaledAdd))
}

// ScaledAddBackward: dy = s⊙dout (nil to skip); ds += Σn dout·y (nil to
// skip), through RB row blocks' partials added in block order.
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
			panic(fmt.Sprintf("cuda: %s: ds %v, want F32[%d]", op, ds, C))
		}
	}
	if (dy == nil && ds == nil) || N*C == 0 {
		return
	}
	args := shaders.ScaledAddArgs{Rows: uint32(N), Cols: uint32(C)}
	var part, yArg *backend.Tensor
	if s != nil {
		args.HasS = 1
	}
	if dy != nil {
		args.HasDy = 1
	}
	if ds != nil {
		args.HasDs, yArg = 1, y
		part = b.scratch(&b.res.cols, ColumnRowBlocks*C)
	}
	t := b.threads("scaled_add", "bwd", dout.DType)
	b.a.scaledAdd = args
	b.launch("scaled_add", "bwd", dout.DType, [3]int{blocks(C, t), ColumnRowBlocks, 1}, dout, yArg, s, dy, part,
		structArg(&b.a.scaledAdd))
	if ds == nil {
		return
	}
	b.a.scaledAdd = shaders.ScaledAddArgs{Rows: ColumnRowBlocks, Cols: uint32(C)}
	b.launch1D("scaled_add", "ds", dout.DType, C, part, ds, structArg(&b.a.scaledAdd))
}

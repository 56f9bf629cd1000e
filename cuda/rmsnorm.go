package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// RMSNorm without a weight over cuda/kernels/rmsnorm.cu (as
// metal/rmsnorm.go): one warp per row, 8 rows per block.

// rowsPerBlock is the rows of a one-warp-per-row kernel's block of t
// threads.
func rowsPerBlock(t int) int { return t / 32 }

// RMSNormForward normalises each row: rstd = 1/sqrt(mean x² + eps),
// out = x·rstd.
func (b *Backend) RMSNormForward(out, rstd, x *backend.Tensor) {
	const op = "RMSNormForward"
	normFloat(op, x.DType, out, x)
	checkDType(op, backend.F32, rstd)
	N, C := normRows(op, "x", x)
	normShape(op, "out", out, N, C)
	normShape(op, "rstd", rstd, N)
	if N == 0 || C == 0 {
		return
	}
	b.a.rmsnorm = shaders.RMSNormArgs{Rows: uint32(N), Cols: uint32(C), Eps: backend.RMSNormEps}
	rows := rowsPerBlock(b.threads("rmsnorm", "fwd", x.DType))
	b.launch("rmsnorm", "fwd", x.DType, [3]int{blocks(N, rows), 1, 1}, x, out, rstd, structArg(&b.a.rmsnorm))
}

// RMSNormBackward: dx = dres + rstd·(dout − x̂·mean(dout·x̂)); dres may be
// nil and dx may alias it.
func (b *Backend) RMSNormBackward(dx, dout, x, rstd, dres *backend.Tensor) {
	const op = "RMSNormBackward"
	normFloat(op, x.DType, dx, dout, x)
	checkDType(op, backend.F32, rstd)
	N, C := normRows(op, "x", x)
	normShape(op, "dx", dx, N, C)
	normShape(op, "dout", dout, N, C)
	normShape(op, "rstd", rstd, N)
	hasRes := uint32(0)
	if dres != nil {
		checkDType(op, x.DType, dres)
		normShape(op, "dres", dres, N, C)
		hasRes = 1
	}
	if N == 0 || C == 0 {
		return
	}
	b.a.rmsnormBwd = shaders.RMSNormBwdArgs{Rows: uint32(N), Cols: uint32(C), HasRes: hasRes}
	rows := rowsPerBlock(b.threads("rmsnorm", "bwd", x.DType))
	b.launch("rmsnorm", "bwd", x.DType, [3]int{blocks(N, rows), 1, 1}, dout, x, rstd, dres, dx,
		structArg(&b.a.rmsnormBwd))
}

func normRows(op, name string, t *backend.Tensor) (rows, cols int) {
	if len(t.Shape) != 2 {
		panic(fmt.Sprintf("cuda: %s: %s %v is not 2-D", op, name, t))
	}
	return t.Shape[0], t.Shape[1]
}

func normShape(op, name string, t *backend.Tensor, dims ...int) {
	ok := len(t.Shape) == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = t.Shape[i] == dims[i]
	}
	if !ok {
		panic(fmt.Sprintf("cuda: %s: %s %v, want shape %v", op, name, t, append([]int(nil), dims...)))
	}
}

func normFloat(op string, dt backend.DType, ts ...*backend.Tensor) {
	if dt != backend.F32 && dt != backend.F16 && dt != backend.BF16 {
		panic(fmt.Sprintf("cuda: %s: dtype %v, want a float dtype", op, dt))
	}
	checkDType(op, dt, ts...)
}

package cuda

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// The squared ReLU over cuda/kernels/relu_sq.cu (as metal/relu_sq.go): a
// thread per chunk of 8 elements, with 16-byte accesses where aligned.

// ReluSqForward: out = max(x, 0)².
func (b *Backend) ReluSqForward(out, x *backend.Tensor) {
	const op = "ReluSqForward"
	normFloat(op, x.DType, out)
	n := x.Len()
	checkLen(op, n, out)
	if n == 0 {
		return
	}
	b.a.eltwise = shaders.EltwiseArgs{N: uint32(n)}
	b.launch1D("relu_sq", "fwd", x.DType, chunks(x.DType, n), x, out, structArg(&b.a.eltwise))
}

// ReluSqBackward: dx = 2·max(x, 0)·dout.
func (b *Backend) ReluSqBackward(dx, dout, x *backend.Tensor) {
	const op = "ReluSqBackward"
	normFloat(op, x.DType, dx, dout)
	n := x.Len()
	checkLen(op, n, dx, dout)
	if n == 0 {
		return
	}
	b.a.eltwise = shaders.EltwiseArgs{N: uint32(n)}
	b.launch1D("relu_sq", "bwd", x.DType, chunks(x.DType, n), dout, x, dx, structArg(&b.a.eltwise))
}

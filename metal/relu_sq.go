package metal

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// relu_sq: shaders/relu_sq.metal, one thread per element.

func init() { supported[backend.OpReluSq] = true }

// ReluSqForward: out = max(x,0)².
func (b *Backend) ReluSqForward(out, x *backend.Tensor) {
	n := x.Len()
	checkLen("ReluSqForward", n, out)
	checkDType("ReluSqForward", x.DType, out)
	b.a.eltwise = shaders.EltwiseArgs{N: uint32(n)}
	b.begin()
	b.arg(x)
	b.arg(out)
	bytesArg(b, &b.a.eltwise)
	b.dispatch1D(b.pipe("relu_sq", "fwd", x.DType), n)
}

// ReluSqBackward: dx = 2·max(x,0)·dout.
func (b *Backend) ReluSqBackward(dx, dout, x *backend.Tensor) {
	n := x.Len()
	checkLen("ReluSqBackward", n, dx, dout)
	checkDType("ReluSqBackward", x.DType, dx, dout)
	b.a.eltwise = shaders.EltwiseArgs{N: uint32(n)}
	b.begin()
	b.arg(dout)
	b.arg(x)
	b.arg(dx)
	bytesArg(b, &b.a.eltwise)
	b.dispatch1D(b.pipe("relu_sq", "bwd", x.DType), n)
}

package metal

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// relu_sq: shaders/relu_sq.metal, four elements per thread with vector
// loads where every tensor starts on a 4-element boundary (vec4Ready),
// else one thread per element; both give the same bits.

func init() { supported[backend.OpReluSq] = true }

// vec4Ready is true when n ≥ 4 and each tensor's offset is a multiple of 4
// elements, so a kernel can read and write them as 4-element vectors
// (buffers start 16-byte aligned).
func vec4Ready(n int, ts ...*backend.Tensor) bool {
	if n < 4 {
		return false
	}
	for _, t := range ts {
		if t.Offset%4 != 0 {
			return false
		}
	}
	return true
}

// dispatchVec4 covers the n/4 vectors of a vec4 kernel with one thread
// each, plus one thread for the last n mod 4 elements.
func (b *Backend) dispatchVec4(p Pipeline, n int) {
	threads := n / 4
	if n%4 != 0 {
		threads++
	}
	b.dispatch1D(p, threads)
}

// ReluSqForward: out = max(x,0)².
func (b *Backend) ReluSqForward(out, x *backend.Tensor) {
	n := x.Len()
	checkLen("ReluSqForward", n, out)
	checkDType("ReluSqForward", x.DType, out)
	b.a.eltwise = shaders.EltwiseArgs{N: uint32(n)}
	b.begin()
	if vec4Ready(n, x, out) {
		b.arg(x)
		b.arg(out)
		b.arg(x)
		b.arg(out)
		bytesArg(b, &b.a.eltwise)
		b.dispatchVec4(b.pipe("relu_sq", "fwd4", x.DType), n)
		return
	}
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
	if vec4Ready(n, dout, x, dx) {
		b.arg(dout)
		b.arg(x)
		b.arg(dx)
		b.arg(dout)
		b.arg(x)
		b.arg(dx)
		bytesArg(b, &b.a.eltwise)
		b.dispatchVec4(b.pipe("relu_sq", "bwd4", x.DType), n)
		return
	}
	b.arg(dout)
	b.arg(x)
	b.arg(dx)
	bytesArg(b, &b.a.eltwise)
	b.dispatch1D(b.pipe("relu_sq", "bwd", x.DType), n)
}

package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// zero: the zero_<flavour>_<type> kernel of shaders/elementwise.metal.

// Zero sets every element of t (any dtype) to 0 with a kernel, so zeroing
// gradients does not wait for the work before it. I32 tensors use the float
// kernel: both are 4 bytes and 0 is all bits clear in each.
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
		panic(fmt.Sprintf("metal: Zero: %v", t))
	}
	b.a.eltwise = shaders.EltwiseArgs{N: uint32(n)}
	b.begin()
	b.arg(t)
	bytesArg(b, &b.a.eltwise)
	b.alignedArg(vecAligned(0, t))
	b.dispatchVec4(b.pipe("zero", "", dt), n)
}

package cpu

import "github.com/golf-ml/golf/backend"

// ReluSqForward: out = max(x, 0)².  out, x CD, any shape, same length.
func (b *Backend) ReluSqForward(out, x *backend.Tensor) {
	const op = "ReluSqForward"
	wantCD(op, []string{"out", "x"}, out, x)
	wantLen(op, "out", out, "x", x)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runElem(x.Len(), elemLoop{kind: elemReluSq, dst: out, x: x})
}

// ReluSqBackward: dx = 2·max(x, 0)·dout.  dx, dout, x CD, same length.
func (b *Backend) ReluSqBackward(dx, dout, x *backend.Tensor) {
	const op = "ReluSqBackward"
	wantCD(op, []string{"dx", "dout", "x"}, dx, dout, x)
	wantLen(op, "dx", dx, "x", x)
	wantLen(op, "dout", dout, "x", x)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runElem(x.Len(), elemLoop{kind: elemReluSqGrad, dst: dx, x: x, y: dout})
}

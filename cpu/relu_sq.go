package cpu

import "github.com/golf-ml/golf/backend"

// ReluSqForward: out = max(x, 0)².  out, x CD, any shape, same length.
func (b *Backend) ReluSqForward(out, x *backend.Tensor) {
	const op = "ReluSqForward"
	wantCD(op, []string{"out", "x"}, out, x)
	wantLen(op, "out", out, "x", x)
	blocks(x.Len(), func(i, n int, buf [3][]float32) {
		xs := view(x, i, n, buf[0])
		os := dest(out, i, n, buf[1])
		for j, v := range xs {
			v = max(v, 0)
			os[j] = v * v
		}
		flush(out, i, os)
	})
}

// ReluSqBackward: dx = 2·max(x, 0)·dout.  dx, dout, x CD, same length.
func (b *Backend) ReluSqBackward(dx, dout, x *backend.Tensor) {
	const op = "ReluSqBackward"
	wantCD(op, []string{"dx", "dout", "x"}, dx, dout, x)
	wantLen(op, "dx", dx, "x", x)
	wantLen(op, "dout", dout, "x", x)
	blocks(x.Len(), func(i, n int, buf [3][]float32) {
		xs := view(x, i, n, buf[0])
		g := view(dout, i, n, buf[1])
		os := dest(dx, i, n, buf[2])
		for j, v := range xs {
			os[j] = 2 * max(v, 0) * g[j]
		}
		flush(dx, i, os)
	})
}

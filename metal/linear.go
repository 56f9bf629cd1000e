package metal

import "github.com/golf-ml/golf/backend"

// linear: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) LinearForward(out, x, w *backend.Tensor) { unsupported(backend.OpLinear) }

func (b *Backend) LinearBackward(dx, dw, dout, x, w *backend.Tensor, accumulate bool) {
	unsupported(backend.OpLinear)
}

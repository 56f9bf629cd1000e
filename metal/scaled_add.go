package metal

import "github.com/golf-ml/golf/backend"

// scaled_add: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) ScaledAddForward(out, x, y, s *backend.Tensor) { unsupported(backend.OpScaledAdd) }

func (b *Backend) ScaledAddBackward(dy, ds, dout, y, s *backend.Tensor) {
	unsupported(backend.OpScaledAdd)
}

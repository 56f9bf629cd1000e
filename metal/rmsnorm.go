package metal

import "github.com/golf-ml/golf/backend"

// rmsnorm: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) RMSNormForward(out, rstd, x *backend.Tensor) { unsupported(backend.OpRMSNorm) }

func (b *Backend) RMSNormBackward(dx, dout, x, rstd, dres *backend.Tensor) {
	unsupported(backend.OpRMSNorm)
}

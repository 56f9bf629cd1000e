package metal

import "github.com/golf-ml/golf/backend"

// resid_mix: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) ResidMixForward(out, x, x0, mix *backend.Tensor) { unsupported(backend.OpResidMix) }

func (b *Backend) ResidMixBackward(dx, dx0, dmix, dout, x, x0, mix *backend.Tensor) {
	unsupported(backend.OpResidMix)
}

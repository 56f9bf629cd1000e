package metal

import "github.com/golf-ml/golf/backend"

// adam: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) AdamStep(p, g, m, v *backend.Tensor, hp backend.AdamParams) {
	unsupported(backend.OpAdam)
}

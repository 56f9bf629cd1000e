package metal

import "github.com/golf-ml/golf/backend"

// newton_schulz: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) NewtonSchulz(out, g *backend.Tensor, steps int) { unsupported(backend.OpNewtonSchulz) }

package metal

import "github.com/golf-ml/golf/backend"

// Zero clears t through the shared buffer (after a sync).
func (b *Backend) Zero(t *backend.Tensor) { clear(b.hostBytes(t)) }

package metal

import "github.com/golf-ml/golf/backend"

// attention: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) AttentionForward(out, lse, q, k, v *backend.Tensor, seqLen int) {
	unsupported(backend.OpAttention)
}

func (b *Backend) AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse *backend.Tensor, seqLen int) {
	unsupported(backend.OpAttention)
}

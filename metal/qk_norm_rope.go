package metal

import "github.com/golf-ml/golf/backend"

// qk_norm_rope: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) QKNormRopeForward(out, rstd, x, gain *backend.Tensor, seqLen int, base float32) {
	unsupported(backend.OpQKNormRope)
}

func (b *Backend) QKNormRopeBackward(dx, dgain, dout, x, rstd, gain *backend.Tensor, seqLen int, base float32) {
	unsupported(backend.OpQKNormRope)
}

package metal

import "github.com/golf-ml/golf/backend"

// softcap_ce: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) SoftcapCEForward(loss, logits, targets *backend.Tensor, cap float32) {
	unsupported(backend.OpSoftcapCE)
}

func (b *Backend) SoftcapCEBackward(dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	unsupported(backend.OpSoftcapCE)
}

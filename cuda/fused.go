package cuda

import "github.com/golf-ml/golf/backend"

// The fused ops of the contract, as the unfused sequences they are defined
// by (one kernel each is to replace them).

// ResidMixRMSNormForward: ResidMixForward then RMSNormForward of mix.
func (b *Backend) ResidMixRMSNormForward(mix, h, rstd, x, x0, mixW *backend.Tensor) {
	b.ResidMixForward(mix, x, x0, mixW)
	b.RMSNormForward(h, rstd, mix)
}

// ScaledAddRMSNormForward: ScaledAddForward then RMSNormForward of out.
func (b *Backend) ScaledAddRMSNormForward(out, h, rstd, x, y, s *backend.Tensor) {
	b.ScaledAddForward(out, x, y, s)
	b.RMSNormForward(h, rstd, out)
}

// QKNormRopePairForward: QKNormRopeForward of q, then of k.
func (b *Backend) QKNormRopePairForward(qOut, qRstd, q, qGain, kOut, kRstd, k, kGain *backend.Tensor, seqLen int, base float32) {
	b.QKNormRopeForward(qOut, qRstd, q, qGain, seqLen, base)
	b.QKNormRopeForward(kOut, kRstd, k, kGain, seqLen, base)
}

// QKNormRopePairBackward: QKNormRopeBackward of q, then of k.
func (b *Backend) QKNormRopePairBackward(dq, dqGain, dqOut, q, qRstd, qGain, dk, dkGain, dkOut, k, kRstd, kGain *backend.Tensor, seqLen int, base float32) {
	b.QKNormRopeBackward(dq, dqGain, dqOut, q, qRstd, qGain, seqLen, base)
	b.QKNormRopeBackward(dk, dkGain, dkOut, k, kRstd, kGain, seqLen, base)
}

// RMSNormResidMixBackward: RMSNormBackward into a scratch dm, then
// ResidMixBackward from it.
func (b *Backend) RMSNormResidMixBackward(dx, dx0, dmix, dout, xm, rstd, dres, x, x0, mixW *backend.Tensor) {
	dm := b.New(dx.DType, dx.Shape...)
	b.RMSNormBackward(dm, dout, xm, rstd, dres)
	b.ResidMixBackward(dx, dx0, dmix, dm, x, x0, mixW)
	b.Free(dm)
}

// SoftcapCEForwardBackward: SoftcapCEForward then SoftcapCEBackward.
func (b *Backend) SoftcapCEForwardBackward(loss, dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	b.SoftcapCEForward(loss, logits, targets, cap)
	b.SoftcapCEBackward(dlogits, logits, targets, cap, scale)
}

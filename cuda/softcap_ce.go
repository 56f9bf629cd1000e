package cuda

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// Softcapped cross-entropy over cuda/kernels/softcap_ce.cu (as
// metal/softcap_ce.go): one warp per row, 8 rows per block.

func softcapCEShapes(op string, logits, targets *backend.Tensor) (N, V int) {
	normFloat(op, logits.DType, logits)
	checkDType(op, backend.I32, targets)
	N, V = normRows(op, "logits", logits)
	normShape(op, "targets", targets, N)
	return N, V
}

// SoftcapCEForward: loss[n] = logsumexp(z[n,:]) − z[n,targets[n]],
// z = cap·tanh(logits/cap).
func (b *Backend) SoftcapCEForward(loss, logits, targets *backend.Tensor, cap float32) {
	const op = "SoftcapCEForward"
	N, V := softcapCEShapes(op, logits, targets)
	checkDType(op, backend.F32, loss)
	normShape(op, "loss", loss, N)
	if N == 0 || V == 0 {
		return
	}
	b.a.ce = shaders.CEArgs{Rows: uint32(N), Vocab: uint32(V), Cap: cap}
	rows := rowsPerBlock(b.threads("softcap_ce", "fwd", logits.DType))
	b.launch("softcap_ce", "fwd", logits.DType, [3]int{blocks(N, rows), 1, 1}, logits, targets, loss, structArg(&b.a.ce))
}

// SoftcapCEBackward: dlogits = scale·(softmax(z) − onehot)·(1 − tanh²).
func (b *Backend) SoftcapCEBackward(dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	const op = "SoftcapCEBackward"
	N, V := softcapCEShapes(op, logits, targets)
	checkDType(op, logits.DType, dlogits)
	normShape(op, "dlogits", dlogits, N, V)
	if N == 0 || V == 0 {
		return
	}
	b.a.ce = shaders.CEArgs{Rows: uint32(N), Vocab: uint32(V), Cap: cap, Scale: scale}
	rows := rowsPerBlock(b.threads("softcap_ce", "bwd", logits.DType))
	b.launch("softcap_ce", "bwd", logits.DType, [3]int{blocks(N, rows), 1, 1}, logits, targets, dlogits, structArg(&b.a.ce))
}

package metal

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// softcap_ce: shaders/softcap_ce.metal, one threadgroup per row.

func init() { supported[backend.OpSoftcapCE] = true }

// softcapCEShapes checks logits CD (N, V) and targets I32 (N) and returns
// N and V. Target values are not checked on the host (that would sync): a
// target outside [0, V) gives a NaN loss.
func softcapCEShapes(op string, logits, targets *backend.Tensor) (N, V int) {
	normFloat(op, logits.DType, logits)
	checkDType(op, backend.I32, targets)
	N, V = normRows(op, "logits", logits)
	normShape(op, "targets", targets, N)
	return N, V
}

// SoftcapCEForward: per row, z = cap·tanh(logits/cap) in float32, then
//
//	loss[n] = logsumexp(z[n,:]) − z[n,targets[n]]
//	loss F32 (N), logits CD (N, V), targets I32 (N)
func (b *Backend) SoftcapCEForward(loss, logits, targets *backend.Tensor, cap float32) {
	const op = "SoftcapCEForward"
	N, V := softcapCEShapes(op, logits, targets)
	checkDType(op, backend.F32, loss)
	normShape(op, "loss", loss, N)
	if N == 0 || V == 0 {
		return
	}
	p := b.pipe("softcap_ce", "fwd", logits.DType)
	b.a.ce = shaders.CEArgs{Rows: uint32(N), Vocab: uint32(V), Cap: cap}
	b.begin()
	b.arg(logits)
	b.arg(targets)
	b.arg(loss)
	bytesArg(b, &b.a.ce)
	b.dispatch(p, [3]int{N, 1, 1}, [3]int{normThreads(p, V), 1, 1})
}

// SoftcapCEBackward, with p = softmax(z):
//
//	dlogits[n,v] = scale·(p[n,v] − [v = targets[n]])·(1 − tanh²(logits[n,v]/cap))
//	dlogits CD (N, V), overwritten; logits CD (N, V), targets I32 (N)
//
// scale is dLoss/dloss[n].
func (b *Backend) SoftcapCEBackward(dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	const op = "SoftcapCEBackward"
	N, V := softcapCEShapes(op, logits, targets)
	checkDType(op, logits.DType, dlogits)
	normShape(op, "dlogits", dlogits, N, V)
	if N == 0 || V == 0 {
		return
	}
	p := b.pipe("softcap_ce", "bwd", logits.DType)
	b.a.ce = shaders.CEArgs{Rows: uint32(N), Vocab: uint32(V), Cap: cap, Scale: scale}
	b.begin()
	b.arg(logits)
	b.arg(targets)
	b.arg(dlogits)
	bytesArg(b, &b.a.ce)
	b.dispatch(p, [3]int{N, 1, 1}, [3]int{normThreads(p, V), 1, 1})
}

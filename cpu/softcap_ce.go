package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/vmath"
)

// ceShapes checks logits (N, V) against targets (N) and returns N, V and
// the targets.
func ceShapes(op string, logits, targets *backend.Tensor) (N, V int, tg []int32) {
	s := wantRank(op, "logits", logits, 2)
	N, V = s[0], s[1]
	wantShape(op, "targets", targets, N)
	return N, V, wantIDs(op, "targets", targets, V)
}

// softcapRow writes th = tanh(logits/cap) and z = cap·th (float32) and
// e = exp(z − max z), and returns max z and Σ e (summed in float64).
func softcapRow(th, z, e, logits []float32, cap float32) (m float32, sum float64) {
	m = vmath.Softcap(th, z, logits, cap)
	return m, vmath.ExpSub(e, z, m)
}

// SoftcapCEForward: per row, z = cap·tanh(logits/cap) in float32, then
//
//	loss[n] = logsumexp(z[n,:]) − z[n,targets[n]]
//	loss F32 (N), logits CD (N, V), targets I32 (N)
func (b *Backend) SoftcapCEForward(loss, logits, targets *backend.Tensor, cap float32) {
	const op = "SoftcapCEForward"
	wantCD(op, []string{"logits"}, logits)
	wantF32(op, []string{"loss"}, loss)
	N, V, tg := ceShapes(op, logits, targets)
	wantShape(op, "loss", loss, N)
	ls := f32s(loss)
	parallelFor(N, 4, func(lo, hi int) {
		lb, th, z, e := make([]float32, V), make([]float32, V), make([]float32, V), make([]float32, V)
		for n := lo; n < hi; n++ {
			m, sum := softcapRow(th, z, e, view(logits, n*V, V, lb), cap)
			ls[n] = float32(float64(m) + math.Log(sum) - float64(z[tg[n]]))
		}
	})
}

// SoftcapCEBackward, with p = softmax(z):
//
//	dlogits[n,v] = scale·(p[n,v] − [v = targets[n]])·(1 − tanh²(logits[n,v]/cap))
//	dlogits CD (N, V), overwritten; logits CD (N, V), targets I32 (N)
//
// scale is dLoss/dloss[n].
func (b *Backend) SoftcapCEBackward(dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	const op = "SoftcapCEBackward"
	wantCD(op, []string{"dlogits", "logits"}, dlogits, logits)
	N, V, tg := ceShapes(op, logits, targets)
	wantShape(op, "dlogits", dlogits, N, V)
	parallelFor(N, 4, func(lo, hi int) {
		lb, th, z, ob := make([]float32, V), make([]float32, V), make([]float32, V), make([]float32, V)
		for n := lo; n < hi; n++ {
			// The row's logits are read into th and z before os (possibly
			// the same storage when F32) is written.
			os := dest(dlogits, n*V, V, ob)
			m, sum := softcapRow(th, z, os, view(logits, n*V, V, lb), cap)
			lse := float64(m) + math.Log(sum)
			vmath.SoftcapGrad(os, z, th, lse, scale)
			t := tg[n]
			p := vmath.Exp32(float32(float64(z[t])-lse)) - 1
			os[t] = float32(scale*p) * (1 - float32(th[t]*th[t]))
			flush(dlogits, n*V, os)
		}
	})
}

package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
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
// returns max z and Σ exp(z − max z) (summed in float64).
func softcapRow(th, z, logits []float32, cap float32) (m float32, sum float64) {
	m = float32(math.Inf(-1))
	for v, l := range logits {
		t := tanh32(l / cap)
		th[v] = t
		z[v] = cap * t
		if z[v] > m || z[v] != z[v] {
			m = z[v]
		}
	}
	for _, zv := range z {
		sum += float64(exp32(zv - m))
	}
	return m, sum
}

// tanh32 is tanh(x) in float32 (Cephes tanhf): an odd polynomial for
// |x| < 0.625, else 1 − 2/(e^{2|x|} + 1) with x's sign; within 3 ulp.
func tanh32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	switch {
	case a != a:
		return x
	case a < 0.625:
		z := x * x
		p := float32(-5.70498872745e-3)
		p = p*z + 2.06390887954e-2
		p = p*z - 5.37397155531e-2
		p = p*z + 1.33314422036e-1
		p = p*z - 3.33332819422e-1
		return p*z*x + x
	case a > 44: // e^{2|x|} overflows; tanh is ±1 in float32 well before
		return float32(math.Copysign(1, float64(x)))
	}
	t := 1 - 2/(exp32(2*a)+1)
	if x < 0 {
		t = -t
	}
	return t
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
		lb, th, z := make([]float32, V), make([]float32, V), make([]float32, V)
		for n := lo; n < hi; n++ {
			m, sum := softcapRow(th, z, view(logits, n*V, V, lb), cap)
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
			m, sum := softcapRow(th, z, view(logits, n*V, V, lb), cap)
			lse := float64(m) + math.Log(sum)
			os := dest(dlogits, n*V, V, ob)
			for v, zv := range z {
				p := exp32(float32(float64(zv) - lse))
				if v == int(tg[n]) {
					p--
				}
				os[v] = scale * p * (1 - th[v]*th[v])
			}
			flush(dlogits, n*V, os)
		}
	})
}

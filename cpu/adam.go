package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
)

// AdamStep updates p in place, with bias corrections bc1 = 1−β1^t and
// bc2 = 1−β2^t (computed in float64, applied in float32):
//
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	p −= lr·(m/bc1) / (sqrt(v/bc2) + eps)
//	p, g, m, v F32, same shape
func (b *Backend) AdamStep(p, g, m, v *backend.Tensor, hp backend.AdamParams) {
	const op = "AdamStep"
	wantF32(op, []string{"p", "g", "m", "v"}, p, g, m, v)
	wantSame(op, "p", p, "g", g)
	wantSame(op, "p", p, "m", m)
	wantSame(op, "p", p, "v", v)
	if hp.Step < 1 {
		fail(op, "step %d, want ≥ 1", hp.Step)
	}
	bc1 := float32(1 - math.Pow(float64(hp.Beta1), float64(hp.Step)))
	bc2 := float32(1 - math.Pow(float64(hp.Beta2), float64(hp.Step)))
	ps, gs, ms, vs := f32s(p), f32s(g), f32s(m), f32s(v)
	b1, b2, lr, eps := hp.Beta1, hp.Beta2, hp.LR, hp.Eps
	parallelFor(len(ps), grain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gi := gs[i]
			mi := b1*ms[i] + (1-b1)*gi
			vi := b2*vs[i] + (1-b2)*gi*gi
			ms[i], vs[i] = mi, vi
			ps[i] -= lr * (mi / bc1) / (float32(math.Sqrt(float64(vi/bc2))) + eps)
		}
	})
}

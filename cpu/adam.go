package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/vmath"
)

// AdamStep updates p in place, with bias corrections bc1 = 1−β1^t and
// bc2 = 1−β2^t (computed in float64, applied in float32), each float32
// operation rounded on its own in this order (vmath.Adam):
//
//	m = β1·m + (1−β1)·g;  v = β2·v + ((1−β2)·g)·g
//	p −= (lr·(m/bc1)) / (sqrt(v/bc2) + eps)
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
	c := vmath.AdamConsts{
		B1: hp.Beta1, B2: hp.Beta2, OneMinusB1: 1 - hp.Beta1, OneMinusB2: 1 - hp.Beta2,
		LR:  hp.LR,
		BC1: float32(1 - math.Pow(float64(hp.Beta1), float64(hp.Step))),
		BC2: float32(1 - math.Pow(float64(hp.Beta2), float64(hp.Step))),
		Eps: hp.Eps,
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runElem(p.Len(), elemLoop{kind: elemAdam, f: [4][]float32{f32s(p), f32s(g), f32s(m), f32s(v)}, adam: c})
}

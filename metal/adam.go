package metal

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// adam: shaders/adam.metal, four elements per thread (dispatchVec4), moved
// as vectors where every tensor starts on a 4-element boundary.

func init() { supported[backend.OpAdam] = true }

// AdamStep updates p in place, with bias corrections bc1 = 1−β1^t and
// bc2 = 1−β2^t (computed in float64 on the host, applied in float32):
//
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	p −= lr·(m/bc1) / (sqrt(v/bc2) + eps)
//	p, g, m, v F32, same number of elements
func (b *Backend) AdamStep(p, g, m, v *backend.Tensor, hp backend.AdamParams) {
	const op = "AdamStep"
	checkDType(op, backend.F32, p, g, m, v)
	n := p.Len()
	checkLen(op, n, g, m, v)
	if hp.Step < 1 {
		panic(fmt.Sprintf("metal: %s: step %d, want ≥ 1", op, hp.Step))
	}
	if n == 0 {
		return
	}
	b.a.adam = shaders.AdamArgs{
		N: uint32(n), Lr: hp.LR, Beta1: hp.Beta1, Beta2: hp.Beta2, Eps: hp.Eps,
		Bias1: float32(1 - math.Pow(float64(hp.Beta1), float64(hp.Step))),
		Bias2: float32(1 - math.Pow(float64(hp.Beta2), float64(hp.Step))),
	}
	b.begin()
	b.arg(p)
	b.arg(g)
	b.arg(m)
	b.arg(v)
	bytesArg(b, &b.a.adam)
	b.alignedArg(vecAligned(0, p, g, m, v))
	b.dispatchVec4(b.pipe("adam", "step", backend.F32), n)
}

package cuda

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// AdamStep updates p in place over cuda/kernels/adam.cu (as metal/adam.go);
// the bias corrections 1 − β^t are computed on the host in float64.
func (b *Backend) AdamStep(p, g, m, v *backend.Tensor, hp backend.AdamParams) {
	const op = "AdamStep"
	checkDType(op, backend.F32, p, g, m, v)
	n := p.Len()
	checkLen(op, n, g, m, v)
	if hp.Step < 1 {
		panic(fmt.Sprintf("cuda: %s: step %d, want ≥ 1", op, hp.Step))
	}
	if n == 0 {
		return
	}
	b.a.adam = shaders.AdamArgs{
		N: uint32(n), Lr: hp.LR, Beta1: hp.Beta1, Beta2: hp.Beta2, Eps: hp.Eps,
		Bias1: float32(1 - math.Pow(float64(hp.Beta1), float64(hp.Step))),
		Bias2: float32(1 - math.Pow(float64(hp.Beta2), float64(hp.Step))),
	}
	b.launch1D("adam", "step", backend.F32, n, p, g, m, v, structArg(&b.a.adam))
}

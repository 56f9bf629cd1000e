package optim

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// GradNorm is the global L2 norm of every parameter gradient, summed in one
// F32 scalar on the backend and read once (one sync).
//
//	norm = sqrt(Σ_params Σ_i G[i]²)
func GradNorm(b backend.Backend, params []*model.Param) float64 {
	return math.Sqrt(sumSquares(b, params))
}

func sumSquares(b backend.Backend, params []*model.Param) float64 {
	acc := b.New(backend.F32, 1) // (1)
	defer b.Free(acc)
	// Tensor by tensor, not over the gradient arena: a float32 sum's
	// bits depend on its order, and the clip scale must not move.
	for _, p := range params {
		b.Reduce(acc, p.G, backend.ReduceSumSquares)
	}
	return float64(b.Download(acc)[0])
}

// ClipGradNorm is the reference's clip_grad_tree: when the global gradient
// norm exceeds maxNorm, every gradient is scaled in place so that it equals
// maxNorm (up to the 1e-12 guard):
//
//	norm = sqrt(Σ G²)
//	G   *= maxNorm/(norm + 1e-12)     if norm > maxNorm
//
// It does nothing and returns 0 when maxNorm ≤ 0 (no reduction, no sync),
// and does nothing when Σ G² = 0. Otherwise it returns the norm before
// clipping. A NaN norm scales by NaN, as the reference does.
func ClipGradNorm(b backend.Backend, params []*model.Param, maxNorm float64) (norm float64) {
	if maxNorm <= 0 {
		return 0
	}
	total := sumSquares(b, params)
	if total <= 0 {
		return 0
	}
	norm = math.Sqrt(total)
	if norm <= maxNorm {
		return norm
	}
	s := float32(maxNorm / (norm + 1e-12))
	if g := model.GradArena(params); g != nil {
		b.Scale(g, s)
		return norm
	}
	for _, p := range params {
		b.Scale(p.G, s)
	}
	return norm
}

package optim

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// Adam is one Adam instance (MLX optim.Adam with bias_correction=True) over
// a group of parameters: its own first and second moments (F32, allocated
// once, zero) and its own step counter.
//
//	t += 1
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	p −= lr·(m/(1−β1^t)) / (sqrt(v/(1−β2^t)) + eps)
type Adam struct {
	b      backend.Backend
	params []*model.Param
	m, v   []*backend.Tensor // F32, shaped like each parameter
	LR     float64           // base learning rate; Step multiplies it by lrMul
	Beta1  float64
	Beta2  float64
	Eps    float64
	t      int // steps taken; the next Step uses t+1
}

// NewAdam allocates the moments of params on b.
func NewAdam(b backend.Backend, params []*model.Param, lr, beta1, beta2, eps float64) *Adam {
	a := &Adam{b: b, params: params, LR: lr, Beta1: beta1, Beta2: beta2, Eps: eps}
	for _, p := range params {
		a.m = append(a.m, b.New(backend.F32, p.W.Shape...))
		a.v = append(a.v, b.New(backend.F32, p.W.Shape...))
	}
	return a
}

// Steps is the number of steps taken so far (MLX's optimizer.step).
func (a *Adam) Steps() int { return a.t }

// Step advances the step counter and updates every parameter of the group
// with learning rate LR·lrMul from its gradient G.
func (a *Adam) Step(lrMul float64) {
	a.t++
	hp := backend.AdamParams{
		LR:    float32(a.LR * lrMul),
		Beta1: float32(a.Beta1),
		Beta2: float32(a.Beta2),
		Eps:   float32(a.Eps),
		Step:  a.t,
	}
	for i, p := range a.params {
		a.b.AdamStep(p.W, p.G, a.m[i], a.v[i], hp)
	}
}

// Free releases the moments.
func (a *Adam) Free() {
	for i := range a.m {
		a.b.Free(a.m[i])
		a.b.Free(a.v[i])
	}
	a.m, a.v = nil, nil
}

package backendtest

import (
	"testing"

	"github.com/golf-ml/golf/backend"
)

// plainAccumulate is the reference with Accumulate done as a plain float32
// addition into acc[0] (no compensation): a term below half an ulp of the
// total is lost, as a backend that reuses Reduce for it would lose it.
type plainAccumulate struct{ *reference }

func (p plainAccumulate) Accumulate(acc, x *backend.Tensor, alpha float32) {
	defer p.begin()()
	a := p.acc(acc)
	s := 0.0
	for _, v := range p.get(x) {
		s += v
	}
	a[0] = roundTo(backend.F32, a[0]+roundTo(backend.F32, float64(alpha)*s))
	p.put(acc, a)
}

// TestAccumulateCatchesPlainSum: the cases of Accumulate fail an
// accumulator without compensation, in every dtype.
func TestAccumulateCatchesPlainSum(t *testing.T) {
	for _, dt := range OpDTypes(backend.OpAccumulate) {
		expectFailure(t, "uncompensated accumulator", plainAccumulate{&reference{}}, backend.OpAccumulate, dt)
	}
}

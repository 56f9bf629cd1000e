//go:build cgo

package metal

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
)

// TestReluSqVec4IsScalar: relu_sq's four-per-thread kernels (tensors on a
// 4-element boundary) against its one-per-thread kernels (the same values
// in views one element off it), bit for bit, forward and backward, in both
// flavours and every dtype, at lengths below, at and off a multiple of 4,
// with zeros of both signs, negatives, infinities and NaN among the inputs;
// and the vector kernels are the ones that ran.
func TestReluSqVec4IsScalar(t *testing.T) {
	forFused(t, nil, func(t *testing.T, b *Backend, dt backend.DType) {
		for _, n := range []int{1, 3, 4, 5, 7, 8, 257, 1027} {
			r := newFusedRig(t, b, dt, uint64(n))
			xs, ds := r.normal(n, 2), r.normal(n, 1)
			special := []float32{0, float32(math.Copysign(0, -1)), -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
			for i := range min(n, len(special)) {
				xs[(i*7)%n] = special[i]
			}
			x, d := r.tensor(dt, xs, n), r.tensor(dt, ds, n)
			xo, do := r.tensor(dt, append([]float32{0}, xs...), n+1), r.tensor(dt, append([]float32{0}, ds...), n+1)
			xv, dv := xo.Rows(1, n), do.Rows(1, n)
			out, out2 := r.outs(dt, n)
			dx, dx2 := r.outs(dt, n)
			before := b.Stats().Dispatches
			b.ReluSqForward(out, x)
			b.ReluSqBackward(dx, d, x)
			assert.Equal(t, 2, int(b.Stats().Dispatches-before), "dispatches")
			b.ReluSqForward(out2, xv)
			b.ReluSqBackward(dx2, dv, xv)
			r.same(fmt.Sprintf("n %d", n), out, out2, dx, dx2)
			assert.Equal(t, n >= 4, vec4Ready(n, x, out, d, dx), "n %d: the vector kernels ran", n)
			assert.False(t, vec4Ready(n, xv, dv), "n %d: the offset views run one element per thread", n)
		}
	})
}

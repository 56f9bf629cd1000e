package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSumSqSerialMatchesReduceRows: the batched Muon's serial ‖g‖² is
// bitwise the parallel reduction NewtonSchulz uses (the same chunks of
// rows, added in the same order), and both are within float64 rounding of
// a float64 sum taken element by element.
func TestSumSqSerialMatchesReduceRows(t *testing.T) {
	b := New()
	r := rand.New(rand.NewPCG(11, 12))
	for _, s := range [][2]int{{1, 7}, {5, 64}, {31, 9}, {32, 33}, {33, 40}, {100, 17}, {257, 64}} {
		R, C := s[0], s[1]
		v := randVals(r, R*C, 3)
		b.mu.Lock()
		sq := &b.loops.sq
		*sq = sumSqRows{v: v, cols: C}
		want := b.reduceRows(R, 1, sq)[0]
		*sq = sumSqRows{}
		b.mu.Unlock()
		got := sumSqSerial(v, R, C)
		assert.Equal(t, math.Float64bits(want), math.Float64bits(got), "%d×%d: serial %v, reduceRows %v", R, C, got, want)
		var plain float64
		for _, x := range v {
			plain += float64(x) * float64(x)
		}
		assert.InEpsilon(t, plain, got, 1e-13, "%d×%d", R, C)
	}
}

package backendtest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
)

// TestRoundedOnceWindow: a reordered backend's window lets through the
// other rounding of a float32 result that lies within it of a boundary
// between two bfloat16 values, and nothing else: not that rounding
// without a window, not a truncation far from any boundary.
func TestRoundedOnceWindow(t *testing.T) {
	// 1 + 2⁻⁸ is halfway between the bfloat16 values 1 and 1 + 2⁻⁷.
	nearBoundary := float32(1 + 0x1p-8 + 0x1p-20) // rounds up to 1 + 2⁻⁷
	farFromBoundary := float32(1 + 0x1p-7 - 0x1p-10)
	lower := float32(1)
	upper := float32(1 + 0x1p-7)
	cases := []struct {
		name   string
		got, f float32
		window []float64
		pass   bool
	}{
		{"the rounding itself", upper, nearBoundary, nil, true},
		{"the other rounding, no window", lower, nearBoundary, nil, false},
		{"the other rounding, window reaching the boundary", lower, nearBoundary, []float64{0x1p-19}, true},
		{"the other rounding, window short of the boundary", lower, nearBoundary, []float64{0x1p-21}, false},
		{"a truncation far from the boundary", lower, farFromBoundary, []float64{0x1p-19}, false},
		{"two roundings away inside a wide window", float32(1 + 0x1p-6), float32(1), []float64{0x1p-5}, true},
	}
	for _, c := range cases {
		r := &recorder{TB: t}
		ok := roundedOnce(r, c.name, []float32{c.got}, []float32{c.f}, backend.BF16, c.window)
		assert.Equal(t, c.pass, ok, "%s: got %v for the float32 result %v", c.name, c.got, c.f)
		assert.Equal(t, c.pass, len(r.failures) == 0, "%s: failures %q", c.name, r.failures)
	}
	assert.Less(t, math.Abs(float64(nearBoundary)-(1+0x1p-8)), 0x1p-19, "fixture: nearBoundary within the wide window of the boundary")
}

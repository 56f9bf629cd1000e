package train

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// TestTimePairsAlternates: timePairs warms both variants, then times one
// fused and one unfused call per pair, the first of each pair alternating,
// at least five pairs, and leaves the model fused.
func TestTimePairsAlternates(t *testing.T) {
	m := &model.Model{}
	var order []bool
	f := func() { order = append(order, m.Unfused) }
	fused, unfused, ratio, err := timePairs(cpu.New(), m, f, time.Nanosecond)
	require.NoError(t, err)
	assert.False(t, m.Unfused, "the model is left fused")
	require.Equal(t, []bool{true, false}, order[:2], "warm-up: unfused, then fused")
	pairs := order[2:]
	require.Len(t, pairs, 2*fused.n)
	assert.Equal(t, fused.n, unfused.n)
	assert.Equal(t, fused.n, ratio.n)
	assert.GreaterOrEqual(t, fused.n, 5)
	for i := 0; i < len(pairs); i += 2 {
		first := (i/2)%2 == 1 // pair 0 starts fused, pair 1 unfused, ...
		assert.Equal(t, []bool{first, !first}, pairs[i:i+2], "pair %d", i/2)
	}
}

package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAttentionDSFloats checks the dS scratch's size against a count of
// its blocks (each 64-row query block starting at row t0 holds 64 rows of
// t0 + 64 keys) and the bound's choice at the baseline and at a long
// sequence.
func TestAttentionDSFloats(t *testing.T) {
	for _, c := range []struct{ B, T, H int }{{1, 1, 1}, {2, 150, 4}, {8, 1024, 8}, {1, 64, 3}, {1, 65, 1}} {
		want := 0
		for t0 := 0; t0 < c.T; t0 += 64 {
			want += 64 * (t0 + 64)
		}
		assert.Equal(t, c.B*c.H*want, AttentionDSFloats(c.B, c.T, c.H), "B %d T %d H %d", c.B, c.T, c.H)
	}
	// The baseline's chunk: 8 sequences of 1024 rows, 8 heads: 136 blocks
	// of 64×64 floats per (b, h), 142,606,336 bytes, under the bound; the
	// same tokens as 2 sequences of 4096 rows need 545,259,520, over it.
	assert.Equal(t, 142606336, 4*AttentionDSFloats(8, 1024, 8))
	assert.LessOrEqual(t, 4*AttentionDSFloats(8, 1024, 8), AttentionDSMaxBytes)
	assert.Equal(t, 545259520, 4*AttentionDSFloats(2, 4096, 8))
	assert.Greater(t, 4*AttentionDSFloats(2, 4096, 8), AttentionDSMaxBytes)
}

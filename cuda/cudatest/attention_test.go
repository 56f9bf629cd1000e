package cudatest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/cpu"
)

// reordered is a backend whose 16-bit products sum in another order.
type reordered struct{ backend.Backend }

func (reordered) ReorderedSums(dt backend.DType) bool { return dt != backend.F32 }

// TestNoTCAttentionKeepsReorderedSums: the view keeps the wrapped
// backend's ReorderedSums, which the conformance suite finds by a type
// assertion; a backend without it stays without it.
func TestNoTCAttentionKeepsReorderedSums(t *testing.T) {
	r, ok := NoTCAttention(reordered{cpu.New()}).(backendtest.ReorderedSums)
	if assert.True(t, ok) {
		assert.True(t, r.ReorderedSums(backend.BF16))
		assert.True(t, r.ReorderedSums(backend.F16))
		assert.False(t, r.ReorderedSums(backend.F32))
	}
	type plain struct{ backend.Backend }
	r, ok = NoTCAttention(plain{cpu.New()}).(backendtest.ReorderedSums)
	assert.True(t, !ok || !r.ReorderedSums(backend.BF16))
	assert.False(t, NoTCAttention(plain{cpu.New()}).Supports(backend.OpAttention, backend.BF16))
}

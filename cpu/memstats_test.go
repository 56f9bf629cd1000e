package cpu

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
)

// The counts are elements × bytes per element, worked out by hand.
func TestAllocatedBytes(t *testing.T) {
	b := New()
	a := b.New(backend.F32, 3, 5) // 60 bytes
	h := b.New(backend.BF16, 7)   // 14
	i := b.New(backend.I32, 2)    // 8
	f := b.New(backend.F16, 2, 2) // 8
	live, peak := b.AllocatedBytes()
	assert.Equal(t, [2]int64{90, 90}, [2]int64{live, peak})

	b.Free(a)
	b.Free(a) // a second Free of the same tensor counts nothing
	v := h.Reshape(7, 1)
	_ = v.Rows(0, 3) // views own no storage
	live, peak = b.AllocatedBytes()
	assert.Equal(t, [2]int64{30, 90}, [2]int64{live, peak})

	b.ResetPeakAllocated()
	live, peak = b.AllocatedBytes()
	assert.Equal(t, [2]int64{30, 30}, [2]int64{live, peak})
	g := b.New(backend.F32, 10) // 40: live 70, a new peak
	b.Free(g)
	b.Free(i)
	b.Free(f)
	live, peak = b.AllocatedBytes()
	assert.Equal(t, [2]int64{14, 70}, [2]int64{live, peak})
}

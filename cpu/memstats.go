package cpu

import (
	"sync/atomic"

	"github.com/golf-ml/golf/backend"
)

var _ backend.MemoryStats = (*Backend)(nil)

// memCounter is the bytes of the tensors a Backend holds now and at most.
type memCounter struct{ live, peak atomic.Int64 }

func (c *memCounter) alloc(n int64) {
	live := c.live.Add(n)
	for p := c.peak.Load(); live > p && !c.peak.CompareAndSwap(p, live); p = c.peak.Load() {
	}
}

func (c *memCounter) free(n int64) { c.live.Add(-n) }

// storageBytes is the size of a tensor's backing slice (0 once freed).
func storageBytes(data any) int64 {
	switch d := data.(type) {
	case []float32:
		return 4 * int64(len(d))
	case []uint16:
		return 2 * int64(len(d))
	case []int32:
		return 4 * int64(len(d))
	}
	return 0
}

// AllocatedBytes returns the bytes of the tensors made by New and not yet
// freed, and their most at once since New or ResetPeakAllocated. Tensors
// dropped without Free stay counted: the garbage collector may reclaim
// their memory, but the backend is not told.
func (b *Backend) AllocatedBytes() (live, peak int64) {
	return b.mem.live.Load(), b.mem.peak.Load()
}

// ResetPeakAllocated starts a new peak from the bytes live now.
func (b *Backend) ResetPeakAllocated() { b.mem.peak.Store(b.mem.live.Load()) }

// PanelBytes returns the bytes the float32 panels of the matrix products
// and of Muon's iteration hold now (Backend.panel): the scratch the memory
// check's "cpu matmul panels" line accounts for.
func (b *Backend) PanelBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for _, p := range b.scratch {
		n += 4 * int64(cap(p))
	}
	return n
}

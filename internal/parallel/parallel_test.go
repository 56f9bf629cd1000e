package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countBody records how often each item was run and by which participant.
type countBody struct {
	hits    []atomic.Int32
	maxW    atomic.Int32
	calls   atomic.Int32
	inUse   []atomic.Int32 // per participant: goroutines inside Run now
	clashes atomic.Int32
}

func newCountBody(n int) *countBody {
	return &countBody{hits: make([]atomic.Int32, n), inUse: make([]atomic.Int32, 64)}
}

func (c *countBody) Run(w, lo, hi int) {
	c.calls.Add(1)
	if c.inUse[w].Add(1) != 1 {
		c.clashes.Add(1)
	}
	for {
		m := c.maxW.Load()
		if int32(w) <= m || c.maxW.CompareAndSwap(m, int32(w)) {
			break
		}
	}
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
	// Some work, so that several participants overlap.
	x := 0.0
	for i := range 2000 {
		x += float64(i)
	}
	_ = x
	c.inUse[w].Add(-1)
}

// TestForRunsEveryItemOnce: at every GOMAXPROCS and size, For and
// ForChunks run each item exactly once, with participant ids below
// GOMAXPROCS and never two goroutines under one id at once.
func TestForRunsEveryItemOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 7, 100, 1001} {
			for _, grain := range []int{1, 3, 64} {
				c := newCountBody(n)
				For(n, grain, c)
				for i := range c.hits {
					require.EqualValues(t, 1, c.hits[i].Load(), "procs %d n %d grain %d item %d", procs, n, grain, i)
				}
				assert.Less(t, int(c.maxW.Load()), procs)
				assert.Zero(t, c.clashes.Load())
				if n < 2*grain && n > 0 {
					assert.EqualValues(t, 1, c.calls.Load(), "a loop under 2 grains runs as one call")
				}
			}
			c := newCountBody(n)
			ForChunks(n, 5, c)
			for i := range c.hits {
				require.EqualValues(t, 1, c.hits[i].Load())
			}
			assert.EqualValues(t, min(n, 5), c.calls.Load())
		}
	}
}

// boundsBody records the chunks ForChunks hands out.
type boundsBody struct {
	mu     sync.Mutex
	chunks map[[2]int]bool
}

func (b *boundsBody) Run(w, lo, hi int) {
	b.mu.Lock()
	b.chunks[[2]int{lo, hi}] = true
	b.mu.Unlock()
}

// TestForChunksBoundaries: ForChunks cuts [0, n) at c·n/chunks whatever
// GOMAXPROCS is (the property deterministic reductions rely on).
func TestForChunksBoundaries(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 5} {
		runtime.GOMAXPROCS(procs)
		b := &boundsBody{chunks: map[[2]int]bool{}}
		ForChunks(100, 7, b)
		want := map[[2]int]bool{}
		for c := range 7 {
			want[[2]int{c * 100 / 7, (c + 1) * 100 / 7}] = true
		}
		assert.Equal(t, want, b.chunks, "GOMAXPROCS %d", procs)
	}
}

type nopBody struct{ sum atomic.Int64 }

func (b *nopBody) Run(w, lo, hi int) { b.sum.Add(int64(hi - lo)) }

// TestForDoesNotAllocate: a warm loop allocates nothing.
func TestForDoesNotAllocate(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{2, 4} {
		runtime.GOMAXPROCS(procs)
		b := &nopBody{}
		For(1000, 1, b)
		allocs := testing.AllocsPerRun(50, func() {
			for range 20 {
				For(1000, 1, b)
				ForChunks(1000, 32, b)
			}
		})
		assert.Zero(t, allocs, "GOMAXPROCS %d", procs)
		assert.EqualValues(t, 1000+51*20*2000, b.sum.Load(), "AllocsPerRun runs the function once more than asked")
	}
}

// TestConcurrentCallers: loops started from several goroutines at once all
// complete, each item once.
func TestConcurrentCallers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(3)
	var wg sync.WaitGroup
	bodies := make([]*countBody, 8)
	for i := range bodies {
		bodies[i] = newCountBody(500)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				For(25, 1, bodies[i])
			}
		}()
	}
	wg.Wait()
	for _, c := range bodies {
		for i := range 25 {
			assert.EqualValues(t, 20, c.hits[i].Load())
		}
	}
}

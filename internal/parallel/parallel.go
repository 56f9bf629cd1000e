// Package parallel runs the CPU backend's loops over a fixed pool of
// worker goroutines: one fewer than GOMAXPROCS, started once, so that a
// training step's hundreds of parallel loops neither start goroutines nor
// allocate, and the calling goroutine works as the last participant
// instead of waiting idle. There is never more than GOMAXPROCS goroutines
// busy with its work at once.
//
// For cuts [0, n) into chunks that participants claim one at a time
// (dynamic scheduling: a participant slowed by another process on its core
// takes fewer chunks), so which participant runs which chunk varies from
// call to call. Callers must produce results that do not depend on it: a
// chunk's output is its own, and reductions go through fixed-size partial
// sums combined in a fixed order (see Chunks).
//
// Bodies must not call For themselves (the pool does not nest: a nested
// call would run its chunks on the caller alone, or wait behind the outer
// call's work). Products inside a body use the serial entry points of
// package gemm.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Body is a loop body: Run does items [lo, hi) as participant w, where
// 0 ≤ w < the Workers() of the call. Participant 0 is the calling
// goroutine; at any moment each w is used by one goroutine, so a body may
// keep per-participant scratch indexed by w.
type Body interface {
	Run(w, lo, hi int)
}

// Workers is the number of participants a loop may use: GOMAXPROCS.
func Workers() int { return runtime.GOMAXPROCS(0) }

// chunksPerWorker is how many chunks each participant gets on average when
// there are enough items: a few, so that a participant delayed by another
// process leaves its share to the others.
const chunksPerWorker = 4

// For runs body over [0, n) in chunks of at least grain items (grain ≥ 1)
// on up to Workers() goroutines, the caller included, and returns when
// every chunk is done. Loops of fewer than 2·grain items run on the caller
// alone, as one call body.Run(0, 0, n).
func For(n, grain int, body Body) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	nw := min(Workers(), n/grain)
	if nw <= 1 {
		body.Run(0, 0, n)
		return
	}
	chunks := min(n/grain, nw*chunksPerWorker)
	run(body, n, chunks, nw)
}

// ForChunks runs body over [0, n) cut into exactly chunks nearly equal
// chunks (chunk c is [c·n/chunks, (c+1)·n/chunks)), each given to one call
// of body.Run, on up to Workers() goroutines. Use it where the chunk
// boundaries must not depend on the number of workers, as in reductions
// whose partial sums are then combined in chunk order.
func ForChunks(n, chunks int, body Body) {
	if n <= 0 {
		return
	}
	chunks = min(max(chunks, 1), n)
	nw := min(Workers(), chunks)
	if nw <= 1 {
		for c := range chunks {
			body.Run(0, c*n/chunks, (c+1)*n/chunks)
		}
		return
	}
	run(body, n, chunks, nw)
}

// job is one call of For: its chunks, a claim counter, the participants'
// ids and a completion signal. A job is referenced by the caller and by
// each copy posted to the workers; the last to let go returns it to the
// free list, so a worker that picks up a copy after the loop ended finds it
// exhausted rather than reused.
type job struct {
	body      Body
	n, chunks int
	next      atomic.Int64 // next unclaimed chunk
	finished  atomic.Int64 // chunks done
	ids       atomic.Int64 // participant ids handed out to workers
	refs      atomic.Int64
	done      chan struct{} // receives once when every chunk is done
}

// work claims and runs chunks as participant w until none is left.
func (j *job) work(w int) {
	for {
		c := int(j.next.Add(1) - 1)
		if c >= j.chunks {
			return
		}
		j.body.Run(w, c*j.n/j.chunks, (c+1)*j.n/j.chunks)
		if j.finished.Add(1) == int64(j.chunks) {
			j.done <- struct{}{}
		}
	}
}

// release drops one reference, returning j to the free list after the last.
func (j *job) release() {
	if j.refs.Add(-1) == 0 {
		j.body = nil
		free.Lock()
		free.jobs = append(free.jobs, j)
		free.Unlock()
	}
}

var free struct {
	sync.Mutex
	jobs []*job
}

func newJob() *job {
	free.Lock()
	defer free.Unlock()
	if k := len(free.jobs); k > 0 {
		j := free.jobs[k-1]
		free.jobs = free.jobs[:k-1]
		return j
	}
	return &job{done: make(chan struct{}, 1)}
}

// run posts j to nw-1 workers, works on it as participant 0 and waits for
// the last chunk.
func run(body Body, n, chunks, nw int) {
	j := newJob()
	j.body, j.n, j.chunks = body, n, chunks
	j.next.Store(0)
	j.finished.Store(0)
	j.ids.Store(0)
	j.refs.Store(int64(nw))
	startWorkers(nw - 1)
	for range nw - 1 {
		queue <- j
	}
	j.work(0)
	<-j.done
	j.release()
}

var (
	queue       = make(chan *job, 256)
	workersMu   sync.Mutex
	workersLive int
)

// startWorkers makes sure at least k pool goroutines are running.
func startWorkers(k int) {
	workersMu.Lock()
	for ; workersLive < k; workersLive++ {
		go worker()
	}
	workersMu.Unlock()
}

func worker() {
	for j := range queue {
		w := int(j.ids.Add(1))
		j.work(w)
		j.release()
	}
}

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
// ids, a completion signal, and a state word (generation in the high 32
// bits, a closed flag, the count of workers inside). Copies posted to the
// workers are tickets carrying the generation; a worker joins only while
// the job is open in that generation, so the caller can close the job and
// reuse it as soon as its chunks are done, however late a worker picks up
// its ticket: a stale ticket is dropped without touching the job's body.
type job struct {
	body      Body
	n, chunks int
	next      atomic.Int64  // next unclaimed chunk
	finished  atomic.Int64  // chunks done
	ids       atomic.Int64  // participant ids handed out to workers
	state     atomic.Uint64 // generation<<32 | closed | workers inside
	done      chan struct{} // receives once when every chunk is done
}

const (
	closedBit  = 1 << 31
	activeMask = closedBit - 1
)

// ticket is one worker's invitation to a job's generation.
type ticket struct {
	j   *job
	gen uint32
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

// join enters j as a worker if t is still j's open generation.
func (j *job) join(t ticket) bool {
	for {
		s := j.state.Load()
		if uint32(s>>32) != t.gen || s&closedBit != 0 {
			return false
		}
		if j.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// close stops workers joining, then waits for those inside to leave (they
// are past their last chunk: every chunk is done).
func (j *job) close() {
	for {
		s := j.state.Load()
		if j.state.CompareAndSwap(s, s|closedBit) {
			break
		}
	}
	for j.state.Load()&activeMask != 0 {
		runtime.Gosched()
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

func putJob(j *job) {
	j.body = nil
	free.Lock()
	free.jobs = append(free.jobs, j)
	free.Unlock()
}

// run posts j to nw-1 workers, works on it as participant 0, waits for
// the last chunk, and closes it.
func run(body Body, n, chunks, nw int) {
	j := newJob()
	gen := uint32(j.state.Load()>>32) + 1
	j.body, j.n, j.chunks = body, n, chunks
	j.next.Store(0)
	j.finished.Store(0)
	j.ids.Store(0)
	j.state.Store(uint64(gen) << 32)
	startWorkers(nw - 1)
	for range nw - 1 {
		queue <- ticket{j, gen}
	}
	j.work(0)
	<-j.done
	j.close()
	putJob(j)
}

var (
	queue       = make(chan ticket, 256)
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
	for t := range queue {
		if !t.j.join(t) {
			continue
		}
		w := int(t.j.ids.Add(1))
		t.j.work(w)
		t.j.state.Add(^uint64(0)) // leave: active − 1
	}
}

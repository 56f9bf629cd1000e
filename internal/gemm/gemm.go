package gemm

import (
	"fmt"
	"runtime"
	"sync"
)

// Register tile of the micro-kernel: an MR×NR block of C per call.
const (
	MR = 6
	NR = 16
)

// blocking holds the cache-block sizes. MC is a multiple of MR, NC of NR.
// KC×NR floats (a B micro-panel) stay in L1, MC×KC (an A block) in L2 and
// KC×NC (a B panel) in L3.
var blocking = struct {
	MC, KC, NC int
}{MC: 144, KC: 256, NC: 4096}

// minParallelFlops is the size of product (m·n·k) below which Sgemm stays on
// the calling goroutine: handing work to another core costs microseconds.
const minParallelFlops = 1 << 18

// Sgemm computes, row-major,
//
//	C = alpha·op(A)·op(B) + beta·C
//
// where op(A) is m×k (A is k×m when transA), op(B) is k×n (B is n×k when
// transB), and lda, ldb, ldc are row strides in elements. beta == 0 ignores
// C's previous contents (NaNs included); alpha == 0 or k == 0 does not read A
// or B. Work is spread over GOMAXPROCS; the result does not depend on it.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if prologue(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}

	j := jobPool.Get().(*job)
	j.transA, j.transB = transA, transB
	j.m, j.n, j.k = m, n, k
	j.alpha, j.beta = alpha, beta
	j.a, j.lda, j.b, j.ldb, j.c, j.ldc = a, lda, b, ldb, c, ldc
	j.kernel = kernel
	j.run(workers(m, n, k))
	j.a, j.b, j.c, j.kernel = nil, nil, nil, nil
	jobPool.Put(j)
}

// checkMatrix panics unless x holds a rows×cols row-major matrix with row
// stride ld.
func checkMatrix[T float32 | uint16](name string, x []T, rows, cols, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: ld%s = %d < max(1, %d)", name, ld, cols))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if need := (rows-1)*ld + cols; len(x) < need {
		panic(fmt.Sprintf("gemm: len(%s) = %d < %d for a %d×%d matrix with ld%s = %d", name, len(x), need, rows, cols, name, ld))
	}
}

// scale sets C = beta·C, writing zeros (not beta·NaN) when beta == 0.
func scale(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// workers is the number of goroutines a product of this size is split over.
func workers(m, n, k int) int {
	nw := runtime.GOMAXPROCS(0)
	if nw <= 1 || m*n*k < minParallelFlops {
		return 1
	}
	return min(nw, max(ceilDiv(m, MR), ceilDiv(min(n, blocking.NC), NR)))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// job is one Sgemm call: its arguments, its packing buffers and the
// partition of the work. Jobs are pooled so that buffers outlive calls.
// When a16 (b16) is set, A (B) is read from bfloat16 bits and widened as it
// is packed (Bgemm's fallback); a (b) is then nil.
type job struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	a16, b16       []uint16
	lda, ldb, ldc  int
	kernel         kernelFunc

	nw           int
	splitN       bool      // workers split the columns of a B panel, not the rows of C
	jc, nc       int       // current B panel: columns [jc, jc+nc)
	pc, kc       int       // current K block: [pc, pc+kc)
	packedB      []float32 // (ceil(nc/NR), kc, NR)
	scratch      []workerScratch
	wg           sync.WaitGroup
	phaseCompute bool
}

// workerScratch is one worker's packed A block and edge tile.
type workerScratch struct {
	packedA []float32 // (ceil(MC/MR), kc, MR)
	edge    [MR * NR]float32
}

var jobPool = sync.Pool{New: func() any { return new(job) }}

// run executes the blocked loop nest with nw workers.
func (j *job) run(nw int) {
	bs := blocking
	j.nw = nw
	j.splitN = chooseSplitN(ceilDiv(j.m, MR), ceilDiv(min(j.n, bs.NC), NR), nw)
	if len(j.scratch) < nw {
		j.scratch = append(j.scratch, make([]workerScratch, nw-len(j.scratch))...)
	}
	kcMax := min(bs.KC, j.k)
	needB := ceilDiv(min(bs.NC, j.n), NR) * NR * kcMax
	if cap(j.packedB) < needB {
		j.packedB = make([]float32, needB)
	}
	needA := ceilDiv(min(bs.MC, j.m), MR) * MR * kcMax
	for w := range nw {
		if cap(j.scratch[w].packedA) < needA {
			j.scratch[w].packedA = make([]float32, needA)
		}
	}
	for j.jc = 0; j.jc < j.n; j.jc += bs.NC {
		j.nc = min(bs.NC, j.n-j.jc)
		for j.pc = 0; j.pc < j.k; j.pc += bs.KC {
			j.kc = min(bs.KC, j.k-j.pc)
			j.phaseCompute = false
			j.parallel()
			j.phaseCompute = true
			j.parallel()
		}
	}
}

// chooseSplitN reports whether nw workers should split NR-column tiles
// rather than MR-row tiles: only when the rows balance clearly worse.
func chooseSplitN(mTiles, nTiles, nw int) bool {
	if nw == 1 {
		return false
	}
	effM := float64(mTiles) / float64(nw*ceilDiv(mTiles, nw))
	effN := float64(nTiles) / float64(nw*ceilDiv(nTiles, nw))
	return effN > 1.25*effM
}

// parallel runs the current phase on workers 1..nw-1 of the pool and on
// the calling goroutine as worker 0, and returns when all are done.
func (j *job) parallel() {
	runPhase(j, &j.wg, j.nw)
}

// runPhase runs p.phase(w) for w in 1..nw-1 on the worker pool and for w = 0
// on the calling goroutine, and returns when all are done (wg counts them).
func runPhase(p phaser, wg *sync.WaitGroup, nw int) {
	if nw == 1 {
		p.phase(0)
		return
	}
	startWorkers(nw - 1)
	wg.Add(nw - 1)
	for w := 1; w < nw; w++ {
		tasks <- task{p, wg, w}
	}
	p.phase(0)
	wg.Wait()
}

func (j *job) phase(w int) {
	if j.phaseCompute {
		j.compute(w)
	} else {
		j.packBShare(w)
	}
}

// span returns worker w's share [lo, hi) of tiles tiles of size unit,
// clipped to limit.
func span(tiles, unit, limit, w, nw int) (lo, hi int) {
	per, extra := tiles/nw, tiles%nw
	t0 := w*per + min(w, extra)
	t1 := t0 + per
	if w < extra {
		t1++
	}
	return min(t0*unit, limit), min(t1*unit, limit)
}

// packBShare packs worker w's share of the NR-wide micro-panels of the
// current B panel.
func (j *job) packBShare(w int) {
	lo, hi := span(ceilDiv(j.nc, NR), NR, j.nc, w, j.nw)
	switch {
	case lo >= hi:
	case j.b16 != nil:
		packB16(j.packedB[lo*j.kc:], j.b16, j.ldb, j.transB, j.pc, j.kc, j.jc+lo, hi-lo)
	default:
		packB(j.packedB[lo*j.kc:], j.b, j.ldb, j.transB, j.pc, j.kc, j.jc+lo, hi-lo)
	}
}

// compute multiplies worker w's share of C by the packed B panel.
func (j *job) compute(w int) {
	i0, i1 := 0, j.m
	n0, n1 := 0, j.nc
	if j.splitN {
		n0, n1 = span(ceilDiv(j.nc, NR), NR, j.nc, w, j.nw)
	} else {
		i0, i1 = span(ceilDiv(j.m, MR), MR, j.m, w, j.nw)
	}
	if i0 >= i1 || n0 >= n1 {
		return
	}
	beta := j.beta
	if j.pc > 0 {
		beta = 1
	}
	s := &j.scratch[w]
	mcMax := blocking.MC
	for ic := i0; ic < i1; ic += mcMax {
		mc := min(mcMax, i1-ic)
		if j.a16 != nil {
			packA16(s.packedA, j.a16, j.lda, j.transA, ic, mc, j.pc, j.kc)
		} else {
			packA(s.packedA, j.a, j.lda, j.transA, ic, mc, j.pc, j.kc)
		}
		j.macroKernel(s, ic, mc, n0, n1, beta)
	}
}

// macroKernel sweeps the micro-kernel over rows [ic, ic+mc) of C and columns
// [n0, n1) of the current B panel.
func (j *job) macroKernel(s *workerScratch, ic, mc, n0, n1 int, beta float32) {
	kc, ldc := j.kc, j.ldc
	loadC := beta != 0
	for jr := n0; jr < n1; jr += NR {
		nr := min(NR, n1-jr)
		pb := j.packedB[jr*kc : (jr+NR)*kc]
		col := j.jc + jr
		for ir := 0; ir < mc; ir += MR {
			mr := min(MR, mc-ir)
			pa := s.packedA[ir*kc : (ir+MR)*kc]
			off := (ic+ir)*ldc + col
			if mr == MR && nr == NR {
				j.kernel(kc, pa, pb, j.c[off:off+(MR-1)*ldc+NR], ldc, j.alpha, beta, loadC)
				continue
			}
			// Overhanging tile: run the same kernel on a scratch copy.
			e := s.edge[:]
			if loadC {
				for i := range mr {
					copy(e[i*NR:i*NR+nr], j.c[off+i*ldc:off+i*ldc+nr])
				}
			}
			j.kernel(kc, pa, pb, e, NR, j.alpha, beta, loadC)
			for i := range mr {
				copy(j.c[off+i*ldc:off+i*ldc+nr], e[i*NR:i*NR+nr])
			}
		}
	}
}

// phaser is a product whose current phase is split over workers.
type phaser interface {
	phase(w int)
}

// task is worker w's part of the current phase of a product; wg counts the
// tasks still running.
type task struct {
	p  phaser
	wg *sync.WaitGroup
	w  int
}

var (
	tasks       = make(chan task, 64)
	workersMu   sync.Mutex
	workersLive int
)

// startWorkers makes sure at least n pool goroutines are running.
func startWorkers(n int) {
	workersMu.Lock()
	for ; workersLive < n; workersLive++ {
		go func() {
			for t := range tasks {
				t.p.phase(t.w)
				t.wg.Done()
			}
		}()
	}
	workersMu.Unlock()
}

// prologue checks the arguments of a product (panicking with a named message
// on a programmer error) and performs the products that need no kernel: an
// empty C, or alpha = 0 or k = 0 (C = beta·C, A and B unread). It reports
// whether the call is done.
func prologue[T uint16 | float32](transA, transB bool, m, n, k int, alpha float32, a []T, lda int, b []T, ldb int, beta float32, c []float32, ldc int) bool {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	aRows, aCols := m, k
	if transA {
		aRows, aCols = k, m
	}
	bRows, bCols := k, n
	if transB {
		bRows, bCols = n, k
	}
	checkMatrix("a", a, aRows, aCols, lda)
	checkMatrix("b", b, bRows, bCols, ldb)
	checkMatrix("c", c, m, n, ldc)
	if m == 0 || n == 0 {
		return true
	}
	if alpha == 0 || k == 0 {
		scale(m, n, beta, c, ldc)
		return true
	}
	return false
}

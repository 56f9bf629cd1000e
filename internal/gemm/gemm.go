package gemm

import (
	"fmt"
	"sync"

	"github.com/golf-ml/golf/internal/parallel"
	"github.com/golf-ml/golf/internal/vmath"
)

// blocking holds the cache-block sizes. MC is rounded down to a multiple of
// the micro-kernel's mr, NC to a multiple of its nr. KC×nr floats (a B
// micro-panel) stay in L1, MC×KC (an A block) in L2 and KC×NC (a B panel)
// in L3. KC fixes where each element's sum is cut into K blocks, so it is
// part of the result's rounding: every micro-kernel and Bgemm share it.
var blocking = struct {
	MC, KC, NC int
}{MC: 168, KC: 256, NC: 4096}

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
	sgemm(true, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmSerial is Sgemm on the calling goroutine alone, for callers that
// are themselves one participant of a parallel loop. Its result is
// bitwise Sgemm's.
func SgemmSerial(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(false, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func sgemm(par, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmRun(par, false, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmLower is Sgemm for a square C (m = n) of which only the lower
// triangle (i ≥ j) is wanted, as for the symmetric products of
// Newton–Schulz: the register tiles that lie wholly above the diagonal are
// skipped and left as they were, the others computed exactly as Sgemm
// computes them (so the lower triangle is bitwise Sgemm's).
func SgemmLower(transA, transB bool, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmRun(true, true, transA, transB, n, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmLowerSerial is SgemmLower on the calling goroutine alone; its result
// is bitwise SgemmLower's.
func SgemmLowerSerial(transA, transB bool, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmRun(false, true, transA, transB, n, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func sgemmRun(par, lower, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if prologue(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	j := jobPool.Get().(*job)
	j.transA, j.transB = transA, transB
	j.m, j.n, j.k = m, n, k
	j.alpha, j.beta = alpha, beta
	j.a, j.lda, j.b, j.ldb, j.c, j.ldc = a, lda, b, ldb, c, ldc
	j.lower = lower
	j.run(par)
	j.a, j.b, j.c, j.lower = nil, nil, nil, false
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

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// job is one Sgemm call (or one Bgemm call widened to float32): its
// arguments, its packing buffers and the partition of the work. Jobs are
// pooled so that buffers outlive calls. When a16 (b16) is set, A (B) is
// read from bfloat16 bits (binary16 when f16in) and widened as it is
// packed; a (b) is then nil.
type job struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	a16, b16       []uint16
	f16in          bool // a16 and b16 hold binary16, not bfloat16
	lda, ldb, ldc  int
	out            out16 // 16-bit destination (Sgemm16, Bgemm16), or none
	lower          bool  // only the tiles that meet C's lower triangle (SgemmLower)

	mk      microKernel
	mc      int       // A block rows, a multiple of mk.mr
	splitN  bool      // parallel over the columns of a B panel, not the rows of C
	jc, nc  int       // current B panel: columns [jc, jc+nc)
	pc, kc  int       // current K block: [pc, pc+kc)
	packedB []float32 // (ceil(nc/nr), kc, nr)
	scratch []workerScratch
	pack    packPhase
	comp    computePhase
}

// workerScratch is one participant's packed A block and edge tile.
type workerScratch struct {
	packedA []float32 // (ceil(mc/mr), kc, mr), then 16 floats of slack
	edge    []float32 // mr×nr
	wide    []float32 // bfloat16 rows widened before a transposing pack, max(mr, nr)×kc
}

// packPhase and computePhase are the two parallel loops of each (B panel,
// K block) step, over B micro-panels and over units of C (MC-row blocks,
// or nr-column strips when splitN).
type (
	packPhase    struct{ j *job }
	computePhase struct{ j *job }
)

func (p *packPhase) Run(w, lo, hi int)    { p.j.packBRange(w, lo, hi) }
func (p *computePhase) Run(w, lo, hi int) { p.j.computeRange(w, lo, hi) }

var jobPool = sync.Pool{New: func() any {
	j := new(job)
	j.pack.j, j.comp.j = j, j
	return j
}}

// run executes the blocked loop nest, in parallel when par and the
// product is large enough.
func (j *job) run(par bool) {
	j.mk = kern
	mr, nr := j.mk.mr, j.mk.nr
	ncBlock := max(nr, blocking.NC/nr*nr)
	nw := 1
	if par && j.m*j.n*j.k >= minParallelFlops {
		nw = parallel.Workers()
	}
	mTiles, nTiles := ceilDiv(j.m, mr), ceilDiv(min(j.n, ncBlock), nr)
	j.splitN = nw > 1 && chooseSplitN(mTiles, nTiles, nw)
	// A unit of row work is an A block of MC rows, or fewer when that
	// leaves too few units for the participants to share.
	unitTiles := max(1, blocking.MC/mr)
	if nw > 1 && !j.splitN {
		unitTiles = min(unitTiles, ceilDiv(mTiles, 4*nw))
	}
	j.mc = unitTiles * mr
	mUnits := ceilDiv(j.m, j.mc)
	if len(j.scratch) < nw {
		j.scratch = append(j.scratch, make([]workerScratch, nw-len(j.scratch))...)
	}
	kcMax := min(blocking.KC, j.k)
	if need := nTiles * nr * kcMax; cap(j.packedB) < need {
		j.packedB = make([]float32, need)
	}
	needA := ceilDiv(min(j.mc, j.m), mr)*mr*kcMax + 16 // slack: see packA14Vec
	for w := range nw {
		s := &j.scratch[w]
		if cap(s.packedA) < needA {
			s.packedA = make([]float32, needA)
		}
		if cap(s.edge) < mr*nr {
			s.edge = make([]float32, mr*nr)
		}
		if need := max(mr, nr) * kcMax; j.a16 != nil && cap(s.wide) < need {
			s.wide = make([]float32, need)
		}
	}
	for j.jc = 0; j.jc < j.n; j.jc += ncBlock {
		j.nc = min(ncBlock, j.n-j.jc)
		bTiles := ceilDiv(j.nc, nr)
		for j.pc = 0; j.pc < j.k; j.pc += blocking.KC {
			j.kc = min(blocking.KC, j.k-j.pc)
			if nw == 1 {
				j.packBRange(0, 0, bTiles)
				j.computeRange(0, 0, mUnits)
				continue
			}
			parallel.For(bTiles, 1, &j.pack)
			if j.splitN {
				parallel.For(bTiles, 1, &j.comp)
			} else {
				parallel.For(mUnits, 1, &j.comp)
			}
		}
	}
}

// chooseSplitN reports whether nw workers should split nr-column tiles
// rather than mr-row tiles: only when the rows balance clearly worse.
func chooseSplitN(mTiles, nTiles, nw int) bool {
	if nw == 1 {
		return false
	}
	effM := float64(mTiles) / float64(nw*ceilDiv(mTiles, nw))
	effN := float64(nTiles) / float64(nw*ceilDiv(nTiles, nw))
	return effN > 1.25*effM
}

// packBRange packs B micro-panels [lo, hi) of the current B panel as
// participant w.
func (j *job) packBRange(w, lo, hi int) {
	nr := j.mk.nr
	c0, c1 := lo*nr, min(hi*nr, j.nc)
	if c0 >= c1 {
		return
	}
	dst := j.packedB[lo*nr*j.kc:]
	if j.b16 != nil {
		packB16(dst, nr, j.b16, j.ldb, j.transB, j.pc, j.kc, j.jc+c0, c1-c0, j.scratch[w].wide, j.f16in)
	} else {
		packB(dst, nr, j.b, j.ldb, j.transB, j.pc, j.kc, j.jc+c0, c1-c0)
	}
}

// computeRange multiplies units [lo, hi) of C by the packed B panel as
// participant w: MC-row blocks of C, or nr-column strips when splitN.
func (j *job) computeRange(w, lo, hi int) {
	beta := j.beta
	if j.pc > 0 {
		beta = 1
	}
	s := &j.scratch[w]
	if j.splitN {
		nr := j.mk.nr
		n0, n1 := lo*nr, min(hi*nr, j.nc)
		for ic := 0; ic < j.m; ic += j.mc {
			j.block(s, ic, min(j.mc, j.m-ic), n0, n1, beta)
		}
		return
	}
	for u := lo; u < hi; u++ {
		ic := u * j.mc
		j.block(s, ic, min(j.mc, j.m-ic), 0, j.nc, beta)
	}
}

// block multiplies rows [ic, ic+mc) of op(A) by columns [n0, n1) of the
// packed B panel into C: the A block is packed, then each B micro-panel
// (held in L1) meets every A micro-panel (held in L2).
func (j *job) block(s *workerScratch, ic, mc, n0, n1 int, beta float32) {
	mr, nr, kc, ldc := j.mk.mr, j.mk.nr, j.kc, j.ldc
	if j.a16 != nil {
		packA16(s.packedA, mr, j.a16, j.lda, j.transA, ic, mc, j.pc, kc, s.wide, j.f16in)
	} else {
		packABlock(s.packedA, mr, j.a, j.lda, j.transA, ic, mc, j.pc, kc)
	}
	loadC := beta != 0
	last := j.pc+kc >= j.k
	for jr := n0; jr < n1; jr += nr {
		cols := min(nr, n1-jr)
		pb := j.packedB[jr*kc : (jr+nr)*kc]
		for ir := 0; ir < mc; ir += mr {
			rows := min(mr, mc-ir)
			if j.lower && j.jc+jr > ic+ir+rows-1 {
				continue // the tile lies above the diagonal
			}
			pa := s.packedA[ir*kc:]
			off := (ic+ir)*ldc + j.jc + jr
			if rows == mr && cols == nr && j.out.direct(last, j.pc, loadC) {
				// A whole tile into float32 C (or, between the first and the
				// last K block of a 16-bit product, into its float32 panel).
				j.mk.fn(kc, pa, 1, mr, pb, j.c[off:off+(mr-1)*ldc+nr], ldc, j.alpha, beta, loadC)
				continue
			}
			if rows == mr && cols == nr && last && j.pc > 0 {
				// The last K block of a 16-bit product: the tile finishes in
				// its float32 panel, which holds the earlier blocks' sums,
				// and is rounded from there into the 16-bit C.
				t := j.c[off : off+(mr-1)*ldc+nr]
				j.mk.fn(kc, pa, 1, mr, pb, t, ldc, j.alpha, beta, loadC)
				j.out.storeTile(t, ldc, rows, cols, nil, off, ldc, true)
				continue
			}
			// Overhanging tile or 16-bit C: run the same kernel on a scratch
			// copy.
			e := s.edge[:mr*nr]
			if loadC {
				j.out.loadTile(e, nr, rows, cols, j.c, off, ldc, j.pc == 0)
			}
			j.mk.fn(kc, pa, 1, mr, pb, e, nr, j.alpha, beta, loadC)
			j.out.storeTile(e, nr, rows, cols, j.c, off, ldc, last)
		}
	}
}

// checkOperands panics with a named message unless the dimensions are
// non-negative and a and b hold op(A) (m×k) and op(B) (k×n).
func checkOperands[T uint16 | float32](transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int) {
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
}

// prologue checks the arguments of a product (panicking with a named message
// on a programmer error) and performs the products that need no kernel: an
// empty C, or alpha = 0 or k = 0 (C = beta·C, A and B unread). It reports
// whether the call is done.
func prologue[T uint16 | float32](transA, transB bool, m, n, k int, alpha float32, a []T, lda int, b []T, ldb int, beta float32, c []float32, ldc int) bool {
	checkOperands(transA, transB, m, n, k, a, lda, b, ldb)
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

// out16 is the 16-bit destination of a product: C rounded once, to
// bfloat16 or (f16) float16, after its last K block. The K blocks before
// the last add into a float32 panel (the job's c).
type out16 struct {
	c   []uint16
	f16 bool
}

// direct reports whether a whole tile of the current K block is read and
// written in the float32 C itself: always without a 16-bit destination;
// with one, except on the last K block (which rounds into it) and on a
// first K block that reads C (from the 16-bit values).
func (o *out16) direct(last bool, pc int, loadC bool) bool {
	return o.c == nil || !last && (pc > 0 || !loadC)
}

// loadTile fills the edge tile e (rows×cols of an mr×nr tile, row stride
// nr) with C at off: from the 16-bit destination on the first K block
// (first), from the float32 c otherwise.
func (o *out16) loadTile(e []float32, nr, rows, cols int, c []float32, off, ldc int, first bool) {
	for r := range rows {
		d := e[r*nr : r*nr+cols]
		switch {
		case o.c == nil || !first:
			copy(d, c[off+r*ldc:off+r*ldc+cols])
		case o.f16:
			vmath.FromF16(d, o.c[off+r*ldc:off+r*ldc+cols])
		default:
			vmath.FromBF16(d, o.c[off+r*ldc:off+r*ldc+cols])
		}
	}
}

// storeTile writes the edge tile e to C at off: rounded into the 16-bit
// destination after the last K block, else to the float32 c.
func (o *out16) storeTile(e []float32, nr, rows, cols int, c []float32, off, ldc int, last bool) {
	for r := range rows {
		src := e[r*nr : r*nr+cols]
		switch {
		case o.c == nil || !last:
			copy(c[off+r*ldc:off+r*ldc+cols], src)
		case o.f16:
			vmath.ToF16(o.c[off+r*ldc:off+r*ldc+cols], src)
		default:
			vmath.ToBF16(o.c[off+r*ldc:off+r*ldc+cols], src)
		}
	}
}

// Sgemm16 is Sgemm with a 16-bit C (bfloat16, or float16 when f16): the
// product is formed in float32 exactly as Sgemm forms it (C's old values
// widened when beta ≠ 0) and rounded once, to nearest even, into c. When
// k > the K block (256), the partial sums of the earlier blocks go to
// panel (float32, at least (m-1)·ldc+n elements; may be nil otherwise).
// Rounding tile by tile as the last K block finishes saves the pass over
// memory that a float32 C and a separate conversion would cost.
func Sgemm16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []uint16, ldc int, f16 bool, panel []float32) {
	if prologue16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, f16, panel) {
		return
	}
	j := jobPool.Get().(*job)
	j.transA, j.transB = transA, transB
	j.m, j.n, j.k = m, n, k
	j.alpha, j.beta = alpha, beta
	j.a, j.lda, j.b, j.ldb, j.c, j.ldc = a, lda, b, ldb, panel, ldc
	j.out = out16{c: c, f16: f16}
	j.run(true)
	j.a, j.b, j.c, j.out = nil, nil, nil, out16{}
	jobPool.Put(j)
}

// prologue16 checks the arguments of a product with a 16-bit C and does
// the ones that need no kernel (see prologue); it reports whether the call
// is done.
func prologue16[T uint16 | float32](transA, transB bool, m, n, k int, alpha float32, a []T, lda int, b []T, ldb int, beta float32, c []uint16, ldc int, f16 bool, panel []float32) bool {
	checkOperands(transA, transB, m, n, k, a, lda, b, ldb)
	checkMatrix("c", c, m, n, ldc)
	if k > blocking.KC {
		checkMatrix("panel", panel, m, n, ldc)
	}
	if m == 0 || n == 0 {
		return true
	}
	if alpha != 0 && k != 0 {
		return false
	}
	// C = beta·C, rounded once; zeros (not beta·NaN) when beta == 0.
	o := out16{c: c, f16: f16}
	var row [64]float32
	for i := range m {
		for j0 := 0; j0 < n; j0 += len(row) {
			w := min(len(row), n-j0)
			o.loadTile(row[:w], w, 1, w, nil, i*ldc+j0, ldc, true)
			for x := range row[:w] {
				if beta == 0 {
					row[x] = 0
				} else {
					row[x] *= beta
				}
			}
			o.storeTile(row[:w], w, 1, w, nil, i*ldc+j0, ldc, true)
		}
	}
	return true
}

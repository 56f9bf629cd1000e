package gemm

import (
	"sync"

	"github.com/golf-ml/golf/internal/parallel"
)

// bblocking holds the M and N cache blocks of Bgemm: MC is a multiple of
// BMR, NC of BNR. K is cut at Sgemm's blocking.KC, so that both sum each
// element in the same order; an even KC keeps the blocks on pairs. A B
// micro-panel (KC/2 pairs × BNR words) stays in L1, an A block in L2.
var bblocking = struct {
	MC, NC int
}{MC: 8 * BMR, NC: 4096}

// Bgemm computes, row-major,
//
//	C = alpha·op(A)·op(B) + beta·C
//
// with A and B in bfloat16 (their bit patterns) and C in float32, with the
// arguments of Sgemm: op(A) is m×k (A is k×m when transA), op(B) is k×n
// (B is n×k when transB), lda, ldb, ldc are row strides in elements, beta
// == 0 ignores C's previous contents (NaNs included), alpha == 0 or k == 0
// does not read A or B, and the result does not depend on GOMAXPROCS.
//
// On CPUs with AVX512-BF16 the products run on VDPBF16PS: K is taken in
// pairs, each bf16·bf16 product is exact in float32, and the two products
// are added to a float32 accumulator one after the other, each sum rounded
// to nearest even. That is the order and rounding of Sgemm's fused
// multiply-adds, so the result is bitwise Sgemm's on the operands widened
// to float32, except that the instruction reads bfloat16 subnormals
// (|x| < 2⁻¹²⁶) as zero and flushes subnormal partial sums to zero. Elsewhere
// the operands are widened to float32 as they are packed and multiplied by
// Sgemm's kernel, without flushing.
func Bgemm(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	bgemm(true, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// BgemmSerial is Bgemm on the calling goroutine alone, for callers that
// are themselves one participant of a parallel loop. Its result is
// bitwise Bgemm's.
func BgemmSerial(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	bgemm(false, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func bgemm(par, transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	if prologue(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	bgemmRun(par, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, out16{})
}

// Bgemm16 is Bgemm with a 16-bit C, rounded once as Sgemm16 describes;
// panel holds the float32 partial sums when k > 256.
func Bgemm16(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []uint16, ldc int, f16 bool, panel []float32) {
	if prologue16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, f16, panel) {
		return
	}
	bgemmRun(true, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, panel, ldc, out16{c: c, f16: f16})
}

// bgemmRun runs a checked, non-degenerate bfloat16 product on the
// bfloat16 kernel, or widened onto Sgemm's.
func bgemmRun(par, transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, out out16) {
	if amxRun(par, false, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, out) {
		return
	}
	if bkernel == nil {
		widenedRun(par, false, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, out)
		return
	}
	j := bjobPool.Get().(*bjob)
	j.transA, j.transB = transA, transB
	j.m, j.n, j.k = m, n, k
	j.alpha, j.beta = alpha, beta
	j.a, j.lda, j.b, j.ldb, j.c, j.ldc = a, lda, b, ldb, c, ldc
	j.out = out
	j.kernel = bkernel
	j.run(par)
	j.a, j.b, j.c, j.kernel, j.out = nil, nil, nil, nil, out16{}
	bjobPool.Put(j)
}

// widenedRun runs a checked, non-degenerate product of 16-bit operands
// (bfloat16, or binary16 when f16in) on Sgemm's kernel, widening them to
// float32 as they are packed.
func widenedRun(par, f16in, transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, out out16) {
	j := jobPool.Get().(*job)
	j.transA, j.transB = transA, transB
	j.m, j.n, j.k = m, n, k
	j.alpha, j.beta = alpha, beta
	j.a16, j.lda, j.b16, j.ldb, j.c, j.ldc = a, lda, b, ldb, c, ldc
	j.f16in, j.out = f16in, out
	j.run(par)
	j.a16, j.b16, j.c, j.f16in, j.out = nil, nil, nil, false, out16{}
	jobPool.Put(j)
}

// HgemmWide is Sgemm on binary16 operands (their bit patterns), widened
// to float32 as they are packed, without float32 copies of A and B: the
// result is bitwise Sgemm's on the widened operands, on any CPU. (Hgemm
// runs binary16 products on AMX tiles where there are some.)
func HgemmWide(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	if prologue(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	widenedRun(true, true, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, out16{})
}

// HgemmWide16 is HgemmWide with a 16-bit C, rounded once as Sgemm16
// describes (bitwise Sgemm16's on the widened operands); panel holds the
// float32 partial sums when k > 256.
func HgemmWide16(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []uint16, ldc int, f16 bool, panel []float32) {
	if prologue16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, f16, panel) {
		return
	}
	widenedRun(true, true, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, panel, ldc, out16{c: c, f16: f16})
}

// bjob is one Bgemm call on the bfloat16 micro-kernel: the loop nest of
// job (see the package doc) with K packed in pairs.
type bjob struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b           []uint16
	c              []float32
	lda, ldb, ldc  int
	out            out16 // 16-bit destination (Bgemm16), or none
	kernel         bkernelFunc

	mc      int      // A block rows, a multiple of BMR
	splitN  bool     // parallel over the columns of a B panel, not the rows of C
	jc, nc  int      // current B panel: columns [jc, jc+nc)
	pc, kc  int      // current K block: [pc, pc+kc), kq = ⌈kc/2⌉ pairs
	packedB []uint32 // (ceil(nc/BNR), kq, BNR)
	scratch []bworkerScratch
	pack    bpackPhase
	comp    bcomputePhase
}

type (
	bpackPhase    struct{ j *bjob }
	bcomputePhase struct{ j *bjob }
)

func (p *bpackPhase) Run(w, lo, hi int)    { p.j.packBRange(lo, hi) }
func (p *bcomputePhase) Run(w, lo, hi int) { p.j.computeRange(w, lo, hi) }

// bworkerScratch is one worker's packed A block and edge tile.
type bworkerScratch struct {
	packedA []uint32 // (mcPad, kq), or (kq, mcPad) when transA: see aPanel
	edge    [BMR * BNR]float32
}

var bjobPool = sync.Pool{New: func() any {
	j := new(bjob)
	j.pack.j, j.comp.j = j, j
	return j
}}

// run executes the blocked loop nest, in parallel when par and the
// product is large enough.
func (j *bjob) run(par bool) {
	bs, kcBlock := bblocking, blocking.KC
	nw := 1
	if par && j.m*j.n*j.k >= 2*minParallelFlops {
		nw = parallel.Workers()
	}
	mTiles, nTiles := ceilDiv(j.m, BMR), ceilDiv(min(j.n, bs.NC), BNR)
	j.splitN = nw > 1 && chooseSplitN(mTiles, nTiles, nw)
	unitTiles := max(1, bs.MC/BMR)
	if nw > 1 && !j.splitN {
		unitTiles = min(unitTiles, ceilDiv(mTiles, 4*nw))
	}
	j.mc = unitTiles * BMR
	mUnits := ceilDiv(j.m, j.mc)
	if len(j.scratch) < nw {
		j.scratch = append(j.scratch, make([]bworkerScratch, nw-len(j.scratch))...)
	}
	kqMax := (min(kcBlock, j.k) + 1) / 2
	needB := nTiles * BNR * kqMax
	if cap(j.packedB) < needB {
		j.packedB = make([]uint32, needB)
	}
	needA := ceilDiv(min(j.mc, j.m), BMR) * BMR * kqMax
	for w := range nw {
		if cap(j.scratch[w].packedA) < needA {
			j.scratch[w].packedA = make([]uint32, needA)
		}
	}
	for j.jc = 0; j.jc < j.n; j.jc += bs.NC {
		j.nc = min(bs.NC, j.n-j.jc)
		bTiles := ceilDiv(j.nc, BNR)
		for j.pc = 0; j.pc < j.k; j.pc += kcBlock {
			j.kc = min(kcBlock, j.k-j.pc)
			if nw == 1 {
				j.packBRange(0, bTiles)
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

// packBRange packs B micro-panels [lo, hi) of the current B panel.
func (j *bjob) packBRange(lo, hi int) {
	c0, c1 := lo*BNR, min(hi*BNR, j.nc)
	if c0 < c1 {
		kq := (j.kc + 1) / 2
		packBPairs(j.packedB[lo*kq*BNR:], j.b, j.ldb, j.transB, j.pc, j.kc, j.jc+c0, c1-c0)
	}
}

// computeRange multiplies units [lo, hi) of C by the packed B panel as
// participant w: A blocks of mc rows, or BNR-column strips when splitN.
func (j *bjob) computeRange(w, lo, hi int) {
	beta := j.beta
	if j.pc > 0 {
		beta = 1
	}
	s := &j.scratch[w]
	if j.splitN {
		n0, n1 := lo*BNR, min(hi*BNR, j.nc)
		for ic := 0; ic < j.m; ic += j.mc {
			mc := min(j.mc, j.m-ic)
			packAPairs(s.packedA, j.a, j.lda, j.transA, ic, mc, j.pc, j.kc)
			j.macroKernel(s, ic, mc, n0, n1, beta)
		}
		return
	}
	for u := lo; u < hi; u++ {
		ic := u * j.mc
		mc := min(j.mc, j.m-ic)
		packAPairs(s.packedA, j.a, j.lda, j.transA, ic, mc, j.pc, j.kc)
		j.macroKernel(s, ic, mc, 0, j.nc, beta)
	}
}

// macroKernel sweeps the micro-kernel over rows [ic, ic+mc) of C and columns
// [n0, n1) of the current B panel.
func (j *bjob) macroKernel(s *bworkerScratch, ic, mc, n0, n1 int, beta float32) {
	kq, ldc := (j.kc+1)/2, j.ldc
	mcPad := ceilDiv(mc, BMR) * BMR
	loadC := beta != 0
	last := j.pc+j.kc >= j.k
	for jr := n0; jr < n1; jr += BNR {
		nr := min(BNR, n1-jr)
		pb := j.packedB[jr*kq : (jr+BNR)*kq]
		col := j.jc + jr
		for ir := 0; ir < mc; ir += BMR {
			mr := min(BMR, mc-ir)
			aOff, rs, qs := aPanel(j.transA, ir, kq, mcPad)
			pa := s.packedA[aOff:]
			off := (ic+ir)*ldc + col
			if mr == BMR && nr == BNR && j.out.direct(last, j.pc, loadC) {
				j.kernel(kq, pa, pb, j.c[off:off+(BMR-1)*ldc+BNR], ldc, rs, qs, j.alpha, beta, loadC)
				continue
			}
			// Overhanging tile or 16-bit C: run the same kernel on a scratch
			// copy.
			e := s.edge[:]
			if loadC {
				j.out.loadTile(e, BNR, mr, nr, j.c, off, ldc, j.pc == 0)
			}
			j.kernel(kq, pa, pb, e, BNR, rs, qs, j.alpha, beta, loadC)
			j.out.storeTile(e, BNR, mr, nr, j.c, off, ldc, last)
		}
	}
}

// Hgemm computes, as Bgemm does, C = A·op(B) + beta·C (alpha 1, beta 0 or
// 1) for binary16 A and B, on AMX tiles: each element of A and B split
// exactly into two bfloat16 terms, each product of binary16 the sum of
// four exact products of terms, summed in float32 in the tiles' order
// (see Hgemm16 for the result's accuracy). It reports false, doing
// nothing, where AMX is off or beta is neither 0 nor 1: the caller widens
// to float32 then.
func Hgemm(transA, transB bool, m, n, k int, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) bool {
	if !AMX() || beta != 0 && beta != 1 {
		return false
	}
	if prologue(transA, transB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc) {
		return true
	}
	return amxRun(true, true, transA, transB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc, out16{})
}

// Hgemm16 is Hgemm with a 16-bit C rounded once, as Sgemm16 describes
// (panel holds the float32 partial sums when k > 256). Each element is the
// rounding of a float32 sum of the exact products, in another order than
// Sgemm16's: within float32's error of Sgemm16's sum, not bitwise.
func Hgemm16(transA, transB bool, m, n, k int, a []uint16, lda int, b []uint16, ldb int, beta float32, c []uint16, ldc int, f16 bool, panel []float32) bool {
	if !AMX() || beta != 0 && beta != 1 {
		return false
	}
	if prologue16(transA, transB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc, f16, panel) {
		return true
	}
	return amxRun(true, true, transA, transB, m, n, k, 1, a, lda, b, ldb, beta, panel, ldc, out16{c: c, f16: f16})
}

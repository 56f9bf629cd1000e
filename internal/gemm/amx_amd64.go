package gemm

import (
	"math"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/golf-ml/golf/internal/parallel"
)

// AMX: Bgemm on the tile matrix multiply unit (TDPBF16PS) of Intel's Xeons
// since Sapphire Rapids. One TDPBF16PS multiplies a 16×32 block of A by a
// 32×16 block of B (bfloat16, K in pairs) into a 16×16 block of float32
// sums: 8,192 multiply-adds in about 16 cycles (a tile of fewer rows takes
// as long). The kernel (amxMacro) holds a 32×32 block of C in four tiles
// and streams A and B through the other four.
//
// The products of a pair are exact, but how the unit adds them to the sum
// is not documented: measured on a Sapphire Rapids core, its results match
// neither fused multiply-adds in order nor one rounding per pair. So on AMX
// Bgemm is not bitwise Sgemm's; each element is within the float32 error
// bound of its sum (TestAMX*), the same on every run, at any GOMAXPROCS and
// whatever the blocking around it, because every element of C sees the same
// instruction sequence in the same order of K.

// AMX blocking: amxMR×amxNR blocks of C per kernel step, K blocks of
// amxKC (a B micro-panel, amxKC/2 pairs × 32 words = 32 KiB, stays in L1;
// an A block of amxMC rows, in L2), B panels of amxNC columns.
const (
	amxMR = 2 * amxTileRows // two 16-row tiles
	amxNR = BNR             // two 16-column tiles
	amxKC = 512
	amxMC = 4 * amxMR
	amxNC = 4096
	// amxChunk is the K pairs of one tile step (64 bytes of a tile row).
	amxChunk = 16
	// amxTileRows is the rows of every tile: as many as a tile holds.
	amxTileRows = 16
)

// amxOK reports whether this CPU has AMX with bfloat16 (and the AVX-512
// the packing and SplitPairs3 use: BW, VL, BF16), the kernel let this
// process use it (see amxPermit), and GOLF_NO_AMX is unset or empty.
var amxOK = cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW &&
	cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BF16 && os.Getenv("GOLF_NO_AMX") == "" && amxPermit()

// useAMX switches Bgemm onto AMX where amxOK. Tests switch it.
var useAMX = amxOK

// AMX reports whether Bgemm and Bgemm16 multiply on AMX tiles on this
// machine (see the package comment); GOLF_NO_AMX=1 in the environment
// turns it off.
func AMX() bool { return useAMX }

// amxArgs is the argument block of amxMacro; the offsets are fixed in
// amx_amd64.s (TestAMXArgsLayout).
type amxArgs struct {
	cfg      [64]byte // tile configuration (LDTILECFG)
	a        *uint32  // A: row 0 of panel 0; rows of K pairs
	aRow     int      // bytes between rows of A
	aPanel   int      // bytes between 32-row panels of A
	b        *uint32  // B: micro-panel 0, rows of 32 pair words
	bPanel   int      // bytes between micro-panels of B
	kChunks  int      // chunks of amxChunk pairs
	mt, nt   int      // blocks of C: panels of A × micro-panels of B
	ld       unsafe.Pointer
	ldStride int // bytes
	ldMode   int // 0: zero, 1: float32, 2: bfloat16, 3: binary16
	st       unsafe.Pointer
	stStride int // bytes
	stMode   int // 1: float32, 2: bfloat16, 3: float32 times alpha, 4: binary16
	scratch  *float32
	alpha    float32
	kRep     int // chunks after which B starts over (0: never)
	aStream  int // nonzero: load A with TILELOADDT1 (see block)
}

// amxMacro is documented in amx_amd64.s.
//
//go:noescape
func amxMacro(p *amxArgs)

// amxConfig fills the tile configuration: palette 1; every tile (C:
// tmm0..3, A: tmm4, tmm5, B: tmm6, tmm7) 16 rows of 64 bytes.
func amxConfig(cfg *[64]byte) {
	*cfg = [64]byte{}
	cfg[0] = 1
	for t := range 8 {
		cfg[16+2*t] = 64 // bytes per row, little-endian uint16
		cfg[48+t] = amxTileRows
	}
}

// amxScratch is one worker's packed A block, edge tile and rounding
// scratch.
type amxScratch struct {
	packedA []uint32
	tmp     []uint32 // transA: the block pair-major before transposing
	edge    [amxMR * amxNR]float32
	round   [amxMR * amxNR]float32
	args    amxArgs
}

// ajob is one Bgemm or Hgemm call on AMX: bjob's loop nest with
// amxMR×amxNR blocks and K blocks of kcMax, alpha = 1 and beta ∈ {0, 1}.
type ajob struct {
	transA, transB bool
	f16in          bool // A and B binary16, each element two bfloat16 terms (Hgemm)
	m, n, k        int
	beta           float32
	a, b           []uint16
	c              []float32
	lda, ldb, ldc  int
	out            out16

	mc      int
	splitN  bool
	jc, nc  int
	pc, kc  int
	kqPad   int      // K pairs of the block, rounded up to amxChunk
	packedB []uint32 // (⌈nc/32⌉, kqPad, 32)
	scratch []amxScratch
	pack    apackPhase
	comp    acomputePhase
}

type (
	apackPhase    struct{ j *ajob }
	acomputePhase struct{ j *ajob }
)

func (p *apackPhase) Run(w, lo, hi int)    { p.j.packBRange(w, lo, hi) }
func (p *acomputePhase) Run(w, lo, hi int) { p.j.computeRange(w, lo, hi) }

var ajobPool = sync.Pool{New: func() any {
	j := new(ajob)
	j.pack.j, j.comp.j = j, j
	return j
}}

// amxRun runs a checked, non-degenerate Bgemm on AMX (or, with f16in, a
// product of binary16 operands: Hgemm) and reports true, or reports false
// where it does not apply: no AMX, alpha ≠ 1 or beta ∉ {0, 1}.
func amxRun(par, f16in, transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, out out16) bool {
	if !useAMX || alpha != 1 || beta != 0 && beta != 1 || !f16in && transB && ldb > maxGatherStride {
		return false
	}
	j := ajobPool.Get().(*ajob)
	j.f16in, j.transA, j.transB = f16in, transA, transB
	j.m, j.n, j.k = m, n, k
	j.beta = beta
	j.a, j.lda, j.b, j.ldb, j.c, j.ldc = a, lda, b, ldb, c, ldc
	j.out = out
	j.run(par)
	j.a, j.b, j.c, j.out = nil, nil, nil, out16{}
	for w := range j.scratch {
		p := &j.scratch[w].args
		p.a, p.b, p.ld, p.st = nil, nil, nil, nil
	}
	ajobPool.Put(j)
	return true
}

func (j *ajob) run(par bool) {
	nw := 1
	if par && j.m*j.n*j.k >= 8*minParallelFlops {
		nw = parallel.Workers()
	}
	mTiles, nTiles := ceilDiv(j.m, amxMR), ceilDiv(min(j.n, amxNC), amxNR)
	j.splitN = nw > 1 && chooseSplitN(mTiles, nTiles, nw)
	unitTiles := amxMC / amxMR
	if nw > 1 && !j.splitN {
		unitTiles = max(1, min(unitTiles, ceilDiv(mTiles, 4*nw)))
	}
	j.mc = unitTiles * amxMR
	mUnits := ceilDiv(j.m, j.mc)
	if len(j.scratch) < nw {
		j.scratch = append(j.scratch, make([]amxScratch, nw-len(j.scratch))...)
	}
	kqMax := roundUp(j.slots(min(j.kcMax(), j.k)), amxChunk)
	if need := nTiles * amxNR * kqMax; cap(j.packedB) < need {
		j.packedB = make([]uint32, need)
	}
	mPad := ceilDiv(min(j.mc, j.m), amxMR) * amxMR
	for w := range nw {
		s := &j.scratch[w]
		if cap(s.packedA) < mPad*kqMax {
			s.packedA = make([]uint32, mPad*kqMax)
		}
		if (j.transA || j.f16in && j.transB) && cap(s.tmp) < max(mPad, amxNR)*kqMax {
			s.tmp = make([]uint32, max(mPad, amxNR)*kqMax)
		}
		amxConfig(&s.args.cfg)
	}
	for j.jc = 0; j.jc < j.n; j.jc += amxNC {
		j.nc = min(amxNC, j.n-j.jc)
		bTiles := ceilDiv(j.nc, amxNR)
		for j.pc = 0; j.pc < j.k; j.pc += j.kcMax() {
			j.kc = min(j.kcMax(), j.k-j.pc)
			j.kqPad = roundUp(j.slots(j.kc), amxChunk)
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

// packBRange packs B micro-panels [lo, hi) of the current B panel as
// participant w: as packBPairs does (or packBPanel16 for binary16 B),
// each micro-panel kqPad rows of 32 words, the rows past the block's K
// pairs and the columns past the panel's zero.
func (j *ajob) packBRange(w, lo, hi int) {
	used, kqp := j.slots(j.kc), j.kqPad
	for t := lo; t < hi; t++ {
		jr := t * amxNR
		nr := min(amxNR, j.nc-jr)
		if nr <= 0 {
			return
		}
		d := j.packedB[t*kqp*amxNR : (t+1)*kqp*amxNR]
		if nr < amxNR {
			clear(d[:used*amxNR])
		}
		if j.f16in {
			j.packBPanel16(&j.scratch[w], d, j.jc+jr, nr)
		} else {
			j.packBPanel(d, j.jc+jr, nr)
		}
		clear(d[used*amxNR:])
	}
}

// packBPanel packs the bfloat16 columns [col, col+nr) of op(B)'s current
// K block into the micro-panel d, pairs of K in rows of 32 words (an odd
// last K paired with zero).
func (j *ajob) packBPanel(d []uint32, col, nr int) {
	kq, even := (j.kc+1)/2, j.kc&^1
	if !j.transB {
		interleaveRows(d, amxNR, j.b[j.pc*j.ldb+col:], j.ldb, j.kc, nr)
		return
	}
	gatherPairsVec(d, j.b[col*j.ldb+j.pc:], j.ldb, even/2, nr)
	if j.kc > even {
		for x := range nr {
			d[(kq-1)*amxNR+x] = pair(j.b[(col+x)*j.ldb+j.pc+even], 0)
		}
	}
}

// packA packs op(A)[i0:i0+mc, pc:pc+kc] into s.packedA row by row, kqPad
// pairs a row (those past the block's zero), ⌈mc/amxMR⌉·amxMR rows (those
// past mc zero): the pair (i, q) holds op(A)[i][pc+2q] first, as pair does.
func (j *ajob) packA(s *amxScratch, i0, mc int) {
	if j.f16in {
		j.packA16(s, i0, mc)
		return
	}
	kq, even, kqp := (j.kc+1)/2, j.kc&^1, j.kqPad
	mPad := ceilDiv(mc, amxMR) * amxMR
	dst := s.packedA[:mPad*kqp]
	if !j.transA {
		rotPairsVec(dst, kqp, j.a[i0*j.lda+j.pc:], j.lda, mc, even/2)
		if j.kc > even {
			for i := range mc {
				dst[i*kqp+kq-1] = pair(j.a[(i0+i)*j.lda+j.pc+even], 0)
			}
		}
	} else {
		// Interleave pairs of rows of A (K runs down A), then transpose.
		tmp := s.tmp[:kq*mc]
		interleaveRows(tmp, mc, j.a[j.pc*j.lda+i0:], j.lda, j.kc, mc)
		TransposeWords(dst, kqp, tmp, mc, kq, mc)
	}
	if kq < kqp {
		for i := range mc {
			clear(dst[i*kqp+kq : (i+1)*kqp])
		}
	}
	clear(dst[mc*kqp:])
}

// computeRange multiplies units [lo, hi) of C by the packed B panel as
// participant w: A blocks of mc rows, or amxNR-column strips when splitN.
func (j *ajob) computeRange(w, lo, hi int) {
	s := &j.scratch[w]
	if j.splitN {
		n0, n1 := lo*amxNR, min(hi*amxNR, j.nc)
		for ic := 0; ic < j.m; ic += j.mc {
			mc := min(j.mc, j.m-ic)
			j.packA(s, ic, mc)
			j.block(s, ic, mc, n0, n1)
		}
		return
	}
	for u := lo; u < hi; u++ {
		ic := u * j.mc
		mc := min(j.mc, j.m-ic)
		j.packA(s, ic, mc)
		j.block(s, ic, mc, 0, j.nc)
	}
}

// block multiplies rows [ic, ic+mc) of C, columns [n0, n1) of the B panel
// (n0 a multiple of amxNR) for the current K block: the whole 32×32 blocks
// in one amxMacro call, the blocks over the edges of C one at a time
// through s.edge.
func (j *ajob) block(s *amxScratch, ic, mc, n0, n1 int) {
	kqp := j.kqPad
	last := j.pc+j.kc >= j.k
	first := j.pc == 0
	loadC := !first || j.beta != 0
	p := &s.args
	p.a = unsafe.SliceData(s.packedA)
	p.aRow = 4 * kqp
	p.aPanel = 4 * kqp * amxMR
	p.bPanel = 4 * kqp * amxNR
	p.kChunks = kqp / amxChunk
	p.scratch = &s.round[0]
	mt, nt := mc/amxMR, (n1-n0)/amxNR
	col := j.jc + n0
	if mt > 0 && nt > 0 {
		p.b = &j.packedB[n0*kqp]
		p.mt, p.nt = mt, nt
		p.aStream = streamA(mt)
		off := ic*j.ldc + col
		p.ldMode = 0
		switch {
		case loadC && first && j.out.c != nil:
			p.ldMode, p.ld, p.ldStride = j.out.amxLoad(), unsafe.Pointer(&j.out.c[off]), 2*j.ldc
		case loadC:
			p.ldMode, p.ld, p.ldStride = 1, unsafe.Pointer(&j.c[off]), 4*j.ldc
		}
		p.stMode, p.st, p.stStride = 1, nil, 4*j.ldc
		if last && j.out.c != nil {
			p.stMode, p.st, p.stStride = j.out.amxStore(), unsafe.Pointer(&j.out.c[off]), 2*j.ldc
		} else {
			p.st = unsafe.Pointer(&j.c[off])
		}
		// The last element each pointer reaches must be in bounds.
		lastOff := off + (mt*amxMR-1)*j.ldc + nt*amxNR - 1
		if j.out.c != nil {
			_ = j.out.c[lastOff]
		}
		if j.c != nil && (p.ldMode == 1 || p.stMode == 1) {
			_ = j.c[lastOff]
		}
		amxMacro(p)
	}
	// Edges: the rows past mt panels, then the columns past nt micro-panels.
	for ir := 0; ir < mc; ir += amxMR {
		for jr := n0; jr < n1; jr += amxNR {
			if ir < mt*amxMR && jr < n0+nt*amxNR {
				continue
			}
			j.edgeBlock(s, ic, ir, jr, min(amxMR, mc-ir), min(amxNR, n1-jr), loadC, last)
		}
	}
}

// edgeBlock runs one block of C, rows×cols at (ic+ir, jc+jr), through the
// edge tile.
func (j *ajob) edgeBlock(s *amxScratch, ic, ir, jr, rows, cols int, loadC, last bool) {
	kqp := j.kqPad
	e := s.edge[:]
	off := (ic+ir)*j.ldc + j.jc + jr
	p := &s.args
	p.a = &s.packedA[ir*kqp]
	p.b = &j.packedB[jr*kqp]
	p.mt, p.nt, p.aStream = 1, 1, 0
	p.ldMode = 0
	if loadC {
		j.out.loadTile(e, amxNR, rows, cols, j.c, off, j.ldc, j.pc == 0)
		p.ldMode, p.ld, p.ldStride = 1, unsafe.Pointer(&e[0]), 4*amxNR
	}
	p.stMode, p.st, p.stStride = 1, unsafe.Pointer(&e[0]), 4*amxNR
	amxMacro(p)
	j.out.storeTile(e, amxNR, rows, cols, j.c, off, j.ldc, last)
}

// streamA is amxArgs.aStream for a kernel call over mt panels of A. The
// kernel runs every panel against one micro-panel of B before it moves to
// the next, so B is reused from L1 and, with more than one panel, each
// panel streams through once per micro-panel: loaded as a stream
// (TILELOADDT1), it leaves B in L1 (measured on the kernel alone, A and B
// in L2: up to 15% fewer cycles a tile step than with both loaded alike).
func streamA(mt int) int {
	if mt > 1 {
		return 1
	}
	return 0
}

// roundUp rounds x up to a multiple of m.
func roundUp(x, m int) int { return ceilDiv(x, m) * m }

// SetAMX turns Bgemm's use of AMX on or off (on only where the CPU has it
// and the kernel permits it) and returns the previous setting, for tests
// and benchmarks that compare the paths. It must not race with a product.
func SetAMX(on bool) (prev bool) {
	prev, useAMX = useAMX, on && amxOK
	return prev
}

// amxPeak is documented in amx_amd64.s.
//
//go:noescape
func amxPeak(p *amxArgs, n int)

// AMXPeakLoop runs n steps of the AMX kernel's four TDPBF16PS (16×16 tiles
// of C, 16 K pairs) on tiles held in registers and returns the FLOPs done
// (two per multiply-add), or 0 without AMX: the unit's peak on the
// kernel's tile shapes, for the roofline.
func AMXPeakLoop(n int) float64 {
	if !useAMX || n <= 0 {
		return 0
	}
	var p amxArgs
	amxConfig(&p.cfg)
	ones := make([]uint32, amxChunk*amxNR)
	for i := range ones {
		ones[i] = 0x3f803f80 // a pair of bfloat16 ones
	}
	p.a, p.aRow, p.b = &ones[0], 4*amxChunk, &ones[0]
	amxPeak(&p, n)
	return float64(n) * 4 * amxTileRows * 16 * 2 * amxChunk * 2
}

// Tile products on pair-packed operands, for callers that pack their
// operands once and multiply small blocks of them many times (the CPU
// backend's attention). A pair word holds the bfloat16 of two consecutive
// k, the first in the high half.
const (
	AMXRows  = amxMR        // rows of C per block
	AMXCols  = amxNR        // columns of C per block (one B panel)
	AMXPairs = amxChunk     // K pairs per tile step
	AMXK     = 2 * amxChunk // K per tile step
)

// PairRows packs rows of bfloat16 as A operands of MulPairs:
// dst[r*ldd+q] = pair(src[r*lds+2q], src[r*lds+2q+1]) for r < rows,
// q < ⌈k/2⌉ (an odd k pairs its last element with zero), and zero for
// ⌈k/2⌉ ≤ q < ldd.
func PairRows(dst []uint32, ldd int, src []uint16, lds, rows, k int) {
	kq, even := (k+1)/2, k&^1
	if kq > ldd {
		panic("gemm: PairRows: ⌈k/2⌉ > ldd")
	}
	if rows == 0 {
		return
	}
	_ = dst[(rows-1)*ldd+ldd-1]
	if packVec {
		rotPairsVec(dst, ldd, src, lds, rows, even/2)
	} else {
		for r := range rows {
			row := src[r*lds : r*lds+even]
			for q := range even / 2 {
				dst[r*ldd+q] = pair(row[2*q], row[2*q+1])
			}
		}
	}
	for r := range rows {
		if k > even {
			dst[r*ldd+kq-1] = pair(src[r*lds+even], 0)
		}
		clear(dst[r*ldd+kq : (r+1)*ldd])
	}
}

// PairPanels packs op(B) (k×n bfloat16; B[p*ldb+j], or B[j*ldb+p] when
// trans) as B operands of MulPairs: AMXCols-column panels ldp words apart,
// panel t's pair row q at dst[t*ldp+q*AMXCols:], the word of column j
// pair(op(B)[2q][t·32+j], op(B)[2q+1][t·32+j]); an odd k pairs its last row
// with zero, columns past n are zero, and so are the rows from ⌈k/2⌉ up
// to ldp/AMXCols.
func PairPanels(dst []uint32, ldp int, b []uint16, ldb int, trans bool, k, n int) {
	kq, even := (k+1)/2, k&^1
	if ldp%amxNR != 0 || kq*amxNR > ldp {
		panic("gemm: PairPanels: ldp not a multiple of AMXCols or below ⌈k/2⌉ rows")
	}
	for t := 0; t*amxNR < n; t++ {
		jr := t * amxNR
		nr := min(amxNR, n-jr)
		d := dst[t*ldp : (t+1)*ldp]
		if nr < amxNR {
			clear(d[:kq*amxNR])
		}
		switch {
		case even == 0:
		case !trans && packVec:
			interleavePairsVec(d, amxNR, b[jr:], ldb, even/2, nr)
		case trans && packVec && ldb <= maxGatherStride:
			gatherPairsVec(d, b[jr*ldb:], ldb, even/2, nr)
		default:
			for q := range even / 2 {
				for j := range nr {
					if trans {
						d[q*amxNR+j] = pair(b[(jr+j)*ldb+2*q], b[(jr+j)*ldb+2*q+1])
					} else {
						d[q*amxNR+j] = pair(b[2*q*ldb+jr+j], b[(2*q+1)*ldb+jr+j])
					}
				}
			}
		}
		if k > even {
			for j := range nr {
				i := even*ldb + jr + j
				if trans {
					i = (jr+j)*ldb + even
				}
				d[(kq-1)*amxNR+j] = pair(b[i], 0)
			}
		}
		clear(d[kq*amxNR:])
	}
}

// MulPairs computes, on AMX tiles,
//
//	C = alpha·A·B         (!acc)
//	C = A·B + C           (acc; alpha must be 1)
//
// for C m×n float32 (row stride ldc), A m×2kq in pair rows (PairRows, row
// stride lda words) and B in panels (PairPanels, ldp words apart), K taken
// in the order of its pairs, AMXPairs at a time. m must be a multiple of
// AMXRows, n of AMXCols and kq of AMXPairs. The caller runs it on one
// goroutine; it panics where AMX is off (see AMX).
func MulPairs(m, n, kq int, a []uint32, lda int, b []uint32, ldp int, c []float32, ldc int, alpha float32, acc bool) {
	mulPairs(m, n, kq, 1, a, lda, b, ldp, c, ldc, alpha, acc)
}

// MulPairsRepeat is MulPairs with A's rows reps·kq pairs long against the
// same B (kq pair rows) reps times over: C = A₀·B + A₁·B + … in one pass,
// A_r the pairs [r·kq, (r+1)·kq) of each row; for the terms of an operand
// split into several bfloat16 (SplitPairs3).
func MulPairsRepeat(m, n, kq, reps int, a []uint32, lda int, b []uint32, ldp int, c []float32, ldc int, alpha float32, acc bool) {
	mulPairs(m, n, kq, reps, a, lda, b, ldp, c, ldc, alpha, acc)
}

func mulPairs(m, n, kq, reps int, a []uint32, lda int, b []uint32, ldp int, c []float32, ldc int, alpha float32, acc bool) {
	if !useAMX {
		panic("gemm: MulPairs without AMX")
	}
	if m%amxMR != 0 || n%amxNR != 0 || kq%amxChunk != 0 || reps < 1 || acc && alpha != 1 || reps*kq > lda || kq*amxNR > ldp {
		panic("gemm: MulPairs: bad shape")
	}
	if m == 0 || n == 0 {
		return
	}
	if kq == 0 {
		if !acc {
			for i := range m {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	_ = a[(m-1)*lda+reps*kq-1]
	_ = b[(n/amxNR-1)*ldp+kq*amxNR-1]
	_ = c[(m-1)*ldc+n-1]
	var p amxArgs
	amxConfig(&p.cfg)
	var scratch [amxMR * amxNR]float32
	p.a, p.aRow, p.aPanel = &a[0], 4*lda, 4*lda*amxMR
	p.b, p.bPanel = &b[0], 4*ldp
	p.kChunks, p.mt, p.nt = reps*kq/amxChunk, m/amxMR, n/amxNR
	p.aStream = streamA(p.mt)
	if reps > 1 {
		p.kRep = kq / amxChunk
	}
	p.st, p.stStride, p.stMode = unsafe.Pointer(&c[0]), 4*ldc, 1
	if acc {
		p.ld, p.ldStride, p.ldMode = unsafe.Pointer(&c[0]), 4*ldc, 1
	} else if alpha != 1 {
		p.stMode, p.alpha = 3, alpha
	}
	p.scratch = &scratch[0]
	amxMacro(&p)
}

//go:noescape
func splitPairs3AVX512(d1, d2, d3 *uint32, ldd int, src *float32, lds, rows, nq int)

// SplitPairs3 splits rows of float32 into three bfloat16 terms and packs
// each as PairRows does: for r < rows, i < k (k a multiple of AMXK),
// x = src[r*lds+i] is h + m + l + e with h = bf16(x), m = bf16(x − h),
// l = bf16(x − h − m) (each difference exact in float32, each rounding to
// nearest even, a subnormal read as zero: VCVTNEPS2BF16) and
// |e| ≤ max(2⁻²⁷·|x|, 2⁻¹²⁶); d1, d2, d3 get h, m and l as pair words,
// row r at r*ldd. Three tile products on them carry
// a float32 operand through AMX about as exactly as float32 arithmetic.
func SplitPairs3(d1, d2, d3 []uint32, ldd int, src []float32, lds, rows, k int) {
	if k%AMXK != 0 || k/2 > ldd {
		panic("gemm: SplitPairs3: k not a multiple of AMXK, or k/2 > ldd")
	}
	if rows == 0 || k == 0 {
		return
	}
	last := (rows-1)*ldd + k/2 - 1
	_, _, _ = d1[last], d2[last], d3[last]
	_ = src[(rows-1)*lds+k-1]
	splitPairs3AVX512(&d1[0], &d2[0], &d3[0], ldd, &src[0], lds, rows, k/2)
}

//go:noescape
func splitPanels3AVX512(d *uint32, term, ldp int, src *float32, lds, nq, np int)

// SplitPanels3 splits a k×n float32 matrix (src[p*lds+j]) into three
// bfloat16 terms, each element as SplitPairs3 splits it (the same terms,
// bit for bit), and packs them as the B operand of MulPairs with K = 3k:
// the terms one after another along K. Panel t (columns [32t, 32t+32))
// starts at dst[t*ldp:]; term τ's pair row p (rows 2p and 2p+1 of src) is
// at dst[t*ldp+(τ·k/2+p)·AMXCols:], the word of column j the pair of the
// two rows' terms, as PairPanels packs them. k must be a multiple of AMXK,
// n of AMXCols and ldp at least 3·k/2·AMXCols. With A's K pairs repeated
// thrice along its rows, MulPairs(m, n, 3·k/2, ...) then adds A·h + A·m +
// A·l: a product with a float32 B at about float32's accuracy.
func SplitPanels3(dst []uint32, ldp int, src []float32, lds, k, n int) {
	if k%AMXK != 0 || n%amxNR != 0 || 3*k/2*amxNR > ldp || n > lds {
		panic("gemm: SplitPanels3: k not a multiple of AMXK, n not of AMXCols, or ldp too short")
	}
	if k == 0 || n == 0 {
		return
	}
	kq := k / 2
	_ = dst[(n/amxNR-1)*ldp+3*kq*amxNR-1]
	_ = src[(k-1)*lds+n-1]
	splitPanels3AVX512(&dst[0], 4*kq*amxNR, 4*ldp, &src[0], lds, kq, n/amxNR)
}

// amxLoad and amxStore are amxMacro's load and store modes of o's 16-bit
// destination.
func (o *out16) amxLoad() int {
	if o.f16 {
		return 3
	}
	return 2
}

func (o *out16) amxStore() int {
	if o.f16 {
		return 4
	}
	return 2
}

// Binary16 operands on the tiles (Hgemm, Hgemm16). A binary16 x is
// exactly h + l with h = bf16(x) (to nearest even) and l = x − h: x has 11
// significant bits, h holds the first 8 rounded and x − h at most 3, well
// inside bfloat16's range. So a product x·y is h·h' + l·h' + h·l' + l·l',
// four exact products of bfloat16, which two K pairs of a tile product
// give: A holds the pair (h, l) twice, B the pairs (h', h') and (l', l').
// K is then twice the operands' and a tile step covers 8 of their
// elements; the float32 sums are the widened product's to within float32's
// error (the tiles add in their own order), at four tile products for one.

// f16 packing modes of f16SplitAVX512 and f16Split.
const (
	f16PairsDup   = iota // dst[2i] = dst[2i+1] = (h, l)
	f16Pairs             // dst[i] = (h, l)
	f16Terms             // dst[i] = (h, h), dst[n+i] = (l, l)
	f16TermsInter        // dst[2i] = (h, h), dst[2i+1] = (l, l)
)

//go:noescape
func f16SplitAVX512(dst *uint32, src *uint16, n, mode int)

// f16Split packs the terms of the binary16 src into dst by mode (for
// f16Terms, n = len(src) apart): 16 elements at a time on AVX-512, the
// rest by f16Terms16.
func f16Split(dst []uint32, src []uint16, mode int) {
	n := len(src)
	if n == 0 {
		return
	}
	words := 2 * n
	if mode == f16Pairs {
		words = n
	}
	_ = dst[words-1]
	full := n &^ 15
	if full > 0 && mode != f16Terms || full == n {
		f16SplitAVX512(&dst[0], &src[0], full, mode)
	} else {
		full = 0
	}
	for i := full; i < n; i++ {
		h, l := f16Terms16(src[i])
		switch mode {
		case f16PairsDup:
			dst[2*i], dst[2*i+1] = pair(h, l), pair(h, l)
		case f16Pairs:
			dst[i] = pair(h, l)
		case f16Terms:
			dst[i], dst[n+i] = pair(h, h), pair(l, l)
		default:
			dst[2*i], dst[2*i+1] = pair(h, h), pair(l, l)
		}
	}
}

// f16Terms16 is the bfloat16 pair h + l = x of a binary16 x: h = bf16(x)
// to nearest even, l = x − h (exact); a non-finite x gives h = x (a NaN
// quieted) and l = 0.
func f16Terms16(x uint16) (h, l uint16) {
	sign, e, m := uint32(x>>15)<<31, uint32(x>>10)&0x1f, uint32(x&0x3ff)
	var v float32
	switch {
	case e == 0x1f:
		u := sign | 0x7f800000 | m<<13
		if m != 0 {
			return uint16(u>>16) | 0x40, 0
		}
		return uint16(u >> 16), 0
	case e == 0:
		v = float32(m) * 0x1p-24
		if sign != 0 {
			v = -v
		}
	default:
		v = math.Float32frombits(sign | (e+112)<<23 | m<<13)
	}
	u := math.Float32bits(v)
	h = uint16((u + 0x7fff + (u>>16)&1) >> 16)
	r := v - math.Float32frombits(uint32(h)<<16)
	return h, uint16(math.Float32bits(r) >> 16)
}

// packA16 is packA for binary16 A: per row of the block, kc elements as
// 2·kc pair words (h, l), each twice.
func (j *ajob) packA16(s *amxScratch, i0, mc int) {
	kc, kqp := j.kc, j.kqPad
	mPad := ceilDiv(mc, amxMR) * amxMR
	dst := s.packedA[:mPad*kqp]
	if !j.transA {
		for i := range mc {
			r := dst[i*kqp : (i+1)*kqp]
			f16Split(r[:2*kc], j.a[(i0+i)*j.lda+j.pc:][:kc], f16PairsDup)
			clear(r[2*kc:])
		}
	} else {
		// K runs down A: its rows k give the pair rows 2k and 2k+1 of the
		// block (one word per row of C), then transposed.
		tmp := s.tmp[:2*kc*mc]
		for k := range kc {
			row := tmp[2*k*mc : (2*k+1)*mc]
			f16Split(row, j.a[(j.pc+k)*j.lda+i0:][:mc], f16Pairs)
			copy(tmp[(2*k+1)*mc:(2*k+2)*mc], row)
		}
		TransposeWords(dst, kqp, tmp, mc, 2*kc, mc)
		for i := range mc {
			clear(dst[i*kqp+2*kc : (i+1)*kqp])
		}
	}
	clear(dst[mc*kqp:])
}

// interleaveRows packs k rows of n bfloat16 (src, row stride lds) as
// ⌈k/2⌉ rows of pair words (dst, row stride ldd): row q holds
// pair(src row 2q, src row 2q+1) column by column, an odd last row paired
// with zero.
func interleaveRows(dst []uint32, ldd int, src []uint16, lds, k, n int) {
	even := k &^ 1
	interleavePairsVec(dst, ldd, src, lds, even/2, n)
	if k > even {
		r0 := src[even*lds:][:n]
		t := dst[even/2*ldd:][:n]
		for x := range t {
			t[x] = pair(r0[x], 0)
		}
	}
}

// packBPanel16 packs the binary16 columns [col, col+nr) of op(B)'s
// current K block into the micro-panel d: pair rows 2k and 2k+1 hold
// (h, h) and (l, l) of row k, through s.tmp when B is transposed.
func (j *ajob) packBPanel16(s *amxScratch, d []uint32, col, nr int) {
	kc := j.kc
	if j.transB {
		// B's rows col.. are the panel's columns, K along them.
		tmp := s.tmp[:nr*2*kc]
		for x := range nr {
			f16Split(tmp[x*2*kc:(x+1)*2*kc], j.b[(col+x)*j.ldb+j.pc:][:kc], f16TermsInter)
		}
		TransposeWords(d, amxNR, tmp, 2*kc, nr, 2*kc)
		return
	}
	for k := range kc {
		src := j.b[(j.pc+k)*j.ldb+col:][:nr]
		if nr == amxNR {
			f16Split(d[2*k*amxNR:(2*k+2)*amxNR], src, f16Terms)
			continue
		}
		for x, v := range src {
			h, l := f16Terms16(v)
			d[2*k*amxNR+x], d[(2*k+1)*amxNR+x] = pair(h, h), pair(l, l)
		}
	}
}

// kcMax is the K block: amxKC elements of bfloat16 operands, half as many
// of binary16 ones, whose elements take two K pairs each (a B micro-panel
// of 64 KiB); 256 is also the float32 blocking's KC, below which Hgemm16,
// like Sgemm16, needs no float32 panel.
func (j *ajob) kcMax() int {
	if j.f16in {
		return amxKC / 2
	}
	return amxKC
}

// slots is the K pairs that kc elements of K take.
func (j *ajob) slots(kc int) int {
	if j.f16in {
		return 2 * kc
	}
	return (kc + 1) / 2
}

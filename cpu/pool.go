package cpu

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/parallel"
)

// Parallel loops of the ops. Each op fills a loop body held in the
// Backend (loops) and hands it to parallel.For, so that a call neither
// starts goroutines nor allocates: a body is a struct with the op's
// arguments and a Run method over a range of rows; its scratch comes from
// the participant's own buffers (buf), grown on first use and kept.

// loops holds the per-participant scratch and one body of each kind.
type loops struct {
	scr  []wscratch // one per participant of a loop
	part []float64  // partial sums of reduceRows

	red  reduceLoop
	conv convLoop
	elem elemLoop
	sum  sumReducer
	rows rowLoop
	cols colReducer
	qk   qkLoop
	ce   ceLoop
	emb  embLoop
	att  attLoop
	sq   sumSqRows
	muon muonLoop
}

// wscratch is one participant's reusable float32 and float64 buffers.
type wscratch struct {
	f [bufCount][]float32
	d []float64
	h []uint16
}

// begin sizes the per-participant scratch for a loop about to run (b.mu
// held).
func (b *Backend) begin() {
	if nw := parallel.Workers(); len(b.loops.scr) < nw {
		b.loops.scr = append(b.loops.scr, make([]wscratch, nw-len(b.loops.scr))...)
	}
}

// buf returns participant w's float32 buffer k with n elements (contents
// unspecified).
func (b *Backend) buf(w, k, n int) []float32 {
	s := &b.loops.scr[w]
	if cap(s.f[k]) < n {
		s.f[k] = make([]float32, n)
	}
	return s.f[k][:n]
}

// hbuf returns participant w's 16-bit buffer with n elements (contents
// unspecified).
func (b *Backend) hbuf(w, n int) []uint16 {
	s := &b.loops.scr[w]
	if cap(s.h) < n {
		s.h = make([]uint16, n)
	}
	return s.h[:n]
}

// dbuf returns participant w's float64 buffer with n elements, zeroed.
func (b *Backend) dbuf(w, n int) []float64 {
	s := &b.loops.scr[w]
	if cap(s.d) < n {
		s.d = make([]float64, n)
	}
	d := s.d[:n]
	clear(d)
	return d
}

// reduceChunks is the fixed number of row chunks of a deterministic
// reduction: it must not depend on GOMAXPROCS.
const reduceChunks = 32

// rowReducer adds the contribution of rows [lo, hi) into acc (a zeroed
// width-long float64 vector), as participant w.
type rowReducer interface {
	reduce(w, lo, hi int, acc []float64)
}

// reduceLoop runs a rowReducer over the chunks of a reduction.
type reduceLoop struct {
	r           rowReducer
	n, k, width int
	part        []float64
}

func (l *reduceLoop) Run(w, lo, hi int) {
	for c := lo; c < hi; c++ {
		l.r.reduce(w, c*l.n/l.k, (c+1)*l.n/l.k, l.part[c*l.width:(c+1)*l.width])
	}
}

// reduceRows sums, over n rows, a width-long float64 vector: r adds the
// contribution of rows [lo, hi) into a zeroed accumulator. Rows are cut
// into at most reduceChunks fixed chunks whose partial sums are added in
// chunk order, so the result is the same for any GOMAXPROCS. The result
// is valid until the next reduceRows (b.mu held).
func (b *Backend) reduceRows(n, width int, r rowReducer) []float64 {
	k := min(n, reduceChunks)
	need := (k + 1) * width
	if cap(b.loops.part) < need {
		b.loops.part = make([]float64, need)
	}
	part := b.loops.part[:k*width]
	total := b.loops.part[k*width : (k+1)*width]
	clear(part)
	clear(total)
	if k == 0 {
		return total
	}
	b.begin()
	l := &b.loops.red
	*l = reduceLoop{r: r, n: n, k: k, width: width, part: part}
	parallel.For(k, 1, l)
	l.r, l.part = nil, nil
	for c := range k {
		for j, v := range part[c*width : (c+1)*width] {
			total[j] += v
		}
	}
	return total
}

// addInto adds float64 sums into an F32 accumulator, rounding once each.
func addInto(dst []float32, sums []float64) {
	for j, s := range sums {
		dst[j] = float32(float64(dst[j]) + s)
	}
}

// convLoop widens a tensor into a float32 slice (load) or rounds a float32
// slice into a tensor (store), over element ranges.
type convLoop struct {
	t    *backend.Tensor
	f    []float32
	load bool
}

func (l *convLoop) Run(w, lo, hi int) {
	if l.load {
		loadRange(l.t, lo, l.f[lo:hi])
	} else {
		storeRange(l.t, lo, l.f[lo:hi])
	}
}

// convGrain is the fewest elements a participant converts.
const convGrain = 1 << 14

// asF32 returns t as a float32 slice: t's storage when F32, else t widened
// into scratch panel k (b.mu held).
func (b *Backend) asF32(k int, t *backend.Tensor) []float32 {
	if t.DType == backend.F32 {
		return f32s(t)
	}
	p := b.panel(k, t.Len())
	b.convert(t, p, true)
	return p
}

// storeAll rounds src into the whole of t in parallel (a no-op when src is
// t's own F32 storage; b.mu held).
func (b *Backend) storeAll(t *backend.Tensor, src []float32) {
	if t.DType == backend.F32 && &f32s(t)[0] == &src[0] {
		return
	}
	b.convert(t, src, false)
}

func (b *Backend) convert(t *backend.Tensor, f []float32, load bool) {
	l := &b.loops.conv
	*l = convLoop{t: t, f: f, load: load}
	parallel.For(len(f), convGrain, l)
	*l = convLoop{}
}

package cpu

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/parallel"
	"github.com/golf-ml/golf/internal/vmath"
)

// embLoop is the body of EmbeddingForward (over rows) and
// EmbeddingBackward (over column ranges, every row in order).
type embLoop struct {
	b        *Backend
	backward bool
	C, N     int
	out, w   *backend.Tensor
	dout     *backend.Tensor
	dw       []float32
	id       []int32
}

func (l *embLoop) Run(w, lo, hi int) {
	b, C := l.b, l.C
	if !l.backward {
		buf := b.buf(w, 0, C)
		for n := lo; n < hi; n++ {
			storeRange(l.out, n*C, view(l.w, int(l.id[n])*C, C, buf))
		}
		return
	}
	if l.dout.DType != backend.F32 {
		g, f16 := u16s(l.dout), l.dout.DType == backend.F16
		for n := range l.N {
			vmath.Axpy16(l.dw[int(l.id[n])*C+lo:int(l.id[n])*C+hi], g[n*C+lo:n*C+hi], 1, f16)
		}
		return
	}
	g := f32s(l.dout)
	for n := range l.N {
		vmath.Axpy(l.dw[int(l.id[n])*C+lo:int(l.id[n])*C+hi], g[n*C+lo:n*C+hi], 1)
	}
}

// EmbeddingForward gathers rows of the table:
//
//	out[n,:] = w[ids[n],:]
//	out CD (N, C), ids I32 (N), w CD (V, C)
func (b *Backend) EmbeddingForward(out, ids, w *backend.Tensor) {
	const op = "EmbeddingForward"
	wantCD(op, []string{"out", "w"}, out, w)
	s := wantRank(op, "w", w, 2)
	V, C := s[0], s[1]
	N := wantRank(op, "ids", ids, 1)[0]
	wantShape(op, "out", out, N, C)
	id := wantIDs(op, "ids", ids, V)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.begin()
	l := &b.loops.emb
	*l = embLoop{b: b, C: C, out: out, w: w, id: id}
	parallel.For(N, 64, l)
	*l = embLoop{}
}

// EmbeddingBackward scatter-adds the output gradient into the table's:
//
//	dw[ids[n],:] += dout[n,:]   for n = 0, 1, ..., N−1 in that order
//	dw F32 (V, C), ids I32 (N), dout CD (N, C)
//
// Columns are split over participants, so every element of dw receives its
// additions in the order of n whatever GOMAXPROCS is.
func (b *Backend) EmbeddingBackward(dw, ids, dout *backend.Tensor) {
	const op = "EmbeddingBackward"
	wantF32(op, []string{"dw"}, dw)
	wantCD(op, []string{"dout"}, dout)
	s := wantRank(op, "dw", dw, 2)
	V, C := s[0], s[1]
	N := wantRank(op, "ids", ids, 1)[0]
	wantShape(op, "dout", dout, N, C)
	id := wantIDs(op, "ids", ids, V)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.begin()
	l := &b.loops.emb
	*l = embLoop{b: b, backward: true, C: C, N: N, dout: dout, dw: f32s(dw), id: id}
	parallel.For(C, 16, l)
	*l = embLoop{}
}

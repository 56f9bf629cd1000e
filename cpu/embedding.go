package cpu

import "github.com/golf-ml/golf/backend"

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
	parallelFor(N, 64, func(lo, hi int) {
		buf := make([]float32, C)
		for n := lo; n < hi; n++ {
			storeRange(out, n*C, view(w, int(id[n])*C, C, buf))
		}
	})
}

// EmbeddingBackward scatter-adds the output gradient into the table's:
//
//	dw[ids[n],:] += dout[n,:]   for n = 0, 1, ..., N−1 in that order
//	dw F32 (V, C), ids I32 (N), dout CD (N, C)
//
// Columns are split over goroutines, so every element of dw receives its
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
	d := f32s(dw)
	parallelFor(C, 16, func(lo, hi int) {
		buf := make([]float32, hi-lo)
		for n := range N {
			g := view(dout, n*C+lo, hi-lo, buf)
			row := d[int(id[n])*C+lo : int(id[n])*C+hi]
			for j, v := range g {
				row[j] += v
			}
		}
	})
}

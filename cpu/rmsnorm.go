package cpu

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/parallel"
	"github.com/golf-ml/golf/internal/vmath"
)

// rowGrain is the fewest rows a participant of a row-wise op handles.
const rowGrain = 16

// rowKind selects what a rowLoop computes on each row.
type rowKind int

const (
	rowRMSNorm     rowKind = iota // out = x·rstd, rstd saved
	rowRMSNormGrad                // dx = dres + rstd·(g − x̂·mean(g·x̂))
	rowResidMix                   // out = m0·x + m1·x0
	rowScaledAdd                  // out = x + s·y
	rowScale                      // out = s·x
)

// rowLoop is the body of the row-wise ops over rows of width C: each row
// widened into the participant's buffers (F32 rows are used in place),
// computed by vmath kernels, rounded back.
type rowLoop struct {
	b            *Backend
	kind         rowKind
	C            int
	out, x, y, z *backend.Tensor
	r            []float32 // rstd (N)
	v0, v1       []float32 // per-column vectors (C)
}

func (l *rowLoop) Run(w, lo, hi int) {
	C, b := l.C, l.b
	for n := lo; n < hi; n++ {
		i := n * C
		xs := view(l.x, i, C, b.buf(w, 0, C))
		os := dest(l.out, i, C, b.buf(w, 1, C))
		switch l.kind {
		case rowRMSNorm:
			l.r[n] = rmsRow(os, xs)
		case rowRMSNormGrad:
			g := view(l.y, i, C, b.buf(w, 2, C))
			var res []float32
			if l.z != nil {
				res = view(l.z, i, C, b.buf(w, 3, C))
			}
			rmsBackRow(os, g, xs, res, l.r[n], b.buf(w, 4, C))
		case rowResidMix:
			vmath.MulAdd2(os, l.v0, xs, l.v1, view(l.y, i, C, b.buf(w, 2, C)))
		case rowScaledAdd:
			vmath.AddMul(os, xs, l.v0, view(l.y, i, C, b.buf(w, 2, C)))
		case rowScale:
			vmath.Mul(os, l.v0, xs)
		}
		flush(l.out, i, os)
	}
}

// runRows runs the row loop l over N rows (b.mu held).
func (b *Backend) runRows(N int, l rowLoop) {
	b.begin()
	r := &b.loops.rows
	*r = l
	r.b = b
	parallel.For(N, rowGrain, r)
	*r = rowLoop{}
}

// RMSNormForward normalises each row without a weight:
//
//	rstd[n] = 1/sqrt(mean_c x[n,c]² + RMSNormEps)
//	out[n,c] = x[n,c]·rstd[n]
//	out CD (N, C), rstd F32 (N), x CD (N, C)
func (b *Backend) RMSNormForward(out, rstd, x *backend.Tensor) {
	const op = "RMSNormForward"
	wantCD(op, []string{"out", "x"}, out, x)
	wantF32(op, []string{"rstd"}, rstd)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	wantShape(op, "out", out, N, C)
	wantShape(op, "rstd", rstd, N)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runRows(N, rowLoop{kind: rowRMSNorm, C: C, out: out, x: x, r: f32s(rstd)})
}

// rmsRow writes x·rstd into out and returns rstd = 1/sqrt(mean x² + eps),
// the mean taken in float64 (vmath.SumSq64's order).
func rmsRow(out, x []float32) float32 {
	rs := rsqrt64(vmath.SumSq64(x)/float64(len(x)) + backend.RMSNormEps)
	vmath.Scale(out, x, rs)
	return rs
}

// RMSNormBackward, with x̂ = x·rstd:
//
//	dx[n,c] = dres[n,c] + rstd[n]·(dout[n,c] − x̂[n,c]·mean_c'(dout[n,c']·x̂[n,c']))
//	dx CD (N, C), dout CD (N, C), x CD (N, C), rstd F32 (N), dres CD (N, C) or nil
//
// dx may alias dres.
func (b *Backend) RMSNormBackward(dx, dout, x, rstd, dres *backend.Tensor) {
	const op = "RMSNormBackward"
	wantCD(op, []string{"dx", "dout", "x", "dres"}, dx, dout, x, dres)
	wantF32(op, []string{"rstd"}, rstd)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	wantShape(op, "dx", dx, N, C)
	wantShape(op, "dout", dout, N, C)
	wantShape(op, "rstd", rstd, N)
	if dres != nil {
		wantShape(op, "dres", dres, N, C)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runRows(N, rowLoop{kind: rowRMSNormGrad, C: C, out: dx, x: x, y: dout, z: dres, r: f32s(rstd)})
}

// rmsBackRow writes dx = res + rs·(g − x̂·m), m = mean(g·x̂) in float64,
// with x̂ = x·rs rounded to float32 (into xh); res may be nil (0) or the
// same slice as dx.
func rmsBackRow(dx, g, x, res []float32, rs float32, xh []float32) {
	vmath.Scale(xh, x, rs)
	m := float32(vmath.Dot64(g, xh) / float64(len(x)))
	vmath.RMSGrad(dx, g, xh, res, rs, m)
}

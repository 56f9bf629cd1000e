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
	rowRMSNorm       rowKind = iota // out = x·rstd, rstd saved
	rowRMSNormGrad                  // dx = dres + rstd·(g − x̂·mean(g·x̂))
	rowResidMix                     // out = m0·x + m1·x0
	rowScaledAdd                    // out = x + s·y
	rowScale                        // out = s·x
	rowResidMixNorm                 // out = m0·x + m1·y stored, then h = rmsnorm(out)
	rowScaledAddNorm                // out = x + s·y stored, then h = rmsnorm(out)
)

// rowGroup is the number of rows a row loop takes at a time: one widening,
// kernel call and rounding covers rowGroup·C elements, and the rows'
// float64 sums overlap (vmath.SumSq64Rows, vmath.Dot64Rows) instead of
// each waiting on its own chain of adds.
const rowGroup = 4

// rowLoop is the body of the row-wise ops over rows of width C: groups of
// rows widened into the participant's buffers (F32 rows are used in
// place), computed by vmath kernels, rounded back.
type rowLoop struct {
	b            *Backend
	kind         rowKind
	C            int
	out, x, y, z *backend.Tensor
	h            *backend.Tensor // the normalised rows of rowResidMixNorm and rowScaledAddNorm
	r            []float32       // rstd (N)
	v0, v1       []float32       // per-column vectors (C)
}

func (l *rowLoop) Run(w, lo, hi int) {
	C, b := l.C, l.b
	var sums [rowGroup]float64
	var means [rowGroup]float32
	for n := lo; n < hi; n += rowGroup {
		g := min(rowGroup, hi-n)
		i, m := n*C, g*C
		switch l.kind {
		case rowRMSNorm:
			l.norm(w, i, m, n, g, l.out, l.x, sums[:g])
			continue
		case rowResidMixNorm, rowScaledAddNorm:
			// The elementwise op's rows are rounded into out, then
			// normalised from what out holds: the unfused sequence's
			// bits, while the rows are still in cache.
			l.elementwise(w, i, m)
			l.norm(w, i, m, n, g, l.h, l.out, sums[:g])
			continue
		case rowRMSNormGrad:
			if l.grad16(i, m, n, g, means[:g]) {
				continue
			}
		default:
			l.elementwise(w, i, m)
			continue
		}
		xs := view(l.x, i, m, b.buf(w, 0, m))
		os := dest(l.out, i, m, b.buf(w, 1, m))
		gs := view(l.y, i, m, b.buf(w, 2, m))
		var res []float32
		if l.z != nil {
			res = view(l.z, i, m, b.buf(w, 3, m))
		}
		rmsBackRows(os, gs, xs, res, l.r[n:n+g], b.buf(w, 4, m), sums[:g])
		flush(l.out, i, os)
	}
}

// elementwise computes elements [i, i+m) of out from x and y (and the
// column vectors) and rounds them into out.
func (l *rowLoop) elementwise(w, i, m int) {
	C, b := l.C, l.b
	xs := view(l.x, i, m, b.buf(w, 0, m))
	os := dest(l.out, i, m, b.buf(w, 1, m))
	for r := 0; r < m; r += C {
		o, x := os[r:r+C], xs[r:r+C]
		switch l.kind {
		case rowResidMix, rowResidMixNorm:
			vmath.MulAdd2(o, l.v0, x, l.v1, view(l.y, i+r, C, b.buf(w, 2, C)))
		case rowScaledAdd, rowScaledAddNorm:
			vmath.AddMul(o, x, l.v0, view(l.y, i+r, C, b.buf(w, 2, C)))
		case rowScale:
			vmath.Mul(o, l.v0, x)
		}
	}
	flush(l.out, i, os)
}

// norm normalises rows [n, n+g) (elements [i, i+m)) of x into out, saving
// their rstd: by the fused 16-bit kernels where every tensor is bfloat16
// or every one binary16 and they run here, else widened. ss is scratch,
// one per row.
func (l *rowLoop) norm(w, i, m, n, g int, out, x *backend.Tensor, ss []float64) {
	rs := l.r[n : n+g]
	if f, ok := half16(x, out); ok {
		xh := u16s(x)[i : i+m]
		if vmath.SumSq64Rows16(f, ss, xh) {
			for r := range rs {
				rs[r] = rsqrt64(ss[r]/float64(l.C) + backend.RMSNormEps)
			}
			if vmath.ScaleRows16(f, u16s(out)[i:i+m], xh, rs) {
				return
			}
		}
	}
	b := l.b
	xs := view(x, i, m, b.buf(w, 0, m))
	os := dest(out, i, m, b.buf(w, 1, m))
	rmsRows(os, xs, rs, ss)
	flush(out, i, os)
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

// rmsRows normalises the rows of x (len(rs) rows) into out: each row's
// rstd = 1/sqrt(mean x² + eps), the mean taken in float64 (vmath.SumSq64's
// order), is stored in rs and out = x·rstd. ss is scratch, one per row.
func rmsRows(out, x, rs []float32, ss []float64) {
	C := len(x) / len(rs)
	vmath.SumSq64Rows(ss, x)
	for r := range rs {
		rs[r] = rsqrt64(ss[r]/float64(C) + backend.RMSNormEps)
		vmath.Scale(out[r*C:(r+1)*C], x[r*C:(r+1)*C], rs[r])
	}
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

// grad16 does rows [n, n+g) (elements [i, i+m)) of RMSNormBackward
// whose tensors are all bfloat16 or all binary16 by the fused kernel,
// which widens in registers, and reports whether it did (false: no kernel
// here, nothing done). ms is scratch, g of it.
func (l *rowLoop) grad16(i, m, n, g int, ms []float32) bool {
	f, ok := half16(l.x, l.out, l.y, l.z)
	if !ok {
		return false
	}
	var res []uint16
	if l.z != nil {
		res = u16s(l.z)[i : i+m]
	}
	return vmath.RMSGradRows16(f, u16s(l.out)[i:i+m], u16s(l.y)[i:i+m], u16s(l.x)[i:i+m], res, l.r[n:n+g], ms)
}

// half16 returns the 16-bit format of the fused row kernels that every
// tensor given (nil ones aside) is stored in, or false where they are not
// all BF16 or all F16.
func half16(ts ...*backend.Tensor) (vmath.Half, bool) {
	dt, seen := backend.F32, false
	for _, t := range ts {
		switch {
		case t == nil:
		case !seen:
			dt, seen = t.DType, true
		case t.DType != dt:
			return 0, false
		}
	}
	switch dt {
	case backend.BF16:
		return vmath.BFloat16, true
	case backend.F16:
		return vmath.Binary16, true
	}
	return 0, false
}

// rmsBackRows writes, row by row, dx = res + rs·(g − x̂·m), m = mean(g·x̂)
// in float64, with x̂ = x·rs rounded to float32 (into xh); res may be nil
// (0) or the same slice as dx. ms is scratch, one per row.
func rmsBackRows(dx, g, x, res, rs, xh []float32, ms []float64) {
	C := len(x) / len(rs)
	for r, s := range rs {
		vmath.Scale(xh[r*C:(r+1)*C], x[r*C:(r+1)*C], s)
	}
	vmath.Dot64Rows(ms, g, xh)
	for r, s := range rs {
		lo, hi := r*C, (r+1)*C
		var rr []float32
		if res != nil {
			rr = res[lo:hi]
		}
		vmath.RMSGrad(dx[lo:hi], g[lo:hi], xh[lo:hi], rr, s, float32(ms[r]/float64(C)))
	}
}

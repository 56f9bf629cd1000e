package cpu

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/vmath"
)

// ResidMixForward mixes the residual stream with the embedding stream:
//
//	out[n,c] = mix[0,c]·x[n,c] + mix[1,c]·x0[n,c]
//	out, x, x0 CD (N, C), mix F32 (2, C)
func (b *Backend) ResidMixForward(out, x, x0, mix *backend.Tensor) {
	const op = "ResidMixForward"
	wantCD(op, []string{"out", "x", "x0"}, out, x, x0)
	wantF32(op, []string{"mix"}, mix)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	wantShape(op, "out", out, N, C)
	wantShape(op, "x0", x0, N, C)
	wantShape(op, "mix", mix, 2, C)
	m := f32s(mix)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runRows(N, rowLoop{kind: rowResidMix, C: C, out: out, x: x, y: x0, v0: m[:C], v1: m[C:]})
}

// colKind selects what a colReducer computes per row.
type colKind int

const (
	colResidMix    colKind = iota // dx = m0·g; dx0 += m1·g; acc += (g·x, g·x0)
	colDot                        // acc += g·x
	colScaledAdd                  // dx = m0·g; acc += g·x
	colRMSResidMix                // colResidMix with g the rounded RMSNorm backward of (xm, g, rstd, dres)
)

// Scratch buffers of colRMSResidMix's rows of dm (bufs 0..3 are the resid
// mix's own).
const (
	bufDm = 4 + iota
	bufDmX
	bufDmG
	bufDmRes
	bufDmScratch
)

// colReducer is the body of the backward ops whose parameter gradients
// are sums over rows of per-column products, accumulated in float64 over
// fixed chunks of rows.
type colReducer struct {
	b            *Backend
	kind         colKind
	C            int
	g, x, x0, dx *backend.Tensor
	dx0, m0, m1  []float32
	xm, dres     *backend.Tensor // colRMSResidMix: the RMSNorm's input and residual gradient
	rstd         []float32       // colRMSResidMix: the RMSNorm's rstd
}

func (r *colReducer) reduce(w, lo, hi int, acc []float64) {
	C, b := r.C, r.b
	for n := lo; n < hi; n += rowGroup {
		i, m := n*C, min(rowGroup, hi-n)*C
		if f, ok := half16(r.g, r.x, r.dx); ok && r.kind == colScaledAdd &&
			vmath.ScaledAddBack16(f, acc[:C], u16s(r.dx)[i:i+m], u16s(r.g)[i:i+m], u16s(r.x)[i:i+m], r.m0) {
			continue
		}
		var g []float32
		if r.kind == colRMSResidMix {
			g = r.dmRows(w, i, m, n, m/C)
		} else {
			g = view(r.g, i, m, b.buf(w, 0, m))
		}
		xs := view(r.x, i, m, b.buf(w, 1, m))
		vmath.Dot64ColsRows(acc[:C], g, xs)
		if r.kind == colDot {
			continue
		}
		if r.kind == colResidMix || r.kind == colRMSResidMix {
			vmath.Dot64ColsRows(acc[C:], g, view(r.x0, i, m, b.buf(w, 2, m)))
			for k := 0; k < m; k += C {
				vmath.MulAcc(r.dx0[i+k:i+k+C], r.m1, g[k:k+C])
			}
		}
		os := dest(r.dx, i, m, b.buf(w, 3, m))
		for k := 0; k < m; k += C {
			vmath.Mul(os[k:k+C], r.m0, g[k:k+C])
		}
		flush(r.dx, i, os)
	}
}

// reduceCols runs the column reducer l over N rows (b.mu held) and
// returns the sums (valid until the next reduction).
func (b *Backend) reduceCols(N, width int, l colReducer) []float64 {
	r := &b.loops.cols
	*r = l
	r.b = b
	sums := b.reduceRows(N, width, r)
	*r = colReducer{}
	return sums
}

// ResidMixBackward:
//
//	dx[n,c] = mix[0,c]·dout[n,c]                      dx CD (N, C), overwritten
//	dx0[n,c] += mix[1,c]·dout[n,c]                    dx0 F32 (N, C)
//	dmix[0,c] += Σn dout·x;  dmix[1,c] += Σn dout·x0   dmix F32 (2, C)
//	dout, x, x0 CD (N, C), mix F32 (2, C)
func (b *Backend) ResidMixBackward(dx, dx0, dmix, dout, x, x0, mix *backend.Tensor) {
	const op = "ResidMixBackward"
	wantCD(op, []string{"dx", "dout", "x", "x0"}, dx, dout, x, x0)
	wantF32(op, []string{"dx0", "dmix", "mix"}, dx0, dmix, mix)
	s := wantRank(op, "x", x, 2)
	N, C := s[0], s[1]
	for i, t := range []*backend.Tensor{dx, dx0, dout, x0} {
		wantShape(op, []string{"dx", "dx0", "dout", "x0"}[i], t, N, C)
	}
	wantShape(op, "dmix", dmix, 2, C)
	wantShape(op, "mix", mix, 2, C)
	m := f32s(mix)
	b.mu.Lock()
	defer b.mu.Unlock()
	sums := b.reduceCols(N, 2*C, colReducer{kind: colResidMix, C: C, g: dout, x: x, x0: x0, dx: dx, dx0: f32s(dx0), m0: m[:C], m1: m[C:]})
	addInto(f32s(dmix), sums)
}

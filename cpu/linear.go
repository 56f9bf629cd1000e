package cpu

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
)

// Scratch panels of the matrix products (see Backend.panel).
const (
	panelA = iota
	panelB
	panelC
	panelD
)

// LinearForward multiplies by the transposed weight:
//
//	out = x·wᵀ,  out[n,o] = Σi x[n,i]·w[o,i]
//	out CD (N, O), x CD (N, I), w CD (O, I)
//
// The product is computed in float32 and rounded once into out: bf16
// operands go to gemm.Bgemm as they are stored, other dtypes are widened to
// float32 panels for gemm.Sgemm.
func (b *Backend) LinearForward(out, x, w *backend.Tensor) {
	const op = "LinearForward"
	dt := wantCD(op, []string{"out", "x", "w"}, out, x, w)
	N, I, O := linearShapes(op, x, w)
	wantShape(op, "out", out, N, O)
	if N == 0 || O == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var os []float32 // (N, O)
	if out.DType == backend.F32 {
		os = f32s(out)
	} else {
		os = b.panel(panelC, N*O)
	}
	switch {
	case I == 0:
		clear(os)
	case dt == backend.BF16:
		gemm.Bgemm(false, true, N, O, I, 1, u16s(x), I, u16s(w), I, 0, os, O)
	default:
		xs := b.asF32(panelA, x)
		ws := b.asF32(panelB, w)
		gemm.Sgemm(false, true, N, O, I, 1, xs, I, ws, I, 0, os, O)
	}
	storeAll(out, os)
}

// LinearBackward:
//
//	dx = dout·w  (+ dx when accumulate)   dx CD (N, I), nil to skip
//	dw += doutᵀ·x                         dw F32 (O, I), nil to skip
//	dout CD (N, O), x CD (N, I), w CD (O, I)
//
// dx is computed in float32 (its old value added before rounding when
// accumulating) and rounded once; dw accumulates in place through the
// product's beta = 1. bf16 operands go to gemm.Bgemm as they are stored,
// other dtypes are widened to float32 panels for gemm.Sgemm.
func (b *Backend) LinearBackward(dx, dw, dout, x, w *backend.Tensor, accumulate bool) {
	const op = "LinearBackward"
	dt := wantCD(op, []string{"dx", "dout", "x", "w"}, dx, dout, x, w)
	wantF32(op, []string{"dw"}, dw)
	N, I, O := linearShapes(op, x, w)
	wantShape(op, "dout", dout, N, O)
	if dx != nil {
		wantShape(op, "dx", dx, N, I)
	}
	if dw != nil {
		wantShape(op, "dw", dw, O, I)
	}
	if dx == nil && dw == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bf := dt == backend.BF16
	var gs []float32 // dout widened, (N, O)
	if !bf {
		gs = b.asF32(panelA, dout)
	}
	if dx != nil && N*I > 0 {
		var ds []float32 // (N, I)
		switch {
		case dx.DType == backend.F32:
			ds = f32s(dx)
		case accumulate:
			ds = b.asF32(panelC, dx)
		default:
			ds = b.panel(panelC, N*I)
		}
		switch {
		case O > 0:
			beta := float32(0)
			if accumulate {
				beta = 1
			}
			if bf {
				gemm.Bgemm(false, false, N, I, O, 1, u16s(dout), O, u16s(w), I, beta, ds, I)
			} else {
				ws := b.asF32(panelB, w)
				gemm.Sgemm(false, false, N, I, O, 1, gs, O, ws, I, beta, ds, I)
			}
		case !accumulate:
			clear(ds)
		}
		storeAll(dx, ds)
	}
	if dw != nil && N > 0 && O*I > 0 {
		if bf {
			gemm.Bgemm(true, false, O, I, N, 1, u16s(dout), O, u16s(x), I, 1, f32s(dw), I)
		} else {
			xs := b.asF32(panelD, x)
			gemm.Sgemm(true, false, O, I, N, 1, gs, O, xs, I, 1, f32s(dw), I)
		}
	}
}

// linearShapes checks x (N, I) against w (O, I) and returns N, I, O.
func linearShapes(op string, x, w *backend.Tensor) (N, I, O int) {
	xs := wantRank(op, "x", x, 2)
	ws := wantRank(op, "w", w, 2)
	if xs[1] != ws[1] {
		fail(op, "x %v vs w %v", xs, ws)
	}
	return xs[0], xs[1], ws[0]
}

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
	panelE
)

// LinearForward multiplies by the transposed weight:
//
//	out = x·wᵀ,  out[n,o] = Σi x[n,i]·w[o,i]
//	out CD (N, O), x CD (N, I), w CD (O, I)
//
// The product is computed in float32 and rounded once into out, tile by
// tile as the GEMM finishes it (gemm.Sgemm16, gemm.Bgemm16): bf16
// operands go to the GEMM as they are stored, f16 ones to AMX tiles as two
// bf16 terms each (gemm.Hgemm16) where gemm.AMX, else widened to float32
// panels first.
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
	var panel []float32 // partial sums over K blocks of a 16-bit out
	if dt != backend.F32 && I > gemm.KBlock() {
		panel = b.panel(panelC, N*O)
	}
	switch {
	case I == 0:
		b.zeroOut(out)
	case dt == backend.F32:
		gemm.Sgemm(false, true, N, O, I, 1, f32s(x), I, f32s(w), I, 0, f32s(out), O)
	case dt == backend.BF16:
		gemm.Bgemm16(false, true, N, O, I, 1, u16s(x), I, u16s(w), I, 0, u16s(out), O, false, panel)
	case gemm.Hgemm16(false, true, N, O, I, u16s(x), I, u16s(w), I, 0, u16s(out), O, true, panel):
		// f16 on AMX tiles, each element two bf16 terms.
	default:
		gemm.HgemmWide16(false, true, N, O, I, 1, u16s(x), I, u16s(w), I, 0, u16s(out), O, true, panel)
	}
}

// zeroOut zeroes a product's output (an empty sum).
func (b *Backend) zeroOut(t *backend.Tensor) {
	if t.DType == backend.F32 {
		clear(f32s(t))
	} else {
		clear(u16s(t))
	}
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
// f16 ones to gemm.Hgemm where gemm.AMX, else to gemm.HgemmWide, which
// widens them as it packs.
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
	hf := dt == backend.F16 && gemm.AMX() // f16 on AMX tiles (gemm.Hgemm)
	hw := dt == backend.F16 && !hf        // f16 widened as packed (gemm.HgemmWide)
	if dx != nil && N*I > 0 {
		beta := float32(0)
		if accumulate {
			beta = 1
		}
		var panel []float32
		if dt != backend.F32 && O > gemm.KBlock() {
			panel = b.panel(panelC, N*I)
		}
		switch {
		case O == 0:
			if !accumulate {
				b.zeroOut(dx)
			}
		case dt == backend.F32:
			gemm.Sgemm(false, false, N, I, O, 1, f32s(dout), O, f32s(w), I, beta, f32s(dx), I)
		case bf:
			gemm.Bgemm16(false, false, N, I, O, 1, u16s(dout), O, u16s(w), I, beta, u16s(dx), I, false, panel)
		case hf:
			mustAMX(gemm.Hgemm16(false, false, N, I, O, u16s(dout), O, u16s(w), I, beta, u16s(dx), I, true, panel))
		case hw:
			gemm.HgemmWide16(false, false, N, I, O, 1, u16s(dout), O, u16s(w), I, beta, u16s(dx), I, true, panel)
		default:
			fail(op, "dtype %v", dt)
		}
	}
	if dw != nil && N > 0 && O*I > 0 {
		switch {
		case bf:
			gemm.Bgemm(true, false, O, I, N, 1, u16s(dout), O, u16s(x), I, 1, f32s(dw), I)
		case hf:
			mustAMX(gemm.Hgemm(true, false, O, I, N, u16s(dout), O, u16s(x), I, 1, f32s(dw), I))
		case hw:
			gemm.HgemmWide(true, false, O, I, N, 1, u16s(dout), O, u16s(x), I, 1, f32s(dw), I)
		default:
			gemm.Sgemm(true, false, O, I, N, 1, f32s(dout), O, f32s(x), I, 1, f32s(dw), I)
		}
	}
}

// mustAMX panics if a product that gemm.AMX promised to run on the tiles
// did not.
func mustAMX(ran bool) {
	if !ran {
		panic("cpu: an f16 product on AMX did not run")
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

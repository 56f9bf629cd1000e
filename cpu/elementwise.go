package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/parallel"
	"github.com/golf-ml/golf/internal/vmath"
)

// grain is the smallest number of elements an elementwise participant
// handles.
const grain = 1 << 14

// block is the number of elements an elementwise op converts at a time:
// its float32 buffers stay in L1.
const block = 1024

// Zero sets every element of t (any dtype) to 0.
func (b *Backend) Zero(t *backend.Tensor) {
	switch t.DType {
	case backend.F32:
		clear(f32s(t))
	case backend.BF16, backend.F16:
		clear(u16s(t))
	case backend.I32:
		clear(i32s(t))
	default:
		fail("Zero", "unknown dtype %v", t.DType)
	}
}

// elemKind selects what an elemLoop computes on each block.
type elemKind int

const (
	elemCast       elemKind = iota // dst = round(x)
	elemScale                      // dst *= alpha (F32)
	elemAxpy                       // dst += alpha·x
	elemReluSq                     // dst = max(x, 0)²
	elemReluSqGrad                 // dst = 2·max(x, 0)·y
	elemMomentum                   // Nesterov momentum on f (buf, geff, g)
	elemAdam                       // Adam on f (p, g, m, v)
)

// elemLoop is the body of the elementwise ops: blocks of `block` elements,
// widened into the participant's buffers, computed by a vmath kernel and
// rounded back.
type elemLoop struct {
	b        *Backend
	kind     elemKind
	dst, x   *backend.Tensor
	y        *backend.Tensor
	alpha    float32
	f        [4][]float32
	adam     vmath.AdamConsts
	momentum float32
}

func (l *elemLoop) Run(w, lo, hi int) {
	f := l.f
	for i := lo; i < hi; i += block {
		n := min(block, hi-i)
		switch l.kind {
		case elemCast:
			storeRange(l.dst, i, view(l.x, i, n, l.b.buf(w, 0, n)))
		case elemScale:
			v := f32s(l.dst)[i : i+n]
			vmath.Scale(v, v, l.alpha)
		case elemAxpy:
			if l.x.DType == backend.F32 {
				vmath.Axpy(f32s(l.dst)[i:i+n], f32s(l.x)[i:i+n], l.alpha)
			} else {
				vmath.Axpy16(f32s(l.dst)[i:i+n], u16s(l.x)[i:i+n], l.alpha, l.x.DType == backend.F16)
			}
		case elemReluSq:
			xs := view(l.x, i, n, l.b.buf(w, 0, n))
			os := dest(l.dst, i, n, l.b.buf(w, 1, n))
			vmath.ReluSq(os, xs)
			flush(l.dst, i, os)
		case elemReluSqGrad:
			xs := view(l.x, i, n, l.b.buf(w, 0, n))
			g := view(l.y, i, n, l.b.buf(w, 1, n))
			os := dest(l.dst, i, n, l.b.buf(w, 2, n))
			vmath.ReluSqGrad(os, g, xs)
			flush(l.dst, i, os)
		case elemMomentum:
			vmath.Momentum(f[0][i:i+n], f[1][i:i+n], f[2][i:i+n], l.momentum)
		case elemAdam:
			vmath.Adam(f[0][i:i+n], f[1][i:i+n], f[2][i:i+n], f[3][i:i+n], l.adam)
		}
	}
}

// runElem runs the elementwise loop l over n elements (b.mu held).
func (b *Backend) runElem(n int, l elemLoop) {
	b.begin()
	e := &b.loops.elem
	*e = l
	e.b = b
	parallel.For(n, grain, e)
	*e = elemLoop{}
}

// Cast rounds src into dst (any float dtypes, same number of elements):
//
//	dst = round_dst(src)
func (b *Backend) Cast(dst, src *backend.Tensor) {
	const op = "Cast"
	wantFloat(op, []string{"dst", "src"}, dst, src)
	wantLen(op, "dst", dst, "src", src)
	if dst.DType == src.DType {
		switch dst.DType {
		case backend.F32:
			copy(f32s(dst), f32s(src))
		default:
			copy(u16s(dst), u16s(src))
		}
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runElem(dst.Len(), elemLoop{kind: elemCast, dst: dst, x: src})
}

// Scale multiplies x (F32) in place: x *= s.
func (b *Backend) Scale(x *backend.Tensor, s float32) {
	wantF32("Scale", []string{"x"}, x)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runElem(x.Len(), elemLoop{kind: elemScale, dst: x, alpha: s})
}

// Axpy accumulates into dst (F32) a scaled x of any float dtype:
//
//	dst += alpha·x
func (b *Backend) Axpy(dst, x *backend.Tensor, alpha float32) {
	const op = "Axpy"
	wantF32(op, []string{"dst"}, dst)
	wantFloat(op, []string{"x"}, x)
	wantLen(op, "dst", dst, "x", x)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runElem(dst.Len(), elemLoop{kind: elemAxpy, dst: dst, x: x, alpha: alpha})
}

// sumReducer is Reduce's and Accumulate's body: blocks [lo, hi) of x.
type sumReducer struct {
	b    *Backend
	x    *backend.Tensor
	kind backend.ReduceKind
}

func (r *sumReducer) reduce(w, lo, hi int, acc []float64) {
	n := r.x.Len()
	for blk := lo; blk < hi; blk++ {
		i := blk * block
		v := view(r.x, i, min(block, n-i), r.b.buf(w, 0, block))
		switch r.kind {
		case backend.ReduceSum:
			acc[0] += vmath.Sum64(v)
		case backend.ReduceSumSquares:
			acc[0] += vmath.SumSq64(v)
		default:
			for _, e := range v {
				if math.IsNaN(float64(e)) || math.IsInf(float64(e), 0) {
					acc[0]++
				}
			}
		}
	}
}

// sumBlocks reduces x as kind in fixed blocks and chunks (b.mu held).
func (b *Backend) sumBlocks(x *backend.Tensor, kind backend.ReduceKind) float64 {
	r := &b.loops.sum
	*r = sumReducer{b: b, x: x, kind: kind}
	s := b.reduceRows((x.Len()+block-1)/block, 1, r)[0]
	*r = sumReducer{}
	return s
}

// Reduce adds a reduction of x (any float dtype) into dst[0] (F32 [1]),
// summing in float64 over fixed blocks and chunks:
//
//	ReduceSum: Σ x;  ReduceSumSquares: Σ x²;  ReduceNonFinite: #{x : ±Inf or NaN}
func (b *Backend) Reduce(dst, x *backend.Tensor, kind backend.ReduceKind) {
	const op = "Reduce"
	wantF32(op, []string{"dst"}, dst)
	wantShape(op, "dst", dst, 1)
	wantFloat(op, []string{"x"}, x)
	if kind != backend.ReduceSum && kind != backend.ReduceSumSquares && kind != backend.ReduceNonFinite {
		fail(op, "unknown kind %d", kind)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sumBlocks(x, kind)
	d := f32s(dst)
	d[0] = float32(float64(d[0]) + s)
}

package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
)

// grain is the smallest number of elements an elementwise goroutine handles.
const grain = 1 << 14

// block is the number of elements an elementwise op converts at a time.
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
	blocks(dst.Len(), func(i, n int, buf [3][]float32) {
		storeRange(dst, i, view(src, i, n, buf[0]))
	})
}

// Scale multiplies x (F32) in place: x *= s.
func (b *Backend) Scale(x *backend.Tensor, s float32) {
	wantF32("Scale", []string{"x"}, x)
	v := f32s(x)
	parallelFor(len(v), grain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v[i] *= s
		}
	})
}

// Axpy accumulates into dst (F32) a scaled x of any float dtype:
//
//	dst += alpha·x
func (b *Backend) Axpy(dst, x *backend.Tensor, alpha float32) {
	const op = "Axpy"
	wantF32(op, []string{"dst"}, dst)
	wantFloat(op, []string{"x"}, x)
	wantLen(op, "dst", dst, "x", x)
	d := f32s(dst)
	blocks(len(d), func(i, n int, buf [3][]float32) {
		xs := view(x, i, n, buf[0])
		ds := d[i : i+n]
		for j, v := range xs {
			ds[j] += alpha * v
		}
	})
}

// Reduce adds a reduction of x (any float dtype) into dst[0] (F32 [1]),
// summing in float64 over fixed chunks:
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
	n := x.Len()
	rows := (n + block - 1) / block
	sum := reduceRows(rows, 1, func(lo, hi int, acc []float64) {
		buf := make([]float32, block)
		var s float64
		for r := lo; r < hi; r++ {
			i := r * block
			for _, v := range view(x, i, min(block, n-i), buf) {
				switch kind {
				case backend.ReduceSum:
					s += float64(v)
				case backend.ReduceSumSquares:
					s += float64(v) * float64(v)
				default:
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						s++
					}
				}
			}
		}
		acc[0] = s
	})
	addInto(f32s(dst), sum)
}

// blocks runs fn over [0, n) in blocks of at most block elements, in
// parallel, giving each call three float32 buffers of block elements.
func blocks(n int, fn func(i, count int, buf [3][]float32)) {
	parallelFor(n, grain, func(lo, hi int) {
		var buf [3][]float32
		for j := range buf {
			buf[j] = make([]float32, block)
		}
		for i := lo; i < hi; i += block {
			fn(i, min(block, hi-i), buf)
		}
	})
}

package backendtest

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
)

// specialValues are float32 inputs at the edges of the formats: NaN, ±Inf,
// ±0, subnormals of each format, the F16 overflow threshold, ties that
// round to even both ways in BF16 and F16, and the float32 extremes.
var specialValues = []float64{
	math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1),
	0x1p-149, -0x1p-149, 0x1p-133, 0x1p-126, // float32 and bfloat16 subnormals, min normal
	0x1p-24, 0x1p-25, 0x1.8p-25, -0x1p-25, 0x1p-14, // float16 subnormals and the ties next to them
	65504, 65519.99, 65520, -65520, 1e6, // float16 max, overflow threshold
	1 + 0x1p-8, 1 + 0x3p-8, -(1 + 0x1p-8), // bfloat16 ties: to 1 (even), to 1+2^-6
	1 + 0x1p-11, 1 + 0x3p-11, // float16 ties
	math.MaxFloat32, -math.MaxFloat32, 0x1.fffffep127, 1.5,
}

// mixedValues returns n values: the special values, then random float32
// bit patterns (every exponent, NaNs included) and normal samples.
func (h *harness) mixedValues(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		switch {
		case i < len(specialValues):
			v[i] = float64(float32(specialValues[i]))
		case i%2 == 0:
			v[i] = float64(math.Float32frombits(h.rng.Uint32()))
		default:
			v[i] = h.rng.NormFloat64()
		}
	}
	return v
}

// castCase casts from every float dtype into the case's dtype; the result
// must be the exact round-to-nearest-even of the source value. The upload
// variant checks that Upload rounds unrounded float32 values the same way.
type castCase struct {
	n      int
	upload bool
}

func (c castCase) op() backend.Op { return backend.OpCast }
func (c castCase) name() string {
	if c.upload {
		return fmt.Sprintf("upload_n%d", c.n)
	}
	return fmt.Sprintf("n%d", c.n)
}

func (c castCase) run(h *harness) {
	if c.upload {
		raw := h.mixedValues(c.n)
		x := h.output("x", h.dt, c.n)
		h.b.Upload(x, narrow(raw))
		want := make([]float64, c.n)
		cast(want, raw, h.dt)
		h.check("Upload rounding", x, want, Tol{Exact: true})
		return
	}
	for _, src := range backend.FloatDTypes {
		x, xv := h.input("src_"+src.String(), src, h.mixedValues(c.n), c.n)
		out := h.output("dst", h.dt, c.n)
		h.b.Cast(out, x)
		want := make([]float64, c.n)
		cast(want, xv, h.dt)
		h.check("Cast from "+src.String(), out, want, Tol{Exact: true})
	}
}

// scaleCase: x *= s on an F32 tensor.
type scaleCase struct {
	n int
	s float32
}

func (c scaleCase) op() backend.Op { return backend.OpScale }
func (c scaleCase) name() string   { return fmt.Sprintf("n%d_s%g", c.n, c.s) }

func (c scaleCase) run(h *harness) {
	x, xv := h.accum("x", backend.F32, h.normal(c.n, 3), c.n)
	h.b.Scale(x, c.s)
	scale(xv, float64(c.s))
	h.check("Scale", x, xv, Tol{K: 1})
}

// axpyCase: dst (F32) += alpha·x (x in the case's dtype).
type axpyCase struct {
	n     int
	alpha float32
}

func (c axpyCase) op() backend.Op { return backend.OpAxpy }
func (c axpyCase) name() string   { return fmt.Sprintf("n%d_alpha%g", c.n, c.alpha) }

func (c axpyCase) run(h *harness) {
	dst, want := h.accum("dst", backend.F32, h.normal(c.n, 1), c.n)
	x, xv := h.input("x", h.dt, h.normal(c.n, 2), c.n)
	mag := abs(want)
	axpy(mag, abs(xv), math.Abs(float64(c.alpha)))
	h.b.Axpy(dst, x, c.alpha)
	axpy(want, xv, float64(c.alpha))
	h.check("Axpy", dst, want, Tol{K: 2, Mag: mag})
}

// reduceCase adds a reduction of x into dst[0], which starts non-zero.
// mean shifts the samples so sums do not cancel; the NonFinite kind mixes
// in NaN, ±Inf and values that overflow the narrower dtypes.
type reduceCase struct {
	n    int
	kind backend.ReduceKind
	mean float64
}

func (c reduceCase) op() backend.Op { return backend.OpReduce }
func (c reduceCase) name() string {
	kinds := map[backend.ReduceKind]string{
		backend.ReduceSum: "sum", backend.ReduceSumSquares: "sumsq", backend.ReduceNonFinite: "nonfinite",
	}
	return fmt.Sprintf("%s_n%d_mean%g", kinds[c.kind], c.n, c.mean)
}

func (c reduceCase) run(h *harness) {
	vals := h.normal(c.n, 1)
	for i := range vals {
		vals[i] += c.mean
	}
	start := h.normal(1, 10)
	if c.kind == backend.ReduceNonFinite {
		specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30, 1e5, -1e39}
		for i := 0; i < c.n/7+1 && c.n > 1; i++ {
			vals[h.rng.IntN(c.n)] = specials[i%len(specials)]
		}
		start = []float64{3}
	}
	x, xv := h.input("x", h.dt, vals, c.n)
	dst, want := h.accum("dst", backend.F32, start, 1)
	mag := abs(want)
	switch c.kind {
	case backend.ReduceSum:
		reduce(mag, abs(xv), backend.ReduceSum)
	case backend.ReduceSumSquares:
		reduce(mag, xv, backend.ReduceSumSquares)
	}
	h.b.Reduce(dst, x, c.kind)
	reduce(want, xv, c.kind)
	if c.kind == backend.ReduceNonFinite {
		h.check("Reduce", dst, want, Tol{Exact: true})
		return
	}
	h.check("Reduce", dst, want, Tol{K: c.n + 1, Mag: mag})
}

// reluSqCase: out = max(x,0)², dx = 2·max(x,0)·dout, over an arbitrary shape.
type reluSqCase struct{ shape []int }

func (c reluSqCase) op() backend.Op { return backend.OpReluSq }
func (c reluSqCase) name() string   { return fmt.Sprintf("shape%v", c.shape) }

func (c reluSqCase) run(h *harness) {
	n := 1
	for _, d := range c.shape {
		n *= d
	}
	x, xv := h.input("x", h.dt, h.normal(n, 2), c.shape...)
	out := h.output("out", h.dt, c.shape...)
	h.b.ReluSqForward(out, x)
	want := make([]float64, n)
	reluSqForward(want, xv)
	h.check("ReluSqForward", out, want, Tol{K: 1})

	dout, doutv := h.input("dout", h.dt, h.normal(n, 1), c.shape...)
	dx := h.output("dx", h.dt, c.shape...)
	h.b.ReluSqBackward(dx, dout, x)
	reluSqBackward(want, doutv, xv)
	h.check("ReluSqBackward", dx, want, Tol{K: 2})
}

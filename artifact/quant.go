package artifact

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/golf-ml/golf/backend"
)

// Quantization constants of the reference (train_gpt_mlx.py, QUANTIZATION).
const (
	// KeepFloatMaxNumel: float tensors with at most this many elements are
	// kept as floats instead of being quantized (INT8_KEEP_FLOAT_MAX_NUMEL).
	KeepFloatMaxNumel = 65_536
	// ClipPercentile is INT8_CLIP_PERCENTILE; the clip quantile is
	// ClipPercentile/100.
	ClipPercentile = 99.99984
	// QuantFormat names the scheme (the container's "__quant_format__").
	QuantFormat = "int8_clean_per_row_v1"
)

// Quantize schemes recorded in QMeta.
const SchemePerRow = "per_row"

// QMeta is the reference's per-tensor quantization metadata.
type QMeta struct {
	Scheme string `json:"scheme"`
	Axis   int    `json:"axis"`
}

// Quantized is the reference's quantized state dict, field for field, with
// numpy arrays as Arrays and the tensor order made explicit.
type Quantized struct {
	// Order lists every tensor name in the order Quantize saw them.
	Order []string
	// Quantized holds the int8 payload of each large float tensor, in the
	// tensor's own shape.
	Quantized map[string]Array
	// Scales: float16 (rows,) for per-row tensors, a float32 0-d scalar for
	// per-tensor ones.
	Scales map[string]Array
	// DTypes is the original dtype name of each quantized tensor.
	DTypes map[string]string
	// QMeta marks per-row tensors: {"scheme": "per_row", "axis": 0}.
	QMeta map[string]QMeta
	// Passthrough holds small float tensors (float32 for control tensors,
	// float16 otherwise) and non-float tensors unchanged.
	Passthrough map[string]Array
	// PassthroughOrigDTypes records the dtype of float32/bfloat16 tensors
	// stored as float16 in Passthrough.
	PassthroughOrigDTypes map[string]string
}

// Stats are the reference's quantization counters (same keys).
type Stats struct {
	ParamCount          int `json:"param_count"`
	NumTensors          int `json:"num_tensors"`
	NumFloatTensors     int `json:"num_float_tensors"` // quantized tensors only, as the reference counts
	NumNonfloatTensors  int `json:"num_nonfloat_tensors"`
	BaselineTensorBytes int `json:"baseline_tensor_bytes"`
	Int8PayloadBytes    int `json:"int8_payload_bytes"`
}

// clipQ is the clip quantile as numpy ≥ 2 uses it for float32 data: the
// Python float ClipPercentile/100.0 cast to float32.
var clipQ = func() float32 {
	p := ClipPercentile // a variable, so the division rounds like Python's
	return float32(p / 100.0)
}()

// inv127 is 1.0/127.0 (a Python float) cast to float32, the per-row scale
// floor.
var inv127 = func() float32 {
	one := 1.0
	return float32(one / 127.0)
}()

// Quantize is quantize_state_dict_int8: for each tensor in order,
//
//	non-float                        → Passthrough, unchanged
//	float, numel ≤ 65,536            → Passthrough: float32 if the name contains
//	                                   one of keepFloat32Patterns, else float16
//	                                   (float32/bfloat16 originals recorded in
//	                                   PassthroughOrigDTypes; float16 kept as is)
//	float, larger, 2-D (R, C)        → per row r:
//	                                     c_r = quantile(|x_r|, 0.9999984)
//	                                     s_r = max(c_r/127, 1/127)        (float32)
//	                                     q   = clip(rint(clip(x, ±c_r)/s_r), ±127)
//	                                   Scales[name] = float16(s) (R,)
//	float, larger, other ranks       → one scale: c = quantile(|x|, 0.9999984),
//	                                   s = c/127 (1 if c = 0), float32 scalar
//
// All arithmetic is float32 as numpy ≥ 2 does it for float32 arrays; the
// quantile is numpy's default 'linear' one (see quantileLinear). Note that q
// divides by the float32 scale while dequantization multiplies by the
// stored float16 one, as in the reference. Stats counts as the reference.
func Quantize(tensors []Tensor, keepFloat32Patterns []string) (*Quantized, Stats) {
	checkTensors(tensors)
	q := &Quantized{
		Quantized:             map[string]Array{},
		Scales:                map[string]Array{},
		DTypes:                map[string]string{},
		QMeta:                 map[string]QMeta{},
		Passthrough:           map[string]Array{},
		PassthroughOrigDTypes: map[string]string{},
	}
	var st Stats
	for _, t := range tensors {
		q.Order = append(q.Order, t.Name)
		st.ParamCount += t.Numel()
		st.NumTensors++
		st.BaselineTensorBytes += t.Nbytes()
		if !t.DType.IsFloat() {
			st.NumNonfloatTensors++
			a := t.ToArray()
			q.Passthrough[t.Name] = a
			st.Int8PayloadBytes += len(a.Data)
			continue
		}
		if t.Numel() <= KeepFloatMaxNumel {
			a := keepFloat(t, keepFloat32Patterns, q.PassthroughOrigDTypes)
			q.Passthrough[t.Name] = a
			st.Int8PayloadBytes += len(a.Data)
			continue
		}
		st.NumFloatTensors++
		qa, sa := quantizeFloat(t)
		if len(sa.Shape) > 0 {
			q.QMeta[t.Name] = QMeta{Scheme: SchemePerRow, Axis: 0}
		}
		q.Quantized[t.Name] = qa
		q.Scales[t.Name] = sa
		q.DTypes[t.Name] = t.DType.NumpyName()
		st.Int8PayloadBytes += len(qa.Data) + len(sa.Data)
	}
	return q, st
}

// keepFloat is keep_float_array: a small float tensor as stored in the
// passthrough dict.
func keepFloat(t Tensor, keepFloat32Patterns []string, origDTypes map[string]string) Array {
	for _, p := range keepFloat32Patterns {
		if p != "" && strings.Contains(t.Name, p) {
			return F32Array(t.Shape, t.Data)
		}
	}
	if t.DType == backend.F32 || t.DType == backend.BF16 {
		origDTypes[t.Name] = t.DType.NumpyName()
	}
	return F16Array(t.Shape, t.Data) // float16 originals: an exact copy
}

// quantizeFloat is quantize_float_array: int8 values and the scale array.
func quantizeFloat(t Tensor) (q, scale Array) {
	x := t.Data // float32 view of the tensor (_np_float32)
	qs := make([]int8, len(x))
	if len(t.Shape) == 2 {
		rows, cols := t.Shape[0], t.Shape[1]
		scales := make([]float32, rows) // (R) float32; stored as float16
		abs := make([]float32, cols)    // (C) scratch
		for r := range rows {
			xr := x[r*cols : (r+1)*cols] // (C)
			for j, v := range xr {
				abs[j] = float32(math.Abs(float64(v)))
			}
			c := quantileLinear(abs, clipQ)
			s := max32(float32(c/127), inv127)
			quantizeInto(qs[r*cols:(r+1)*cols], xr, c, s)
			scales[r] = s
		}
		return I8Array(t.Shape, qs), F16Array([]int{rows}, scales)
	}
	abs := make([]float32, len(x))
	for i, v := range x {
		abs[i] = float32(math.Abs(float64(v)))
	}
	var c float32
	if len(x) > 0 {
		c = quantileLinear(abs, clipQ)
	}
	s := float32(1)
	if c > 0 {
		s = float32(float64(c) / 127.0) // Python float division, then float32
	}
	quantizeInto(qs, x, c, s)
	return I8Array(t.Shape, qs), F32Array(nil, []float32{s})
}

// quantizeInto writes q_i = clip(rint(clip(x_i, -c, c) / s), -127, 127),
// every step in float32 and rint rounding half to even (np.round).
func quantizeInto(q []int8, x []float32, c, s float32) {
	for i, v := range x {
		v = min32(max32(v, -c), c)
		r := math.RoundToEven(float64(v / s))
		switch {
		case math.IsNaN(r):
			q[i] = 0 // numpy's int8 cast of NaN is undefined; weights are finite
		case r > 127:
			q[i] = 127
		case r < -127:
			q[i] = -127
		default:
			q[i] = int8(r)
		}
	}
}

// max32 and min32 are np.maximum and np.minimum: NaN in either operand
// gives NaN.
func max32(a, b float32) float32 {
	if a != a || b != b {
		return float32(math.NaN())
	}
	if a >= b {
		return a
	}
	return b
}

func min32(a, b float32) float32 {
	if a != a || b != b {
		return float32(math.NaN())
	}
	if a <= b {
		return a
	}
	return b
}

// quantileLinear is np.quantile(xs, q) with the default 'linear' method for
// float32 data and a float32 q, as numpy ≥ 2 computes it (everything in
// float32). xs may be reordered; a NaN anywhere gives NaN.
//
//	h = (n-1)·q,  lo = ⌊h⌋,  g = h - lo,  a = xs[lo],  b = xs[lo+1],  d = b - a
//	result = a + d·g        if g < 0.5
//	         b - d·(1 - g)  if g ≥ 0.5
//	         xs[n-1]        if h ≥ n-1
//
// (numpy 1.x did the interpolation in float64; results differ from it in
// the last bits of the quantile.)
func quantileLinear(xs []float32, q float32) float32 {
	n := len(xs)
	if n == 0 {
		panic("artifact: quantile of an empty slice")
	}
	for _, v := range xs {
		if v != v {
			return v
		}
	}
	// h is rounded to float32 before g = h - lo: without the conversion
	// the compiler may fuse the product into the subtraction (arm64 does),
	// and g would be exact where numpy's is rounded.
	h := float32(float32(n-1) * q)
	if h >= float32(n-1) {
		return slices.Max(xs)
	}
	lo := float32(math.Floor(float64(h)))
	g := h - lo
	a, b := orderStats(xs, int(lo))
	d := b - a
	// The explicit float32 conversions keep each product rounded on its own
	// (no fused multiply-add), as numpy's separate ufunc calls do.
	if g >= 0.5 {
		return b - float32(d*float32(1-g))
	}
	return a + float32(d*g)
}

// orderStats returns the elements of ascending rank k and k+1 of xs (no
// NaNs), i.e. sorted(xs)[k], sorted(xs)[k+1]. The clip quantile sits among
// the top few elements, so it keeps the n-k largest in a small sorted
// buffer, one pass over xs; far from the top it sorts xs in place.
func orderStats(xs []float32, k int) (float32, float32) {
	top := len(xs) - k // how many of the largest to keep, ≥ 2
	if top > 64 {
		slices.Sort(xs)
		return xs[k], xs[k+1]
	}
	var buf [64]float32
	kept := buf[:0] // the largest elements seen so far, ascending
	for _, v := range xs {
		if len(kept) < top {
			kept = append(kept, v)
			for i := len(kept) - 1; i > 0 && kept[i-1] > v; i-- {
				kept[i], kept[i-1] = kept[i-1], v
			}
			continue
		}
		if v <= kept[0] {
			continue
		}
		// Drop kept[0] and insert v, shifting the smaller ones down.
		i := 0
		for i+1 < top && kept[i+1] < v {
			kept[i] = kept[i+1]
			i++
		}
		kept[i] = v
	}
	return kept[0], kept[1]
}

// Dequantize is dequantize_state_dict_int8: the tensors in Order with float32
// values and their recorded dtypes.
//
//	per-row:      w[r, ...] = float32(q[r, ...]) · float32(scale16[r])
//	per-tensor:   w = float32(q) · scale
//	passthrough:  the stored values; float16 storage of a float32/bfloat16
//	              original is widened back to that dtype
//
// Values are rounded to the tensor's dtype as mx.array(·, dtype) does (a
// no-op for float32). Non-float passthrough tensors come back as they were.
// q must be well formed (as Quantize and LoadQuantized return it).
func Dequantize(q *Quantized) []Tensor {
	out := make([]Tensor, 0, len(q.Order))
	for _, name := range q.Order {
		if qa, ok := q.Quantized[name]; ok {
			out = append(out, dequantizeOne(name, qa, q.Scales[name], q.DTypes[name], q.QMeta[name]))
			continue
		}
		a, ok := q.Passthrough[name]
		if !ok {
			panic(fmt.Sprintf("artifact: Dequantize: %q is neither quantized nor passthrough", name))
		}
		t, err := TensorFromArray(name, a)
		if err != nil {
			panic("artifact: Dequantize: " + err.Error())
		}
		if orig, ok := q.PassthroughOrigDTypes[name]; ok {
			d, ok := dtypeFromName(orig)
			if !ok || !t.DType.IsFloat() {
				panic(fmt.Sprintf("artifact: Dequantize: %q: bad original dtype %q for %v storage", name, orig, a.Elem))
			}
			t.DType = d
			backend.RoundSlice(d, t.Data)
		}
		out = append(out, t)
	}
	return out
}

func dequantizeOne(name string, qa, sa Array, dtypeName string, meta QMeta) Tensor {
	d, ok := dtypeFromName(dtypeName)
	if !ok {
		panic(fmt.Sprintf("artifact: Dequantize: %q: unknown dtype %q", name, dtypeName))
	}
	qv := qa.Int8s()
	s := sa.Float32s()
	w := make([]float32, len(qv))
	if meta.Scheme == SchemePerRow || len(sa.Shape) > 0 {
		rows := qa.Shape[0]
		if len(s) != rows {
			panic(fmt.Sprintf("artifact: Dequantize: %q: %d scales for %d rows", name, len(s), rows))
		}
		inner := 0
		if rows > 0 {
			inner = len(qv) / rows
		}
		for r := range rows {
			for i := r * inner; i < (r+1)*inner; i++ {
				w[i] = float32(qv[i]) * s[r]
			}
		}
	} else {
		for i, v := range qv {
			w[i] = float32(v) * s[0]
		}
	}
	backend.RoundSlice(d, w)
	return Tensor{Name: name, Shape: cloneShape(qa.Shape), DType: d, Data: w}
}

package artifact

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// quantGolden is artifact/testdata/quant_golden.json, written by
// scripts/quant_golden.py (an independent numpy implementation of the
// reference's quantize/dequantize).
type quantGolden struct {
	NumpyVersion          string            `json:"numpy_version"`
	ClipQ                 float64           `json:"clip_q_float32"`
	Patterns              []string          `json:"keep_float32_patterns"`
	Order                 []string          `json:"order"`
	InputDTypes           map[string]string `json:"input_dtypes"`
	DTypes                map[string]string `json:"dtypes"`
	QMeta                 map[string]QMeta  `json:"qmeta"`
	PassthroughOrigDTypes map[string]string `json:"passthrough_orig_dtypes"`
	Stats                 Stats             `json:"stats"`
	Ties                  int               `json:"exact_ties_in_row_13"`
	Dequantized           map[string]struct {
		DType string   `json:"dtype"`
		Shape []int    `json:"shape"`
		CRC32 uint32   `json:"crc32"`
		First []uint32 `json:"first_bits"`
	} `json:"dequantized"`
}

func loadGolden(t *testing.T) (quantGolden, []Tensor, map[string]Array) {
	t.Helper()
	var g quantGolden
	js, err := os.ReadFile(filepath.Join("testdata", "quant_golden.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &g))
	in, err := ReadNPZ(filepath.Join("testdata", "quant_golden_in.npz"))
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join("testdata", "quant_golden_out.npz"))
	require.NoError(t, err)
	outs, err := ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)))
	require.NoError(t, err)
	out := map[string]Array{}
	for _, m := range outs {
		out[m.Name] = m.Array
	}
	return g, in, out
}

// sameArray fails unless got and want have the same element type, shape
// and bytes, reporting how many elements differ and the first one.
func sameArray(t *testing.T, what string, got, want Array) {
	t.Helper()
	if !assert.Equal(t, want.Elem, got.Elem, "%s: element type %v, want %v", what, got.Elem, want.Elem) ||
		!assert.Equal(t, nonNil(want.Shape), nonNil(got.Shape), "%s: shape", what) {
		return
	}
	if !bytes.Equal(got.Data, want.Data) && assertBits(t, what, arrayBits(got), arrayBits(want)) {
		assert.Fail(t, "the elements agree but the data bytes differ", what)
	}
}

func TestQuantizeGolden(t *testing.T) {
	g, in, out := loadGolden(t)
	require.Equal(t, g.ClipQ, float64(clipQ), "clip quantile against the golden's")
	require.NotZero(t, g.Ties, "golden data has no exact rounding ties; round-half-even is untested")
	names := make([]string, len(in))
	for i, x := range in {
		names[i] = x.Name
		require.Equal(t, g.InputDTypes[x.Name], x.DType.NumpyName(), "input %q: dtype read against the golden's", x.Name)
	}
	require.Equal(t, g.Order, names, "input order against the golden's")

	q, st := Quantize(in, g.Patterns)
	assert.Equal(t, g.Stats, st, "stats")
	assert.Equal(t, g.Order, q.Order, "order")
	assert.Equal(t, g.DTypes, q.DTypes, "dtypes")
	assert.Equal(t, g.QMeta, q.QMeta, "qmeta")
	assert.Equal(t, g.PassthroughOrigDTypes, q.PassthroughOrigDTypes, "passthrough_orig_dtypes")
	for _, x := range in {
		if w, ok := out["quantized/"+x.Name]; ok {
			sameArray(t, "quantized/"+x.Name, q.Quantized[x.Name], w)
			sameArray(t, "scales/"+x.Name, q.Scales[x.Name], out["scales/"+x.Name])
			sameArray(t, "clip_abs/"+x.Name, clipAbsOf(x), out["clip_abs/"+x.Name])
			continue
		}
		sameArray(t, "passthrough/"+x.Name, q.Passthrough[x.Name], out["passthrough/"+x.Name])
	}
	assert.Equal(t, len(in), len(q.Quantized)+len(q.Passthrough), "quantized + passthrough tensors")
	assert.Equal(t, len(q.Quantized), len(q.Scales), "one scale array per quantized tensor")

	deq := Dequantize(q)
	require.Equal(t, len(g.Order), len(deq), "dequantized tensors")
	for i, d := range deq {
		want := g.Dequantized[d.Name]
		assert.Equal(t, g.Order[i], d.Name, "dequantized %d: name", i)
		assert.Equal(t, want.DType, d.DType.NumpyName(), "dequantized %q: dtype", d.Name)
		assert.Equal(t, nonNil(want.Shape), nonNil(d.Shape), "dequantized %q: shape", d.Name)
		var crc uint32
		if d.DType == backend.I32 {
			crc = crc32.ChecksumIEEE(I32Array(d.Shape, d.Ints).Data)
		} else {
			crc = crc32.ChecksumIEEE(F32Array(d.Shape, d.Data).Data)
			require.GreaterOrEqual(t, len(d.Data), len(want.First), "dequantized %q: elements", d.Name)
			for j, b := range want.First {
				assert.Equal(t, b, math.Float32bits(d.Data[j]), "dequantized %q[%d] bits: %v, golden %v",
					d.Name, j, d.Data[j], math.Float32frombits(b))
			}
		}
		assert.Equal(t, want.CRC32, crc, "dequantized %q: crc32", d.Name)
	}
}

// clipAbsOf recomputes the clip value(s) Quantize uses for a large float
// tensor: per row for 2-D, one for other ranks.
func clipAbsOf(x Tensor) Array {
	abs := make([]float32, len(x.Data))
	for i, v := range x.Data {
		abs[i] = float32(math.Abs(float64(v)))
	}
	if len(x.Shape) != 2 {
		return F32Array(nil, []float32{quantileLinear(abs, clipQ)})
	}
	rows, cols := x.Shape[0], x.Shape[1]
	c := make([]float32, rows)
	for r := range rows {
		c[r] = quantileLinear(abs[r*cols:(r+1)*cols], clipQ)
	}
	return F32Array([]int{rows}, c)
}

func TestQuantileLinear(t *testing.T) {
	f := float32(math.NaN())
	for _, c := range []struct {
		xs   []float32
		q    float32
		want float32
	}{
		{[]float32{4, 1, 3, 2}, 0.5, 2.5}, // h = 1.5: b - (b-a)·0.5
		{[]float32{4, 1, 3, 2}, 0.25, 1.75},
		{[]float32{10, 0}, 0.1, 1},
		{[]float32{7}, 0.9, 7},
		{[]float32{1, 2, 3}, 1, 3}, // h = n-1
		{[]float32{1, f, 3}, 0.5, f},
	} {
		got := quantileLinear(slices.Clone(c.xs), c.q)
		if math.IsNaN(float64(c.want)) {
			assert.True(t, math.IsNaN(float64(got)), "quantile(%v, %v) = %v, want NaN", c.xs, c.q, got)
			continue
		}
		assert.Equal(t, math.Float32bits(c.want), math.Float32bits(got), "quantile(%v, %v) = %v, want %v", c.xs, c.q, got, c.want)
	}
	// Random data against a float64 oracle that uses the same float32 index
	// h: the only difference left is float32 rounding of the lerp.
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{2, 3, 31, 255, 256, 257, 1024, 65537} {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = float32(math.Abs(r.NormFloat64()) * math.Exp(3*r.NormFloat64()))
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		h := float32(n-1) * clipQ
		lo := int(h)
		g := float64(h) - float64(lo)
		want := float64(sorted[lo]) + (float64(sorted[lo+1])-float64(sorted[lo]))*g
		got := quantileLinear(xs, clipQ)
		assert.InDelta(t, want, float64(got), 2*float64(ulp32(float32(want))), "n=%d: quantile against the float64 oracle (2 ulp)", n)
		assert.GreaterOrEqual(t, got, sorted[lo], "n=%d: quantile within the order statistics it lerps", n)
		assert.LessOrEqual(t, got, sorted[lo+1], "n=%d: quantile within the order statistics it lerps", n)
	}
}

func ulp32(x float32) float32 {
	x = float32(math.Abs(float64(x)))
	return math.Nextafter32(x, float32(math.Inf(1))) - x
}

func TestQuantizeRules(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	big := KeepFloatMaxNumel + 1
	ts := []Tensor{
		randTensor(r, "blocks.0.attn.q_gain", backend.BF16, 1, 4),                          // control, bf16: float32, no record
		randTensor(r, "blocks.0.norm", backend.F32, 1, 8),                                  // small f32: float16, recorded
		randTensor(r, "blocks.0.half", backend.F16, 1, 8),                                  // small f16: copied, no record
		randTensor(r, "blocks.0.skip_weights_x", backend.F32, 1, 2, 2),                     // control by substring
		randTensor(r, "edge", backend.F32, 1, 256, 256),                                    // exactly 65,536: kept
		randTensor(r, "wide", backend.F32, 0.1, 1, big),                                    // 2-D, one row: per-row
		randTensor(r, "cube", backend.BF16, 0.1, 1, 1, big),                                // 3-D: per-tensor
		intTensor(r, "ids", 5),                                                             // non-float
		{Name: "zeros", Shape: []int{big}, DType: backend.F32, Data: make([]float32, big)}, // c = 0: scale 1
	}
	q, st := Quantize(ts, []string{"q_gain", "", "skip_weights"})
	wantPass := map[string]Elem{"blocks.0.attn.q_gain": ElemF4, "blocks.0.norm": ElemF2, "blocks.0.half": ElemF2,
		"blocks.0.skip_weights_x": ElemF4, "edge": ElemF2, "ids": ElemI4}
	for name, e := range wantPass {
		if a, ok := q.Passthrough[name]; assert.True(t, ok, "passthrough %q is present", name) {
			assert.Equal(t, e, a.Elem, "passthrough %q: element type %v, want %v", name, a.Elem, e)
		}
	}
	assert.Equal(t, map[string]string{"blocks.0.norm": "float32", "edge": "float32"}, q.PassthroughOrigDTypes, "passthrough_orig_dtypes")
	assert.Equal(t, map[string]string{"wide": "float32", "cube": "bfloat16", "zeros": "float32"}, q.DTypes, "dtypes")
	assert.Equal(t, map[string]QMeta{"wide": {SchemePerRow, 0}}, q.QMeta, "qmeta")
	assert.Equal(t, ElemF2, q.Scales["wide"].Elem, "per-row scale: float16")
	assert.Equal(t, []int{1}, q.Scales["wide"].Shape, "per-row scale: one per row")
	assert.Equal(t, ElemF4, q.Scales["cube"].Elem, "per-tensor scale: float32")
	assert.Empty(t, q.Scales["cube"].Shape, "per-tensor scale: 0-d")
	assert.Equal(t, float32(1), q.Scales["zeros"].Float32s()[0], "all-zero tensor: scale")
	params := 4 + 8 + 8 + 4 + 65536 + 3*big + 5
	want := Stats{
		ParamCount: params, NumTensors: 9, NumFloatTensors: 3, NumNonfloatTensors: 1,
		BaselineTensorBytes: 4*2 + 8*4 + 8*2 + 4*4 + 65536*4 + big*4 + big*2 + 5*4 + big*4,
		Int8PayloadBytes:    4*4 + 8*2 + 8*2 + 4*4 + 65536*2 + (big + 2) + (big + 4) + 5*4 + (big + 4),
	}
	assert.Equal(t, want, st, "stats")
	// Dequantized dtypes: control bf16 comes back float32 (as the reference's
	// mx.array of a float32 numpy array), the rest as recorded.
	wantD := map[string]backend.DType{"blocks.0.attn.q_gain": backend.F32, "blocks.0.norm": backend.F32,
		"blocks.0.half": backend.F16, "cube": backend.BF16, "ids": backend.I32}
	for _, d := range Dequantize(q) {
		if w, ok := wantD[d.Name]; ok {
			assert.Equal(t, w, d.DType, "dequantized %q: dtype %v, want %v", d.Name, d.DType, w)
		}
	}
}

// TestDequantizeError checks the quantization error bound on a realistic
// weight matrix: |w - x| ≤ s/2 plus float16 scale rounding, except for the
// clipped row maxima, which saturate at ±127·s.
func TestDequantizeError(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	x := randTensor(r, "w", backend.F32, 0.02, 300, 256)
	x.Data[5] = 3 // an outlier in row 0
	q, _ := Quantize([]Tensor{x}, nil)
	w := Dequantize(q)[0]
	s := q.Scales["w"].Float32s()
	require.Len(t, w.Data, len(x.Data))
	require.Len(t, s, 300, "one scale per row")
	bad, clipped := 0, 0
	for i, v := range x.Data {
		row := i / 256
		step := float64(s[row])
		err := math.Abs(float64(w.Data[i]) - float64(v))
		if math.Abs(float64(v)) > 127*step {
			clipped++
			if math.Abs(float64(w.Data[i])) != float64(float32(127*s[row])) {
				if bad++; bad <= 5 {
					assert.Failf(t, "a clipped element does not saturate", "element %d (%v) beyond the clip: dequantized %v, want ±127·%v", i, v, w.Data[i], s[row])
				}
			}
			continue
		}
		if err > step*(0.5+127*0x1p-11)+1e-12 {
			if bad++; bad <= 5 {
				assert.Failf(t, "error beyond half a step", "element %d: |%v - %v| = %v > step %v", i, w.Data[i], v, err, step)
			}
		}
	}
	assert.Zero(t, bad, "elements (of %d) outside the bound", len(x.Data))
	// The outlier at least lies beyond its row's clip, so the saturation
	// branch is exercised.
	assert.Positive(t, clipped, "elements beyond the clip")
}

func TestOrderStats(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{2, 3, 5, 64, 65, 66, 200, 1000} {
		for _, distinct := range []int{2, 5, 1 << 20} { // heavy ties and none
			xs := make([]float32, n)
			for i := range xs {
				xs[i] = float32(r.IntN(distinct)) - float32(distinct/2)
			}
			sorted := slices.Clone(xs)
			slices.Sort(sorted)
			for _, k := range []int{0, n / 2, n - 66, n - 65, n - 64, n - 3, n - 2} {
				if k < 0 || k > n-2 {
					continue
				}
				a, b := orderStats(slices.Clone(xs), k)
				require.Equal(t, sorted[k:k+2], []float32{a, b}, "n=%d distinct=%d k=%d: order statistics k and k+1", n, distinct, k)
			}
		}
	}
}

package artifact

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// modelLike is a small state with every kind of entry the container holds.
func modelLike() []Tensor {
	r := rand.New(rand.NewPCG(11, 12))
	big := KeepFloatMaxNumel + 64
	ts := []Tensor{
		randTensor(r, "tok_emb.weight", backend.F32, 0.02, big/64, 64),
		randTensor(r, "blocks.0.attn_scale", backend.F32, 1, 64),
		randTensor(r, "blocks.0.attn.q_gain", backend.F32, 1, 4),
		randTensor(r, "blocks.0.norm_like", backend.F32, 1, 64),
		randTensor(r, "blocks.0.half", backend.F16, 1, 3, 5),
		randTensor(r, "blocks.0.attn.c_v.weight", backend.F16, 0.1, big/32, 32),
		randTensor(r, "vector", backend.F32, 0.5, big),
		intTensor(r, "ids", 6),
	}
	ts[0].Data[17] = 9 // a clipped outlier
	return ts
}

var testPatterns = []string{"attn_scale", "q_gain"}

func TestQuantizedRoundTrip(t *testing.T) {
	ts := modelLike()
	q, _ := Quantize(ts, testPatterns)
	p := filepath.Join(t.TempDir(), "m.int8.ptz")
	fileBytes, rawBytes, err := SaveQuantized(p, q)
	require.NoError(t, err)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	raw, err := EncodeQuantized(q)
	require.NoError(t, err)
	assert.Equal(t, fi.Size(), int64(fileBytes), "file size SaveQuantized reports")
	assert.Equal(t, len(raw), rawBytes, "raw size SaveQuantized reports")
	blob, err := os.ReadFile(p)
	require.NoError(t, err)
	zr, err := zlib.NewReader(bytes.NewReader(blob))
	require.NoError(t, err)
	unz, err := io.ReadAll(zr)
	require.NoError(t, err, "inflating the file")
	// bytes.Equal rather than assert.Equal: a failure would print both blobs.
	assert.True(t, bytes.Equal(unz, raw), "file is not zlib(EncodeQuantized(q))")
	got, err := LoadQuantized(p)
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(got, q), "LoadQuantized(SaveQuantized(q)) != q")
	equalTensors(t, Dequantize(got), Dequantize(q))
}

// pythonLoader extracts the documented Python loader from doc.go.
func pythonLoader(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var lines []string
	in := false
	for _, l := range strings.Split(string(src), "\n") {
		code, ok := strings.CutPrefix(l, "//\t")
		if strings.HasPrefix(code, "import io, json, zlib") {
			in = true
		}
		if in {
			if !ok {
				break
			}
			lines = append(lines, code)
		}
	}
	require.True(t, len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], "state = "),
		"doc.go: Python loader not found (got %q)", lines)
	return strings.Join(lines, "\n")
}

// TestDocumentedPythonLoader runs the loader quoted in doc.go on a real
// container and compares what it returns with Dequantize, bit for bit.
func TestDocumentedPythonLoader(t *testing.T) {
	numpyPython(t)
	ts := modelLike()
	q, _ := Quantize(ts, testPatterns)
	p := filepath.Join(t.TempDir(), "m.int8.ptz")
	_, _, err := SaveQuantized(p, q)
	require.NoError(t, err)
	loader := strings.Replace(pythonLoader(t), `"model.int8.ptz"`, "sys.argv[1]", 1)
	prog := "import sys\n" + loader + `
out = {"files": z.files, "state": {}}
for n, a in state.items():
    a = np.ascontiguousarray(a)
    bits = a.reshape(-1).astype(np.int64) if a.dtype.kind == "i" else a.view({4: np.uint32, 2: np.uint16}[a.itemsize]).reshape(-1).astype(np.int64)
    out["state"][n] = {"dtype": a.dtype.str, "shape": list(a.shape), "bits": bits.tolist()}
print(json.dumps(out))
`
	var got struct {
		Files []string           `json:"files"`
		State map[string]npyBits `json:"state"`
	}
	require.NoError(t, json.Unmarshal(runPython(t, prog, p), &got))
	require.GreaterOrEqual(t, len(got.Files), 3, "numpy keys %v", got.Files)
	assert.Equal(t, []string{"__meta__", "quantized/tok_emb.weight", "scales/tok_emb.weight"}, got.Files[:3], "first numpy keys")
	for _, d := range Dequantize(q) {
		py := got.State[d.Name]
		var want []int64
		wantDType := map[backend.DType]string{backend.F32: "<f4", backend.F16: "<f2", backend.I32: "<i4"}[d.DType]
		switch d.DType {
		case backend.I32:
			want = arrayBits(I32Array(d.Shape, d.Ints))
		case backend.F16:
			if _, quantized := q.Quantized[d.Name]; quantized {
				// The loader leaves quantized float16 tensors in float32
				// (w = q·s); Dequantize rounds them to float16 as MLX does.
				wantDType = "<f4"
				w := Dequantize(&Quantized{Order: []string{d.Name}, Quantized: q.Quantized, Scales: q.Scales,
					DTypes: map[string]string{d.Name: "float32"}, QMeta: q.QMeta})[0]
				want = arrayBits(F32Array(w.Shape, w.Data))
				break
			}
			want = arrayBits(F16Array(d.Shape, d.Data))
		default:
			want = arrayBits(F32Array(d.Shape, d.Data))
		}
		if !assert.Equal(t, wantDType, py.DType, "%s: dtype from the loader", d.Name) ||
			!assert.Equal(t, nonNil(d.Shape), nonNil(py.Shape), "%s: shape from the loader", d.Name) {
			continue
		}
		assertBits(t, d.Name+": the loader's bits against Dequantize's", py.Bits, want)
	}
}

// rewrite re-encodes a valid container after edit changes its members.
func rewrite(t *testing.T, q *Quantized, edit func(members []NamedArray) []NamedArray) []byte {
	t.Helper()
	raw, err := EncodeQuantized(q)
	require.NoError(t, err)
	ms, err := ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, WriteNPZ(&b, edit(ms), false))
	return b.Bytes()
}

func setMeta(t *testing.T, ms []NamedArray, edit func(m map[string]any)) []NamedArray {
	var m map[string]any
	require.NoError(t, json.Unmarshal(ms[0].Array.Data, &m))
	edit(m)
	js, _ := json.Marshal(m)
	ms[0].Array = Array{Elem: ElemU1, Shape: []int{len(js)}, Data: js}
	return ms
}

func TestDecodeQuantizedErrors(t *testing.T) {
	q, _ := Quantize(modelLike(), testPatterns)
	_, err := DecodeQuantized(rewrite(t, q, func(ms []NamedArray) []NamedArray { return ms }))
	require.NoError(t, err, "unchanged container")
	find := func(ms []NamedArray, name string) int {
		for i, m := range ms {
			if m.Name == name {
				return i
			}
		}
		require.FailNow(t, "no member "+name)
		return -1
	}
	for name, edit := range map[string]func([]NamedArray) []NamedArray{
		"no meta": func(ms []NamedArray) []NamedArray { return ms[1:] },
		"wrong format": func(ms []NamedArray) []NamedArray {
			return setMeta(t, ms, func(m map[string]any) { m["__quant_format__"] = "int4" })
		},
		"unknown meta key": func(ms []NamedArray) []NamedArray {
			return setMeta(t, ms, func(m map[string]any) { m["extra"] = 1 })
		},
		"name missing from order": func(ms []NamedArray) []NamedArray {
			return setMeta(t, ms, func(m map[string]any) { m["order"] = m["order"].([]any)[1:] })
		},
		"duplicate in order": func(ms []NamedArray) []NamedArray {
			return setMeta(t, ms, func(m map[string]any) { m["order"] = append(m["order"].([]any), "ids") })
		},
		"bad dtype": func(ms []NamedArray) []NamedArray {
			return setMeta(t, ms, func(m map[string]any) { m["dtypes"].(map[string]any)["vector"] = "float64" })
		},
		"qmeta on a passthrough": func(ms []NamedArray) []NamedArray {
			return setMeta(t, ms, func(m map[string]any) {
				m["qmeta"].(map[string]any)["ids"] = map[string]any{"scheme": "per_row", "axis": 0}
			})
		},
		"no scales": func(ms []NamedArray) []NamedArray {
			i := find(ms, "scales/vector")
			return append(ms[:i], ms[i+1:]...)
		},
		"per-row scale of wrong length": func(ms []NamedArray) []NamedArray {
			i := find(ms, "scales/tok_emb.weight")
			ms[i].Array = F16Array([]int{3}, []float32{1, 2, 3})
			return ms
		},
		"int8 passthrough": func(ms []NamedArray) []NamedArray {
			i := find(ms, "passthrough/ids")
			ms[i].Array = I8Array([]int{1}, []int8{1})
			return ms
		},
		"float payload": func(ms []NamedArray) []NamedArray {
			i := find(ms, "quantized/vector")
			ms[i].Array = F32Array([]int{1}, []float32{1})
			return ms
		},
		"stray member": func(ms []NamedArray) []NamedArray {
			return append(ms, NamedArray{Name: "passthrough/ghost", Array: F32Array([]int{1}, []float32{1})})
		},
		"both kinds": func(ms []NamedArray) []NamedArray {
			return append(ms, NamedArray{Name: "passthrough/vector", Array: F32Array([]int{1}, []float32{1})})
		},
	} {
		_, err := DecodeQuantized(rewrite(t, q, edit))
		assert.Error(t, err, name)
	}

	dir := t.TempDir()
	for name, blob := range map[string][]byte{
		"not zlib":  []byte("plain bytes"),
		"truncated": truncatedZlib(t, q),
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".ptz")
		require.NoError(t, os.WriteFile(p, blob, 0o644))
		_, err := LoadQuantized(p)
		assert.ErrorContains(t, err, p, "%s: the error names the file", name)
	}
}

func truncatedZlib(t *testing.T, q *Quantized) []byte {
	p := filepath.Join(t.TempDir(), "full.ptz")
	_, _, err := SaveQuantized(p, q)
	require.NoError(t, err)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b[:len(b)/2]
}

// TestQuantizedSizeAgainstPythonZlib reports how Go's level-9 zlib compares
// with Python's on the same container bytes; both must decompress to them.
func TestQuantizedSizeAgainstPythonZlib(t *testing.T) {
	numpyPython(t)
	q, _ := Quantize(modelLike(), testPatterns)
	dir := t.TempDir()
	p := filepath.Join(dir, "m.int8.ptz")
	fileBytes, rawBytes, err := SaveQuantized(p, q)
	require.NoError(t, err)
	out := runPython(t, `
import sys, zlib
raw = zlib.decompress(open(sys.argv[1], "rb").read())
print(len(raw), len(zlib.compress(raw, 9)))
`, p)
	var pyRaw, pyZ int
	_, err = fmt.Sscan(string(out), &pyRaw, &pyZ)
	require.NoError(t, err)
	assert.Equal(t, rawBytes, pyRaw, "bytes Python decompresses against the raw size SaveQuantized reports")
	ratio := float64(fileBytes) / float64(pyZ)
	t.Logf("zlib level 9: Go %d bytes, Python %d bytes (%.4fx)", fileBytes, pyZ, ratio)
	assert.InDelta(t, 1, ratio, 0.05, "Go's compressed size over Python's")
}

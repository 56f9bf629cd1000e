package artifact

import (
	"bytes"
	"compress/zlib"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// fuzzCap is the byte cap every fuzz target reads under: an accepted input
// never decodes to more, whatever it declares.
const fuzzCap = 1 << 20

// The seed corpora live in testdata/fuzz/<target>/: the artifacts of a real
// two-step run (golf train --num-layers 2 --model-dim 8 --num-heads 2
// --num-kv-heads 1 --train-seq-len 32 --train-batch-tokens 256
// --grad-accum-steps 1 --iterations 3 --warmup-steps 0, copied in with
// -fuzz-seeds-run), small synthetic ones covering every member kind, and
// broken ones (truncations, lying headers, bombs). -fuzz-seeds rewrites the
// synthetic and broken seeds.
var (
	writeSeeds = flag.Bool("fuzz-seeds", false, "rewrite the synthetic fuzz seed corpora under testdata/fuzz")
	seedRun    = flag.String("fuzz-seeds-run", "", "prefix of a real run's artifacts (…_model.npz, …_model.int8.ptz) to add to the seed corpora")
)

// FuzzReadNPY: ReadNPY never panics; an accepted stream decodes to at most
// the cap, its data matches its shape, and writing it back reads back the
// same array.
func FuzzReadNPY(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ReadNPY(bytes.NewReader(data), MaxBytes(fuzzCap))
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(a.Data), fuzzCap, "accepted data bytes under the cap")
		require.Equal(t, a.Numel()*a.Elem.Size(), len(a.Data), "data bytes for shape %v %v", a.Shape, a.Elem)
		var b bytes.Buffer
		require.NoError(t, WriteNPY(&b, a), "WriteNPY of an accepted array")
		back, err := ReadNPY(&b, MaxBytes(fuzzCap+npyMaxHeader+16))
		require.NoError(t, err, "round trip")
		require.True(t, sameArrays(a, back), "round trip changed the array")
	})
}

// FuzzReadNPZArrays: the same properties for whole archives, the cap
// applying to all members together.
func FuzzReadNPZArrays(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ReadNPZArrays(bytes.NewReader(data), int64(len(data)), MaxBytes(fuzzCap))
		if err != nil {
			return
		}
		total := 0
		for _, m := range ms {
			total += len(m.Array.Data)
		}
		require.LessOrEqual(t, total, fuzzCap, "accepted bytes of arrays under the cap")
		var b bytes.Buffer
		require.NoError(t, WriteNPZ(&b, ms, false), "WriteNPZ of accepted members")
		back, err := ReadNPZArrays(bytes.NewReader(b.Bytes()), int64(b.Len()))
		require.NoError(t, err, "round trip")
		require.Len(t, back, len(ms), "round trip")
		for i := range ms {
			require.Equal(t, ms[i].Name, back[i].Name, "round trip: member %d", i)
			require.True(t, sameArrays(back[i].Array, ms[i].Array), "round trip: member %d differs", i)
		}
	})
}

// FuzzDecodeQuantized: an inflated container. Decoding never panics; an
// accepted container dequantizes without panicking into tensors whose data
// match their shapes, encodes back to an equal container, and the streaming
// inspector, when it also accepts the bytes, sees the same members.
func FuzzDecodeQuantized(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		q, err := DecodeQuantized(raw, MaxBytes(fuzzCap))
		infos, serr := scanZip(bytes.NewReader(raw), newLimits([]ReadOption{MaxBytes(fuzzCap)}))
		if err != nil {
			return
		}
		for _, tns := range Dequantize(q) {
			if n := tns.Numel(); len(tns.Data) != n && len(tns.Ints) != n {
				require.Failf(t, "dequantized data do not match the shape", "%s: %d values for shape %v", tns.Name, max(len(tns.Data), len(tns.Ints)), tns.Shape)
			}
		}
		enc, err := EncodeQuantized(q)
		require.NoError(t, err, "EncodeQuantized of an accepted container")
		back, err := DecodeQuantized(enc)
		require.NoError(t, err, "round trip")
		// reflect.DeepEqual, not require.Equal: a failure need not dump a megabyte of members.
		require.True(t, reflect.DeepEqual(normalized(back), normalized(q)), "round trip changed the container")
		if serr != nil {
			return
		}
		ms, _ := ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)))
		require.Len(t, ms, len(infos), "members the decoder read, against the inspector")
		for i, m := range ms {
			require.Equal(t, infos[i].Name, m.Name, "member %d: name, inspector against decoder", i)
			require.Equal(t, infos[i].Elem, m.Array.Elem, "member %d (%s): element type, inspector against decoder", i, m.Name)
			require.Equal(t, infos[i].Shape, m.Array.Shape, "member %d (%s): shape, inspector against decoder", i, m.Name)
		}
	})
}

// FuzzReadQuantized: the compressed container. Inflating stops at the cap;
// what is accepted decodes under it.
func FuzzReadQuantized(f *testing.F) {
	f.Fuzz(func(t *testing.T, blob []byte) {
		q, err := ReadQuantized(bytes.NewReader(blob), MaxBytes(fuzzCap))
		if err != nil {
			return
		}
		total := 0
		for _, m := range []map[string]Array{q.Quantized, q.Scales, q.Passthrough} {
			for _, a := range m {
				total += len(a.Data)
			}
		}
		require.LessOrEqual(t, total, fuzzCap, "accepted bytes of arrays under the cap")
		Dequantize(q)
	})
}

// normalized makes nil and empty maps and shapes compare equal.
func normalized(q *Quantized) *Quantized {
	c := *q
	norm := func(m map[string]Array) map[string]Array {
		out := map[string]Array{}
		for k, a := range m {
			a.Shape = append([]int{}, a.Shape...)
			out[k] = a
		}
		return out
	}
	c.Quantized, c.Scales, c.Passthrough = norm(q.Quantized), norm(q.Scales), norm(q.Passthrough)
	c.DTypes, c.QMeta, c.PassthroughOrigDTypes = orEmpty(q.DTypes), orEmpty(q.QMeta), orEmpty(q.PassthroughOrigDTypes)
	if c.Order == nil {
		c.Order = []string{}
	}
	return &c
}

func sameArrays(a, b Array) bool {
	return a.Elem == b.Elem && reflect.DeepEqual(append([]int{}, a.Shape...), append([]int{}, b.Shape...)) && bytes.Equal(a.Data, b.Data)
}

// smallContainer has one member of every kind: a per-row and a per-tensor
// quantized tensor, float32, float16 (with a float32 original) and int32
// passthroughs.
func smallContainer() *Quantized {
	return &Quantized{
		Order: []string{"w", "v", "scale", "half", "ids"},
		Quantized: map[string]Array{
			"w": I8Array([]int{2, 3}, []int8{1, -2, 127, -127, 0, 5}),
			"v": I8Array([]int{4}, []int8{3, 2, 1, 0}),
		},
		Scales: map[string]Array{
			"w": F16Array([]int{2}, []float32{0.5, 0.25}),
			"v": F32Array(nil, []float32{0.125}),
		},
		DTypes:                map[string]string{"w": "float32", "v": "bfloat16"},
		QMeta:                 map[string]QMeta{"w": {Scheme: SchemePerRow, Axis: 0}},
		Passthrough:           map[string]Array{"scale": F32Array([]int{2}, []float32{1, 2}), "half": F16Array([]int{1}, []float32{3}), "ids": I32Array([]int{2}, []int32{7, -1})},
		PassthroughOrigDTypes: map[string]string{"half": "float32"},
	}
}

// TestFuzzSeeds checks that every target has a seed corpus, and with
// -fuzz-seeds (or -fuzz-seeds-run) writes them.
func TestFuzzSeeds(t *testing.T) {
	if *writeSeeds || *seedRun != "" {
		writeSeedCorpora(t)
	}
	for _, target := range []string{"FuzzReadNPY", "FuzzReadNPZArrays", "FuzzDecodeQuantized", "FuzzReadQuantized"} {
		entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", target))
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(entries), 5, "%s has too few seeds", target)
	}
}

func writeSeedCorpora(t *testing.T) {
	seeds := map[string]map[string][]byte{}
	add := func(target, name string, data []byte) {
		if seeds[target] == nil {
			seeds[target] = map[string][]byte{}
		}
		seeds[target][name] = data
	}
	npy := func(a Array) []byte {
		var b bytes.Buffer
		require.NoError(t, WriteNPY(&b, a))
		return b.Bytes()
	}
	zl := func(raw []byte) []byte {
		var b bytes.Buffer
		zw, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
		zw.Write(raw)
		zw.Close()
		return b.Bytes()
	}
	f4 := npy(F32Array([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}))
	add("FuzzReadNPY", "f4_2x3", f4)
	add("FuzzReadNPY", "f2_scalar", npy(F16Array(nil, []float32{1.5})))
	add("FuzzReadNPY", "bf16", npy(BF16Array([]int{3}, []float32{1, -2, 3})))
	add("FuzzReadNPY", "i1", npy(I8Array([]int{4}, []int8{-1, 0, 1, 127})))
	add("FuzzReadNPY", "i4_empty", npy(I32Array([]int{0, 3}, nil)))
	add("FuzzReadNPY", "fortran_v2", npyStream(2, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", make([]byte, 16)))
	add("FuzzReadNPY", "huge_shape", npyStream(1, f4Header("(1099511627776, 1024)"), make([]byte, 8)))
	add("FuzzReadNPY", "truncated", f4[:len(f4)-3])
	add("FuzzReadNPY", "bad_descr", npyStream(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }\n", make([]byte, 8)))

	var npz bytes.Buffer
	require.NoError(t, WriteNPZ(&npz, []NamedArray{{Name: "a", Array: F32Array([]int{2}, []float32{1, 2})}, {Name: "b/c", Array: I8Array([]int{1}, []int8{3})}}, false))
	add("FuzzReadNPZArrays", "stored", npz.Bytes())
	var defl bytes.Buffer
	require.NoError(t, WriteNPZ(&defl, []NamedArray{{Name: "a", Array: F32Array([]int{3}, []float32{1, 2, 3})}}, true))
	add("FuzzReadNPZArrays", "deflate", defl.Bytes())
	add("FuzzReadNPZArrays", "truncated", npz.Bytes()[:npz.Len()-10])
	add("FuzzReadNPZArrays", "lying_header", zipOf(t, member{"x.npy", npyStream(1, f4Header("(100000,)"), make([]byte, 8)), false}))
	add("FuzzReadNPZArrays", "deflate_bomb", zipOf(t, member{"w.npy", npyStream(1, f4Header("(1048576,)"), make([]byte, 4<<20)), true}))

	raw, err := EncodeQuantized(smallContainer())
	require.NoError(t, err)
	add("FuzzDecodeQuantized", "small", raw)
	add("FuzzDecodeQuantized", "truncated", raw[:len(raw)/2])
	flipped := append([]byte{}, raw...)
	flipped[len(flipped)/3] ^= 0x40
	add("FuzzDecodeQuantized", "flipped", flipped)
	add("FuzzDecodeQuantized", "npz_not_container", npz.Bytes())
	add("FuzzReadQuantized", "small", zl(raw))
	add("FuzzReadQuantized", "zeros_bomb", zl(make([]byte, 4<<20)))
	add("FuzzReadQuantized", "not_zlib", []byte("plain bytes"))
	blob := zl(raw)
	add("FuzzReadQuantized", "truncated", blob[:len(blob)-5])

	if *seedRun != "" {
		p, err := os.ReadFile(*seedRun + "_model.npz")
		require.NoError(t, err)
		add("FuzzReadNPZArrays", "run_model_npz", p)
		ms, err := ReadNPZArrays(bytes.NewReader(p), int64(len(p)))
		require.NoError(t, err)
		add("FuzzReadNPY", "run_"+ms[len(ms)-1].Name, npy(ms[len(ms)-1].Array))
		z, err := os.ReadFile(*seedRun + "_model.int8.ptz")
		require.NoError(t, err)
		add("FuzzReadQuantized", "run_model_int8_ptz", z)
		zr, err := zlib.NewReader(bytes.NewReader(z))
		require.NoError(t, err)
		var r bytes.Buffer
		_, err = r.ReadFrom(zr)
		require.NoError(t, err)
		add("FuzzDecodeQuantized", "run_model_int8_raw", r.Bytes())
	}
	for target, files := range seeds {
		dir := filepath.Join("testdata", "fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for name, data := range files {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
		}
	}
}

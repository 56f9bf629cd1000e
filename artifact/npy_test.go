package artifact

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNPYHeaderLayout(t *testing.T) {
	for _, tc := range []struct {
		elem  Elem
		shape []int
		dict  string
	}{
		{ElemF4, []int{3, 4}, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"},
		{ElemF2, []int{7}, "{'descr': '<f2', 'fortran_order': False, 'shape': (7,), }"},
		{ElemI1, nil, "{'descr': '|i1', 'fortran_order': False, 'shape': (), }"},
		{ElemBF16, []int{2, 3, 4}, "{'descr': '<V2', 'fortran_order': False, 'shape': (2, 3, 4), }"},
	} {
		var b bytes.Buffer
		a := Array{Elem: tc.elem, Shape: tc.shape, Data: make([]byte, numel(tc.shape)*tc.elem.Size())}
		require.NoError(t, WriteNPY(&b, a))
		raw := b.Bytes()
		require.Greater(t, len(raw), 10, "%v: stream length", tc.shape)
		hlen := int(binary.LittleEndian.Uint16(raw[8:10]))
		require.GreaterOrEqual(t, len(raw), 10+hlen, "%v: stream length with the header", tc.shape)
		assert.Equal(t, "\x93NUMPY\x01\x00", string(raw[:8]), "%v: preamble", tc.shape)
		assert.Zero(t, (10+hlen)%64, "%v: data starts at %d, want a multiple of 64", tc.shape, 10+hlen)
		assert.Equal(t, byte('\n'), raw[10+hlen-1], "%v: the header ends in a newline", tc.shape)
		h := string(raw[10 : 10+hlen])
		require.Equal(t, tc.dict, strings.TrimRight(h, " \n"), "%v: header", tc.shape)
		// MLX's loader reads the descr at byte 11 and fortran_order at 34.
		assert.Equal(t, tc.elem.Descr(), h[11:14], "header %q: descr where mx.load looks", h)
		assert.Equal(t, byte('F'), h[34], "header %q: fortran_order where mx.load looks", h)
		assert.Equal(t, 10+hlen+len(a.Data), len(raw), "%v: stream length", tc.shape)
	}
}

func TestNPYRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, e := range []Elem{ElemF4, ElemF2, ElemBF16, ElemI1, ElemU1, ElemI4} {
		for _, shape := range [][]int{{}, {0}, {1}, {5}, {3, 4}, {2, 3, 5}, {2, 0, 3}} {
			data := make([]byte, numel(shape)*e.Size())
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			var b bytes.Buffer
			require.NoError(t, WriteNPY(&b, Array{Elem: e, Shape: shape, Data: data}))
			got, err := ReadNPY(&b)
			require.NoError(t, err, "%v %v", e, shape)
			require.Equal(t, e, got.Elem, "%v %v: element type read back as %v", e, shape, got.Elem)
			require.Equal(t, nonNil(shape), nonNil(got.Shape), "%v %v: shape read back", e, shape)
			require.Equal(t, nonNil(data), nonNil(got.Data), "%v %v: data read back", e, shape)
		}
	}
}

// npyStream builds a .npy stream with a hand-written header.
func npyStream(version byte, header string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x93NUMPY")
	b.Write([]byte{version, 0})
	if version == 1 {
		binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	} else {
		binary.Write(&b, binary.LittleEndian, uint32(len(header)))
	}
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func TestReadNPYHeaderVariants(t *testing.T) {
	f4 := func(xs ...float32) []byte { return F32Array([]int{len(xs)}, xs).Data }
	// A (2, 3) array in Fortran order: column-major storage of
	// [[0 1 2] [3 4 5]] is 0 3 1 4 2 5.
	a, err := ReadNPY(bytes.NewReader(npyStream(1,
		"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }          \n", f4(0, 3, 1, 4, 2, 5))))
	require.NoError(t, err)
	assertSameF32(t, []float32{0, 1, 2, 3, 4, 5}, a.Float32s(), "fortran (2,3): values in C order")
	assert.Equal(t, []int{2, 3}, a.Shape, "fortran (2,3): shape")
	// 3-D Fortran order: element (i,j,k) of shape (2,2,2) stored at i + 2j + 4k.
	var fdata []float32
	for k := range 2 {
		for j := range 2 {
			for i := range 2 {
				fdata = append(fdata, float32(100*i+10*j+k))
			}
		}
	}
	a, err = ReadNPY(bytes.NewReader(npyStream(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 2)}\n", f4(fdata...))))
	require.NoError(t, err)
	assertSameF32(t, []float32{0, 1, 10, 11, 100, 101, 110, 111}, a.Float32s(), "fortran (2,2,2): values in C order")
	// Version 2.0, double quotes, other key order, Python 2 longs, MLX's
	// trailing ", " inside the shape.
	for _, h := range []string{
		`{"shape": (2,), "fortran_order": False, "descr": "<f4"}` + "\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, ), }\n",
	} {
		a, err := ReadNPY(bytes.NewReader(npyStream(2, h, f4(7, 8))))
		require.NoError(t, err, "%q", h)
		assertSameF32(t, []float32{7, 8}, a.Float32s(), "%q", h)
	}
}

func TestReadNPYErrors(t *testing.T) {
	good := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"
	data := make([]byte, 8)
	for name, stream := range map[string][]byte{
		"bad magic":      append([]byte("\x93NUMPZ\x01\x00"), npyStream(1, good, data)[8:]...),
		"version 4":      npyStream(4, good, data),
		"truncated data": npyStream(1, good, data[:7]),
		"trailing data":  npyStream(1, good, append(data, 0)),
		"big-endian":     npyStream(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", data),
		"float64":        npyStream(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }\n", data),
		"no shape":       npyStream(1, "{'descr': '<f4', 'fortran_order': False}\n", data),
		"unknown key":    npyStream(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", data),
		"bad shape":      npyStream(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }\n", data),
		"short header":   []byte("\x93NUMPY\x01"),
	} {
		_, err := ReadNPY(bytes.NewReader(stream))
		assert.Error(t, err, name)
	}
}

func TestArrayPacking(t *testing.T) {
	// float16: ties to even at 1 + 2^-11 (down) and 1 + 3·2^-11 (up),
	// overflow to ±inf, subnormals kept.
	xs := []float32{1 + 0x1p-11, 1 + 3*0x1p-11, 70000, -1e6, 0x1p-24, 1e-9}
	want := []float32{1, 1 + 0x1p-9, float32(math.Inf(1)), float32(math.Inf(-1)), 0x1p-24, 0}
	assertSameF32(t, want, F16Array([]int{6}, xs).Float32s(), "F16Array")
	// bfloat16: ties to even on the top 16 bits.
	xs = []float32{1 + 0x1p-8, 1 + 3*0x1p-8, -2.5}
	want = []float32{1, 1 + 0x1p-6, -2.5}
	a := BF16Array([]int{3}, xs)
	assertSameF32(t, want, a.Float32s(), "BF16Array")
	assert.Equal(t, uint16(0xC020), binary.LittleEndian.Uint16(a.Data[4:]), "BF16Array(-2.5) bits")
	assertSameF32(t, []float32{-127, 0, 127}, I8Array([]int{3}, []int8{-127, 0, 127}).Float32s(), "I8Array widening")
	assert.Equal(t, []int32{math.MinInt32, 7}, I32Array([]int{2}, []int32{math.MinInt32, 7}).Int32s(), "I32Array")
}

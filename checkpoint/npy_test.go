package checkpoint

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
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
		if err := WriteNPY(&b, a); err != nil {
			t.Fatal(err)
		}
		raw := b.Bytes()
		hlen := int(binary.LittleEndian.Uint16(raw[8:10]))
		if string(raw[:8]) != "\x93NUMPY\x01\x00" {
			t.Errorf("%v: preamble %q", tc.shape, raw[:8])
		}
		if (10+hlen)%64 != 0 || raw[10+hlen-1] != '\n' {
			t.Errorf("%v: data starts at %d (want a multiple of 64 after a newline)", tc.shape, 10+hlen)
		}
		h := string(raw[10 : 10+hlen])
		if got := strings.TrimRight(h, " \n"); got != tc.dict {
			t.Errorf("header %q, want %q", got, tc.dict)
		}
		// MLX's loader reads the descr at byte 11 and fortran_order at 34.
		if h[11:14] != tc.elem.Descr() || h[34] != 'F' {
			t.Errorf("header %q: descr/fortran_order not where mx.load looks", h)
		}
		if len(raw) != 10+hlen+len(a.Data) {
			t.Errorf("%v: %d bytes, want %d", tc.shape, len(raw), 10+hlen+len(a.Data))
		}
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
			if err := WriteNPY(&b, Array{Elem: e, Shape: shape, Data: data}); err != nil {
				t.Fatal(err)
			}
			got, err := ReadNPY(&b)
			if err != nil {
				t.Fatalf("%v %v: %v", e, shape, err)
			}
			if got.Elem != e || !equalInts(got.Shape, shape) || !bytes.Equal(got.Data, data) {
				t.Fatalf("%v %v: read back %v %v (%d bytes)", e, shape, got.Elem, got.Shape, len(got.Data))
			}
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
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Float32s(); !equalF32(got, []float32{0, 1, 2, 3, 4, 5}) || !equalInts(a.Shape, []int{2, 3}) {
		t.Errorf("fortran (2,3): got %v %v", a.Shape, got)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Float32s(); !equalF32(got, []float32{0, 1, 10, 11, 100, 101, 110, 111}) {
		t.Errorf("fortran (2,2,2): got %v", got)
	}
	// Version 2.0, double quotes, other key order, Python 2 longs, MLX's
	// trailing ", " inside the shape.
	for _, h := range []string{
		`{"shape": (2,), "fortran_order": False, "descr": "<f4"}` + "\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, ), }\n",
	} {
		a, err := ReadNPY(bytes.NewReader(npyStream(2, h, f4(7, 8))))
		if err != nil {
			t.Fatalf("%q: %v", h, err)
		}
		if !equalF32(a.Float32s(), []float32{7, 8}) {
			t.Errorf("%q: got %v", h, a.Float32s())
		}
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
		if _, err := ReadNPY(bytes.NewReader(stream)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestArrayPacking(t *testing.T) {
	// float16: ties to even at 1 + 2^-11 (down) and 1 + 3·2^-11 (up),
	// overflow to ±inf, subnormals kept.
	xs := []float32{1 + 0x1p-11, 1 + 3*0x1p-11, 70000, -1e6, 0x1p-24, 1e-9}
	want := []float32{1, 1 + 0x1p-9, float32(math.Inf(1)), float32(math.Inf(-1)), 0x1p-24, 0}
	if got := F16Array([]int{6}, xs).Float32s(); !equalF32(got, want) {
		t.Errorf("F16Array: got %v, want %v", got, want)
	}
	// bfloat16: ties to even on the top 16 bits.
	xs = []float32{1 + 0x1p-8, 1 + 3*0x1p-8, -2.5}
	want = []float32{1, 1 + 0x1p-6, -2.5}
	a := BF16Array([]int{3}, xs)
	if got := a.Float32s(); !equalF32(got, want) {
		t.Errorf("BF16Array: got %v, want %v", got, want)
	}
	if binary.LittleEndian.Uint16(a.Data[4:]) != 0xC020 {
		t.Errorf("BF16Array(-2.5) bits %#x, want 0xc020", binary.LittleEndian.Uint16(a.Data[4:]))
	}
	if got := I8Array([]int{3}, []int8{-127, 0, 127}).Float32s(); !equalF32(got, []float32{-127, 0, 127}) {
		t.Errorf("I8Array widening: %v", got)
	}
	if got := I32Array([]int{2}, []int32{math.MinInt32, 7}).Int32s(); got[0] != math.MinInt32 || got[1] != 7 {
		t.Errorf("I32Array: %v", got)
	}
}

func equalF32(a, b []float32) bool {
	ok, _ := sameBits(a, b)
	return ok
}

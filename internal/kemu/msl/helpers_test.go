//go:build cgo

package msl

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// selftestArgs mirrors struct SelftestArgs of selftest.metal.
type selftestArgs struct {
	N         uint32
	Delta     uint32
	Mask      uint32
	Lane      uint32
	Skip      uint32
	Threshold float32
}

// structBytes returns a copy of the bytes of *v (a struct of 32-bit
// fields), for a `constant T&` buffer.
func structBytes[T any](v *T) []byte {
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))...)
}

// poison is the byte every output buffer starts with, so an element a
// kernel never wrote shows up (0xff…: a NaN as float, half or bfloat).
const poison = 0xff

func poisoned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = poison
	}
	return b
}

// encode stores xs in dtype dt (rounded to nearest even).
func encode(dt backend.DType, xs []float32) []byte {
	b := make([]byte, len(xs)*dt.Size())
	for i, x := range xs {
		switch dt {
		case backend.F32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		case backend.F16:
			binary.LittleEndian.PutUint16(b[2*i:], backend.F16Bits(x))
		case backend.BF16:
			binary.LittleEndian.PutUint16(b[2*i:], backend.BF16Bits(x))
		default:
			panic("encode: dtype " + dt.String())
		}
	}
	return b
}

// decode widens the elements of b (dtype dt) to float32.
func decode(dt backend.DType, b []byte) []float32 {
	xs := make([]float32, len(b)/dt.Size())
	for i := range xs {
		switch dt {
		case backend.F32:
			xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case backend.F16:
			xs[i] = backend.F16Float(binary.LittleEndian.Uint16(b[2*i:]))
		case backend.BF16:
			xs[i] = backend.BF16Float(binary.LittleEndian.Uint16(b[2*i:]))
		default:
			panic("decode: dtype " + dt.String())
		}
	}
	return xs
}

func encodeU32(xs []uint32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

func decodeU32(b []byte) []uint32 {
	xs := make([]uint32, len(b)/4)
	for i := range xs {
		xs[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return xs
}

func decodeU16(b []byte) []uint16 {
	xs := make([]uint16, len(b)/2)
	for i := range xs {
		xs[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return xs
}

// dtypeName is the MSL type name in kernel names.
func dtypeName(dt backend.DType) string {
	switch dt {
	case backend.F32:
		return "float"
	case backend.F16:
		return "half"
	case backend.BF16:
		return "bfloat"
	}
	panic("dtypeName: " + dt.String())
}

// dispatch runs a kernel and fails the test on error.
func dispatch(t *testing.T, name string, groups, threads [3]int, buffers ...[]byte) {
	t.Helper()
	require.NoError(t, Dispatch(name, groups, threads, buffers), "dispatch %s", name)
}

// dispatchErr runs a kernel that must fail, within a time limit (a broken
// emulator would hang), and checks the error mentions every want.
func dispatchErr(t *testing.T, name string, groups, threads [3]int, buffers [][]byte, want ...string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- Dispatch(name, groups, threads, buffers) }()
	select {
	case err := <-done:
		if !assert.Error(t, err, "dispatch %s", name) {
			return
		}
		for _, w := range want {
			assert.ErrorContains(t, err, w, "dispatch %s", name)
		}
	case <-time.After(20 * time.Second):
		require.FailNow(t, "hang", "dispatch %s: no result after 20 s", name)
	}
}

package metal

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dwBuffer is a Buffer for encodeDispatch tests; dwRefs resolves it to a
// made-up object address.
type dwBuffer struct{ n int }

func (b *dwBuffer) Len() int      { return b.n }
func (b *dwBuffer) Bytes() []byte { return make([]byte, b.n) }

type dwRefs struct{ objs map[*dwBuffer]uintptr }

func (r *dwRefs) ref(b Buffer) (uintptr, int, error) {
	db, ok := b.(*dwBuffer)
	if !ok {
		return 0, 0, errors.New("a buffer from another runtime")
	}
	return r.objs[db], db.n, nil
}

func TestEncodeDispatchWords(t *testing.T) {
	x, y := &dwBuffer{n: 4096}, &dwBuffer{n: 0}
	refs := &dwRefs{objs: map[*dwBuffer]uintptr{x: 0x1000, y: 0x2000}}
	w := make([]uint64, dwLen)
	arena := make([]byte, dwArenaLen)
	for i := range w {
		w[i] = 0xdead // every word the encoder owns must be rewritten
	}
	args := []Arg{{Buf: x, Offset: 256}, {}, {Bytes: []byte{1, 2, 3, 4, 5}}, {Buf: y}}
	empty, err := encodeDispatch(w, arena, "k", 1024, 32768, [3]int{7, 2, 1}, [3]int{32, 4, 2}, args, []int{0, 1, 100}, refs.ref)
	require.NoError(t, err, "encodeDispatch")
	require.False(t, empty, "encodeDispatch: empty")
	encodePlan(w, dispatchPlan{retire: 5, commitFirst: true, commitAfter: true})
	want := []uint64{7, 2, 1, 32, 4, 2, 4, 3, dwCommitFirst | dwCommitAfter, 5}
	want = append(want,
		dwArgBuffer, 0x1000, 256,
		dwArgNone, 0, 0,
		dwArgBytes, 0, 5,
		dwArgBuffer, 0x2000, 0)
	assert.Equal(t, want, w[:dwHeader+4*dwArgWords], "header and arguments")
	assert.Equal(t, []uint64{0, 16, 112}, w[dwTGBase:dwTGBase+3], "threadgroup memory (rounded up to 16)")
	assert.Equal(t, []byte{1, 2, 3, 4, 5}, arena[2*dwMaxBytes:2*dwMaxBytes+5], "inline bytes of argument 2")
	encodePlan(w, dispatchPlan{commitAfter: true})
	assert.Equal(t, []uint64{dwCommitAfter, 0}, w[8:10], "plan words")
	empty, err = encodeDispatch(w, arena, "k", 1024, 32768, [3]int{0, 1, 1}, [3]int{32, 1, 1}, nil, nil, refs.ref)
	assert.NoError(t, err, "zero grid")
	assert.True(t, empty, "zero grid: empty")
}

func TestEncodeDispatchErrors(t *testing.T) {
	b := &dwBuffer{n: 64}
	refs := &dwRefs{objs: map[*dwBuffer]uintptr{b: 0x1000}}
	w := make([]uint64, dwLen)
	arena := make([]byte, dwArenaLen)
	one := [3]int{1, 1, 1}
	for _, tc := range []struct {
		name        string
		grid, group [3]int
		args        []Arg
		tg          []int
		want        string
	}{
		{"group too large", one, [3]int{16, 16, 2}, nil, nil, "512 threads per group, the pipeline allows 256"},
		{"zero group", one, [3]int{0, 1, 1}, nil, nil, "grid"},
		{"negative grid", [3]int{1, -1, 1}, one, nil, nil, "grid"},
		{"buffer and bytes", one, one, []Arg{{Buf: b, Bytes: []byte{1}}}, nil, "argument 0 has both"},
		{"too many bytes", one, one, []Arg{{}, {Bytes: make([]byte, dwMaxBytes+1)}}, nil, "argument 1: 4097 inline bytes"},
		{"empty bytes", one, one, []Arg{{Bytes: []byte{}}}, nil, "0 inline bytes"},
		{"offset at end", one, one, []Arg{{Buf: b, Offset: 64}}, nil, "offset 64 outside a 64-byte buffer"},
		{"negative offset", one, one, []Arg{{Buf: b, Offset: -4}}, nil, "offset -4"},
		{"foreign buffer", one, one, []Arg{{Buf: fakeForeign{}}}, nil, "argument 0: a buffer from another runtime"},
		{"too many args", one, one, make([]Arg, dwMaxArgs+1), nil, "at most 31"},
		{"too many tg", one, one, nil, make([]int, dwMaxArgs+1), "at most 31"},
		{"threadgroup memory", one, one, nil, []int{16385, 16385}, "32800 bytes of threadgroup memory, the device allows 32768"},
		{"negative threadgroup memory", one, one, nil, []int{-1}, "threadgroup memory 0 is -1 bytes"},
	} {
		_, err := encodeDispatch(w, arena, "kern", 256, 32768, tc.grid, tc.group, tc.args, tc.tg, refs.ref)
		assert.ErrorContains(t, err, tc.want, tc.name)
		assert.ErrorContains(t, err, "kern", "%s: the error names the kernel", tc.name)
	}
	// The limits themselves are accepted.
	full := make([]Arg, dwMaxArgs)
	for i := range full {
		full[i] = Arg{Bytes: make([]byte, dwMaxBytes)}
	}
	_, err := encodeDispatch(w, arena, "kern", 256, 32768, one, [3]int{16, 16, 1}, full, []int{32768}, refs.ref)
	assert.NoError(t, err, "dispatch at every limit")
	_, err = encodeDispatch(w, arena, "kern", 256, 32768, one, one, []Arg{{Buf: &dwBuffer{n: 0}, Offset: 0}}, nil, refs.ref)
	assert.NoError(t, err, "offset 0 of an empty buffer")
}

type fakeForeign struct{}

func (fakeForeign) Len() int      { return 4 }
func (fakeForeign) Bytes() []byte { return nil }

// TestEncodeDispatchNoAllocs checks the success path allocates nothing, a
// method value as resolver included (the darwin runtime passes r.ref).
func TestEncodeDispatchNoAllocs(t *testing.T) {
	b := &dwBuffer{n: 1 << 20}
	refs := &dwRefs{objs: map[*dwBuffer]uintptr{b: 0x1000}}
	w := make([]uint64, dwLen)
	arena := make([]byte, dwArenaLen)
	args := []Arg{{Buf: b}, {Buf: b, Offset: 4096}, {Bytes: make([]byte, 12)}}
	tg := []int{1000}
	allocs := testing.AllocsPerRun(100, func() {
		// Checked before asserting: the success path must not allocate.
		if _, err := encodeDispatch(w, arena, "k", 1024, 32768, [3]int{64, 1, 1}, [3]int{256, 1, 1}, args, tg, refs.ref); err != nil {
			require.NoError(t, err, "encodeDispatch")
		}
	})
	assert.Zero(t, allocs, "encodeDispatch allocations per call")
}

package artifact

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/racebuild"
)

// allocated runs f and returns the bytes it allocated on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func f4Header(shape string) string {
	return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n"
}

// TestReadNPYCap: a header whose shape exceeds the cap is refused before
// any data buffer exists; one within the cap but with a short stream costs
// about what the stream delivers; exactly the cap is accepted.
func TestReadNPYCap(t *testing.T) {
	var err error
	huge := npyStream(1, f4Header("(1099511627776,)"), make([]byte, 8)) // 4 TiB claimed
	n := allocated(func() { _, err = ReadNPY(bytes.NewReader(huge)) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cap")
	assert.Less(t, n, uint64(64<<10))

	short := npyStream(1, f4Header("(16777216,)"), make([]byte, 10)) // 64 MiB claimed, 10 bytes given
	n = allocated(func() { _, err = ReadNPY(bytes.NewReader(short), MaxBytes(128<<20)) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "truncated")
	assert.Less(t, n, uint64(3<<20), "a short stream must not cost its claimed size")

	// A (1000,) float32 array: its stream is the cap's unit.
	exact := npyStream(1, f4Header("(1000,)"), make([]byte, 4000))
	_, err = ReadNPY(bytes.NewReader(exact), MaxBytes(int64(len(exact))))
	assert.NoError(t, err)
	_, err = ReadNPY(bytes.NewReader(exact), MaxBytes(int64(len(exact)-1)))
	assert.ErrorContains(t, err, "cap")

	// 65 dimensions (numpy allows 64): a Fortran-order array of a million
	// elements with thousands of unit dimensions once cost elements ×
	// dimensions to reorder.
	many := "(" + strings.Repeat("1, ", 64) + "4)"
	_, err = ReadNPY(bytes.NewReader(npyStream(1, "{'descr': '<f4', 'fortran_order': True, 'shape': "+many+", }\n", make([]byte, 16))))
	assert.ErrorContains(t, err, "65 dimensions")

	// numpy's header-length limit.
	long := npyStream(2, f4Header("(1,)")+string(bytes.Repeat([]byte{' '}, 20000)), make([]byte, 4))
	_, err = ReadNPY(bytes.NewReader(long))
	assert.ErrorContains(t, err, "10000")
}

// zipOf builds a zip with one member per (name, bytes, deflate).
func zipOf(t *testing.T, members ...struct {
	name    string
	data    []byte
	deflate bool
}) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range members {
		method := zip.Store
		if m.deflate {
			method = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: method})
		require.NoError(t, err)
		_, err = w.Write(m.data)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

type member = struct {
	name    string
	data    []byte
	deflate bool
}

// TestNPZDeclaredSizes: the sum of the members' declared sizes is checked
// against the cap before any member is read, and a member's .npy header
// must account for exactly its declared size.
func TestNPZDeclaredSizes(t *testing.T) {
	a := npyStream(1, f4Header("(100,)"), make([]byte, 400))
	b := npyStream(1, f4Header("(2, 3)"), make([]byte, 24))
	raw := zipOf(t, member{"a.npy", a, false}, member{"b.npy", b, true})
	total := int64(len(a) + len(b))
	got, err := ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)), MaxBytes(total))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []int{2, 3}, got[1].Array.Shape)
	_, err = ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)), MaxBytes(total-1))
	assert.ErrorContains(t, err, "as its directory declares")

	// A header claiming more than the member holds (the zip is consistent).
	lie := npyStream(1, f4Header("(1000000,)"), make([]byte, 8))
	raw = zipOf(t, member{"lie.npy", lie, false})
	var n uint64
	n = allocated(func() { _, err = ReadNPZArrays(bytes.NewReader(raw), int64(len(raw))) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lie.npy")
	assert.Contains(t, err.Error(), fmt.Sprintf("declares %d bytes", len(lie)))
	assert.Less(t, n, uint64(256<<10))

	// A deflate bomb: 16 MiB of zeros behind a valid header, under a 1 MiB
	// cap, is refused from the directory alone.
	bomb := npyStream(1, f4Header("(4194304,)"), make([]byte, 16<<20))
	raw = zipOf(t, member{"w.npy", bomb, true})
	require.Less(t, len(raw), 1<<20)
	n = allocated(func() { _, err = ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)), MaxBytes(1<<20)) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1048576-byte cap")
	assert.Less(t, n, uint64(256<<10))
}

func TestInspectNPZMatchesReadNPZ(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.npz")
	require.NoError(t, SaveNPZ(p, mixedTensors()))
	full, err := ReadNPZ(p)
	require.NoError(t, err)
	infos, err := InspectNPZ(p)
	require.NoError(t, err)
	require.Len(t, infos, len(full))
	for i, tns := range full {
		assert.Equal(t, tns.Name, infos[i].Name)
		assert.Equal(t, tns.Shape, infos[i].Shape)
	}
	_, err = ReadNPZ(p, MaxBytes(100))
	assert.ErrorContains(t, err, p)
}

func zlibOf(t *testing.T, raw []byte) []byte {
	var b bytes.Buffer
	zw, err := zlib.NewWriterLevel(&b, zlib.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestQuantizedInflateCap: a container's zlib stream may inflate to at
// most the cap; a small file that would inflate to 16 MiB costs about the
// cap, not 16 MiB.
func TestQuantizedInflateCap(t *testing.T) {
	q, _ := Quantize(modelLike(), testPatterns)
	raw, err := EncodeQuantized(q)
	require.NoError(t, err)
	blob := zlibOf(t, raw)
	_, err = ReadQuantized(bytes.NewReader(blob), MaxBytes(int64(len(raw))))
	require.NoError(t, err, "a container of exactly the cap")
	_, err = ReadQuantized(bytes.NewReader(blob), MaxBytes(int64(len(raw)-1)))
	assert.ErrorContains(t, err, "inflates to more than")

	bomb := zlibOf(t, make([]byte, 16<<20))
	require.Less(t, len(bomb), 32<<10)
	n := allocated(func() { _, err = ReadQuantized(bytes.NewReader(bomb), MaxBytes(1<<20)) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1048576-byte cap")
	bound := uint64(6 << 20)
	if racebuild.Enabled {
		bound = 16 << 20
	}
	assert.Less(t, n, bound, "a few times the cap (buffer growth), never the 16 MiB")

	p := filepath.Join(t.TempDir(), "bomb.int8.ptz")
	require.NoError(t, os.WriteFile(p, bomb, 0o644))
	_, err = LoadQuantized(p, MaxBytes(1<<20))
	assert.ErrorContains(t, err, p)
}

// TestInspectQuantized: the streamed headers equal the decoded members;
// streaming a large container costs little memory; the cap, CRC-32 and the
// zip's sizes are enforced.
func TestInspectQuantized(t *testing.T) {
	dir := t.TempDir()
	q, _ := Quantize(modelLike(), testPatterns)
	p := filepath.Join(dir, "m.int8.ptz")
	_, _, err := SaveQuantized(p, q)
	require.NoError(t, err)
	infos, err := InspectQuantized(p)
	require.NoError(t, err)
	raw, _ := EncodeQuantized(q)
	members, err := ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)))
	require.NoError(t, err)
	require.Len(t, infos, len(members))
	for i, m := range members {
		assert.Equal(t, ArrayInfo{Name: m.Name, Elem: m.Array.Elem, Shape: m.Array.Shape}, infos[i])
	}

	// 8 MiB of int8 payload streams through in little memory; under a
	// 1 MiB cap it is refused.
	big := &Quantized{
		Order:     []string{"w"},
		Quantized: map[string]Array{"w": I8Array([]int{2048, 4096}, make([]int8, 2048*4096))},
		Scales:    map[string]Array{"w": F32Array(nil, []float32{1})},
		DTypes:    map[string]string{"w": "float32"}, QMeta: map[string]QMeta{},
		Passthrough: map[string]Array{}, PassthroughOrigDTypes: map[string]string{},
	}
	pb := filepath.Join(dir, "big.int8.ptz")
	_, _, err = SaveQuantized(pb, big)
	require.NoError(t, err)
	var n uint64
	n = allocated(func() { infos, err = InspectQuantized(pb) })
	require.NoError(t, err)
	assert.Equal(t, []int{2048, 4096}, infos[1].Shape)
	assert.Less(t, n, uint64(2<<20), "streaming must not hold the payload")
	_, err = InspectQuantized(pb, MaxBytes(1<<20))
	assert.ErrorContains(t, err, "cap")

	// A flipped payload byte breaks the member's CRC-32.
	rawBig, _ := EncodeQuantized(big)
	rawBig[len(rawBig)/2] ^= 1
	pc := filepath.Join(dir, "crc.int8.ptz")
	require.NoError(t, os.WriteFile(pc, zlibOf(t, rawBig), 0o644))
	_, err = InspectQuantized(pc)
	assert.ErrorContains(t, err, "CRC-32")

	// Members with data descriptors (sizes after the data) cannot be
	// streamed; the error says so.
	var dd bytes.Buffer
	require.NoError(t, WriteNPZ(&dd, []NamedArray{{Name: "x", Array: F32Array([]int{2}, []float32{1, 2})}}, true))
	pd := filepath.Join(dir, "dd.int8.ptz")
	require.NoError(t, os.WriteFile(pd, zlibOf(t, dd.Bytes()), 0o644))
	_, err = InspectQuantized(pd)
	assert.ErrorContains(t, err, "data descriptor")

	// Zeros are not a zip: the first record is refused at once.
	pz := filepath.Join(dir, "zeros.int8.ptz")
	require.NoError(t, os.WriteFile(pz, zlibOf(t, make([]byte, 16<<20)), 0o644))
	n = allocated(func() { _, err = InspectQuantized(pz) })
	assert.ErrorContains(t, err, "unexpected record signature")
	assert.Less(t, n, uint64(1<<20))
}

// TestInspectQuantizedSizeMismatch: a local header whose size disagrees
// with the .npy header inside is refused.
func TestInspectQuantizedSizeMismatch(t *testing.T) {
	var raw bytes.Buffer
	require.NoError(t, WriteNPZ(&raw, []NamedArray{{Name: "x", Array: F32Array([]int{4}, []float32{1, 2, 3, 4})}}, false))
	b := raw.Bytes()
	// Patch the local header's uncompressed and compressed sizes (offsets
	// 18 and 22 of the record) to one byte fewer, and the CRC to match.
	require.Equal(t, uint32(0x04034b50), binary.LittleEndian.Uint32(b))
	size := binary.LittleEndian.Uint32(b[22:])
	binary.LittleEndian.PutUint32(b[18:], size-1)
	binary.LittleEndian.PutUint32(b[22:], size-1)
	nameLen := int(binary.LittleEndian.Uint16(b[26:]))
	start := 30 + nameLen + int(binary.LittleEndian.Uint16(b[28:]))
	binary.LittleEndian.PutUint32(b[14:], crc32.ChecksumIEEE(b[start:start+int(size)-1]))
	p := filepath.Join(t.TempDir(), "mismatch.int8.ptz")
	require.NoError(t, os.WriteFile(p, zlibOf(t, b), 0o644))
	_, err := InspectQuantized(p)
	assert.ErrorContains(t, err, "zip declares")
}

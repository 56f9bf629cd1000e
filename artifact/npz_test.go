package artifact

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/atomicfile"
)

// mixedTensors covers every dtype and rank golf may save.
func mixedTensors() []Tensor {
	r := rand.New(rand.NewPCG(3, 4))
	return []Tensor{
		randTensor(r, "tok_emb.weight", backend.F32, 0.02, 33, 17),
		randTensor(r, "blocks.0.attn_scale", backend.F32, 1, 17),
		randTensor(r, "blocks.0.attn.c_q.weight", backend.BF16, 0.1, 5, 7),
		randTensor(r, "blocks.0.mlp.fc.weight", backend.F16, 0.1, 2, 3, 4),
		randTensor(r, "scalar", backend.F32, 1),
		intTensor(r, "ids", 4, 3),
		randTensor(r, "dir/with/slashes", backend.F32, 1, 3),
	}
}

func TestNPZRoundTrip(t *testing.T) {
	ts := mixedTensors()
	dir := t.TempDir()
	p := filepath.Join(dir, "model.npz")
	require.NoError(t, SaveNPZ(p, ts))
	got, err := ReadNPZ(p)
	require.NoError(t, err)
	equalTensors(t, got, ts)
	// Deterministic bytes: a second save of the same tensors is identical.
	first, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, SaveNPZ(p, ts))
	second, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(first, second), "two saves of the same tensors differ")
	assert.Len(t, dirEntries(t, dir), 1, "the directory holds only model.npz")
	// The deflate flavour reads back the same.
	var b bytes.Buffer
	members := make([]NamedArray, len(ts))
	for i, x := range ts {
		members[i] = NamedArray{x.Name, x.ToArray()}
	}
	require.NoError(t, WriteNPZ(&b, members, true))
	arrs, err := ReadNPZArrays(bytes.NewReader(b.Bytes()), int64(b.Len()))
	require.NoError(t, err)
	require.Equal(t, len(members), len(arrs), "deflated members")
	for i, m := range arrs {
		require.Equal(t, members[i].Name, m.Name, "deflated member %d: name", i)
		require.True(t, bytes.Equal(m.Array.Data, members[i].Array.Data), "deflated member %q: data differs", m.Name)
	}
}

// npyBits is how the Python side reports an array: dtype string, shape and
// the raw element bits as integers (exact for every dtype).
type npyBits struct {
	DType string  `json:"dtype"`
	Shape []int   `json:"shape"`
	Bits  []int64 `json:"bits"`
}

// arrayBits reads a's elements as integers the way npyBits reports them.
func arrayBits(a Array) []int64 {
	out := make([]int64, a.Numel())
	for i := range out {
		switch a.Elem.Size() {
		case 4:
			v := binary.LittleEndian.Uint32(a.Data[4*i:])
			if a.Elem == ElemI4 {
				out[i] = int64(int32(v))
			} else {
				out[i] = int64(v)
			}
		case 2:
			out[i] = int64(binary.LittleEndian.Uint16(a.Data[2*i:]))
		case 1:
			if a.Elem == ElemI1 {
				out[i] = int64(int8(a.Data[i]))
			} else {
				out[i] = int64(a.Data[i])
			}
		}
	}
	return out
}

// pyDumpBits prints {"files": [...], "arrays": {key: npyBits}} for an .npz.
const pyDumpBits = `
import json, sys, numpy as np
z = np.load(sys.argv[1])
def bits(a):
    a = np.ascontiguousarray(a)
    view = {4: np.uint32, 2: np.uint16, 1: np.uint8}[a.dtype.itemsize]
    if a.dtype.kind in "iu":
        return a.reshape(-1).astype(np.int64).tolist()
    return a.view(view).reshape(-1).astype(np.int64).tolist()
out = {"files": z.files, "arrays": {k: {"dtype": z[k].dtype.str, "shape": list(z[k].shape), "bits": bits(z[k])} for k in z.files}}
print(json.dumps(out))
`

type npzDump struct {
	Files  []string           `json:"files"`
	Arrays map[string]npyBits `json:"arrays"`
}

func TestNumpyReadsOurNPZ(t *testing.T) {
	numpyPython(t)
	ts := mixedTensors()
	p := filepath.Join(t.TempDir(), "model.npz")
	require.NoError(t, SaveNPZ(p, ts))
	var d npzDump
	require.NoError(t, json.Unmarshal(runPython(t, pyDumpBits, p), &d))
	wantDType := map[backend.DType]string{backend.F32: "<f4", backend.F16: "<f2", backend.BF16: "|V2", backend.I32: "<i4"}
	names := make([]string, len(ts))
	for i, x := range ts {
		names[i] = x.Name
	}
	require.Equal(t, names, d.Files, "the keys numpy sees")
	for _, x := range ts {
		got := d.Arrays[x.Name]
		if !assert.Equal(t, wantDType[x.DType], got.DType, "%s: dtype numpy reads", x.Name) ||
			!assert.Equal(t, nonNil(x.Shape), nonNil(got.Shape), "%s: shape numpy reads", x.Name) {
			continue
		}
		assertBits(t, x.Name+": bits numpy reads", got.Bits, arrayBits(x.ToArray()))
	}
}

// pyWriteNPZ writes numpy's own .npz files (stored and deflated) with
// C-order, Fortran-order, 0-d, bfloat16-as-void and int8 members, and
// prints their C-order bits.
const pyWriteNPZ = `
import json, sys, numpy as np
rng = np.random.default_rng(7)
f = rng.standard_normal((3, 4)).astype(np.float32)
arrays = {
    "c_order": f,
    "fortran": np.asfortranarray(rng.standard_normal((3, 4, 2)).astype(np.float32)),
    "half": rng.standard_normal(5).astype(np.float16),
    "ints": rng.integers(-2**31, 2**31, (2, 3)).astype(np.int32),
    "zero_d": np.array(1.5, dtype=np.float32),
    "bf16": (f.view(np.uint32) >> 16).astype(np.uint16).view("V2"),
    "quantized/w": rng.integers(-127, 128, (4, 4)).astype(np.int8),
}
assert not arrays["fortran"].flags.c_contiguous
np.savez(sys.argv[1], **arrays)
np.savez_compressed(sys.argv[2], **arrays)
def bits(a):
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "iu":
        return a.reshape(-1).astype(np.int64).tolist()
    view = {4: np.uint32, 2: np.uint16}[a.dtype.itemsize]
    return a.view(view).reshape(-1).astype(np.int64).tolist()
print(json.dumps({"files": list(arrays), "arrays": {k: {"dtype": a.dtype.str, "shape": list(a.shape), "bits": bits(a)} for k, a in arrays.items()}}))
`

func TestReadNumpyNPZ(t *testing.T) {
	numpyPython(t)
	dir := t.TempDir()
	stored, deflated := filepath.Join(dir, "stored.npz"), filepath.Join(dir, "deflated.npz")
	var d npzDump
	require.NoError(t, json.Unmarshal(runPython(t, pyWriteNPZ, stored, deflated), &d))
	wantElem := map[string]Elem{"c_order": ElemF4, "fortran": ElemF4, "half": ElemF2, "ints": ElemI4,
		"zero_d": ElemF4, "bf16": ElemBF16, "quantized/w": ElemI1}
	for _, p := range []string{stored, deflated} {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		arrs, err := ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)))
		require.NoError(t, err, p)
		require.Equal(t, len(d.Files), len(arrs), "%s: members", p)
		for i, m := range arrs {
			want := d.Arrays[d.Files[i]]
			require.Equal(t, d.Files[i], m.Name, "%s member %d: name", p, i)
			require.Equal(t, wantElem[m.Name], m.Array.Elem, "%s %s: element type %v, want %v", p, m.Name, m.Array.Elem, wantElem[m.Name])
			require.Equal(t, nonNil(want.Shape), nonNil(m.Array.Shape), "%s %s: shape", p, m.Name)
			if !assertBits(t, p+" "+m.Name, arrayBits(m.Array), want.Bits) {
				t.FailNow()
			}
		}
		// ReadNPZ refuses the int8 member, naming the file and the member.
		_, err = ReadNPZ(p)
		assert.ErrorContains(t, err, p, "ReadNPZ names the file")
		assert.ErrorContains(t, err, "quantized/w", "ReadNPZ(%s) names the int8 member", p)
	}
}

func TestReadNPZErrors(t *testing.T) {
	dir := t.TempDir()
	notZip := filepath.Join(dir, "junk.npz")
	require.NoError(t, os.WriteFile(notZip, []byte("not a zip file at all"), 0o644))
	_, err := ReadNPZ(notZip)
	assert.ErrorContains(t, err, notZip, "junk file: the error names it")
	_, err = ReadNPZ(filepath.Join(dir, "missing.npz"))
	assert.ErrorContains(t, err, "missing.npz", "missing file: the error names it")
	// A corrupted member body fails its CRC check.
	p := filepath.Join(dir, "m.npz")
	require.NoError(t, SaveNPZ(p, mixedTensors()[:1]))
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Greater(t, len(raw), 200)
	raw[200] ^= 0xff // inside the first member's data
	require.NoError(t, os.WriteFile(p, raw, 0o644))
	_, err = ReadNPZ(p)
	assert.Error(t, err, "corrupted member")
}

func TestSaveAtomic(t *testing.T) {
	ts := mixedTensors()
	dir := t.TempDir()

	// The directory does not exist: an error naming the path, nothing written.
	p := filepath.Join(dir, "no", "such", "dir", "model.npz")
	assert.ErrorContains(t, SaveNPZ(p, ts), p, "missing directory: the error names the path")
	_, _, err := SaveQuantized(p, mustQuantize(ts))
	assert.Error(t, err, "SaveQuantized into a missing directory")

	// The destination is a directory: the rename fails after the temporary
	// file was written, which must be removed.
	target := filepath.Join(dir, "model.npz")
	require.NoError(t, os.Mkdir(target, 0o755))
	assert.ErrorContains(t, SaveNPZ(target, ts), target, "rename onto a directory: the error names the path")
	_, _, err = SaveQuantized(target, mustQuantize(ts))
	assert.ErrorContains(t, err, target, "SaveQuantized onto a directory: the error names the path")
	assert.Error(t, WriteSummary(target, ts), "WriteSummary onto a directory")
	assert.Len(t, dirEntries(t, dir), 1, "only the directory model.npz, no leftovers after failed writes")

	// A directory without write permission (meaningless for root, who may
	// write anyway).
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		require.NoError(t, os.Mkdir(ro, 0o500))
		p := filepath.Join(ro, "model.npz")
		assert.ErrorContains(t, SaveNPZ(p, ts), p, "read-only directory: the error names the path")
		assert.Empty(t, dirEntries(t, ro), "the read-only directory stays empty")
		os.Remove(ro)
	}

	// A writer that fails half-way leaves nothing and keeps the old file.
	old := filepath.Join(dir, "old.bin")
	require.NoError(t, os.WriteFile(old, []byte("previous"), 0o644))
	boom := errors.New("disk on fire")
	_, err = atomicfile.Write(old, func(w io.Writer) error {
		w.Write(make([]byte, 3<<20))
		return boom
	})
	assert.ErrorIs(t, err, boom, "failing writer")
	assert.ErrorContains(t, err, old, "failing writer: the error names the file")
	b, _ := os.ReadFile(old)
	assert.Equal(t, "previous", string(b), "the old file after a failing writer")
	assert.Len(t, dirEntries(t, dir), 2, "model.npz and old.bin, no leftovers after a failing writer")
}

func mustQuantize(ts []Tensor) *Quantized {
	q, _ := Quantize(ts, nil)
	return q
}

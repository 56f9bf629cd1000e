package checkpoint

import (
	"github.com/golf-ml/golf/internal/atomicfile"

	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golf-ml/golf/backend"
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
	if err := SaveNPZ(p, ts); err != nil {
		t.Fatal(err)
	}
	got, err := ReadNPZ(p)
	if err != nil {
		t.Fatal(err)
	}
	equalTensors(t, got, ts)
	// Deterministic bytes: a second save of the same tensors is identical.
	first, _ := os.ReadFile(p)
	if err := SaveNPZ(p, ts); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(p)
	if !bytes.Equal(first, second) {
		t.Error("two saves of the same tensors differ")
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only model.npz", names)
	}
	// The deflate flavour reads back the same.
	var b bytes.Buffer
	members := make([]NamedArray, len(ts))
	for i, x := range ts {
		members[i] = NamedArray{x.Name, x.ToArray()}
	}
	if err := WriteNPZ(&b, members, true); err != nil {
		t.Fatal(err)
	}
	arrs, err := ReadNPZArrays(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range arrs {
		if m.Name != members[i].Name || !bytes.Equal(m.Array.Data, members[i].Array.Data) {
			t.Fatalf("deflated member %d: %q differs", i, m.Name)
		}
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
	if err := SaveNPZ(p, ts); err != nil {
		t.Fatal(err)
	}
	var d npzDump
	if err := json.Unmarshal(runPython(t, pyDumpBits, p), &d); err != nil {
		t.Fatal(err)
	}
	wantDType := map[backend.DType]string{backend.F32: "<f4", backend.F16: "<f2", backend.BF16: "|V2", backend.I32: "<i4"}
	if len(d.Files) != len(ts) {
		t.Fatalf("numpy sees keys %v", d.Files)
	}
	for i, x := range ts {
		if d.Files[i] != x.Name {
			t.Errorf("numpy key %d is %q, want %q", i, d.Files[i], x.Name)
		}
		got := d.Arrays[x.Name]
		if got.DType != wantDType[x.DType] || !equalInts(got.Shape, x.Shape) {
			t.Errorf("%s: numpy reads %s %v, want %s %v", x.Name, got.DType, got.Shape, wantDType[x.DType], x.Shape)
			continue
		}
		want := arrayBits(x.ToArray())
		for j := range want {
			if got.Bits[j] != want[j] {
				t.Fatalf("%s: element %d has bits %#x in numpy, want %#x", x.Name, j, got.Bits[j], want[j])
			}
		}
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
	if err := json.Unmarshal(runPython(t, pyWriteNPZ, stored, deflated), &d); err != nil {
		t.Fatal(err)
	}
	wantElem := map[string]Elem{"c_order": ElemF4, "fortran": ElemF4, "half": ElemF2, "ints": ElemI4,
		"zero_d": ElemF4, "bf16": ElemBF16, "quantized/w": ElemI1}
	for _, p := range []string{stored, deflated} {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		arrs, err := ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(arrs) != len(d.Files) {
			t.Fatalf("%s: %d members, want %d", p, len(arrs), len(d.Files))
		}
		for i, m := range arrs {
			want := d.Arrays[d.Files[i]]
			if m.Name != d.Files[i] || m.Array.Elem != wantElem[m.Name] || !equalInts(m.Array.Shape, want.Shape) {
				t.Fatalf("%s member %d: got %q %v %v, want %q %v %v", p, i, m.Name, m.Array.Elem, m.Array.Shape,
					d.Files[i], wantElem[d.Files[i]], want.Shape)
			}
			got := arrayBits(m.Array)
			for j := range want.Bits {
				if got[j] != want.Bits[j] {
					t.Fatalf("%s %s: element %d bits %#x, want %#x", p, m.Name, j, got[j], want.Bits[j])
				}
			}
		}
		// ReadNPZ refuses the int8 member, naming the file and the member.
		_, err = ReadNPZ(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "quantized/w") {
			t.Errorf("ReadNPZ(%s) error %v, want one naming the file and quantized/w", p, err)
		}
	}
}

func TestReadNPZErrors(t *testing.T) {
	dir := t.TempDir()
	notZip := filepath.Join(dir, "junk.npz")
	os.WriteFile(notZip, []byte("not a zip file at all"), 0o644)
	if _, err := ReadNPZ(notZip); err == nil || !strings.Contains(err.Error(), notZip) {
		t.Errorf("junk file: error %v, want one naming %s", err, notZip)
	}
	if _, err := ReadNPZ(filepath.Join(dir, "missing.npz")); err == nil || !strings.Contains(err.Error(), "missing.npz") {
		t.Errorf("missing file: error %v", err)
	}
	// A corrupted member body fails its CRC check.
	p := filepath.Join(dir, "m.npz")
	if err := SaveNPZ(p, mixedTensors()[:1]); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(p)
	raw[200] ^= 0xff // inside the first member's data
	os.WriteFile(p, raw, 0o644)
	if _, err := ReadNPZ(p); err == nil {
		t.Error("corrupted member: no error")
	}
}

func TestSaveAtomic(t *testing.T) {
	ts := mixedTensors()
	dir := t.TempDir()

	// The directory does not exist: an error naming the path, nothing written.
	p := filepath.Join(dir, "no", "such", "dir", "model.npz")
	err := SaveNPZ(p, ts)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("missing directory: error %v, want one naming %s", err, p)
	}
	if _, _, err := SaveQuantized(p, mustQuantize(ts)); err == nil {
		t.Error("SaveQuantized into a missing directory: no error")
	}

	// The destination is a directory: the rename fails after the temporary
	// file was written, which must be removed.
	target := filepath.Join(dir, "model.npz")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	err = SaveNPZ(target, ts)
	if err == nil || !strings.Contains(err.Error(), target) {
		t.Errorf("rename onto a directory: error %v, want one naming %s", err, target)
	}
	if _, _, err := SaveQuantized(target, mustQuantize(ts)); err == nil || !strings.Contains(err.Error(), target) {
		t.Errorf("SaveQuantized onto a directory: error %v", err)
	}
	if err := WriteSummary(target, ts); err == nil {
		t.Error("WriteSummary onto a directory: no error")
	}
	if names := dirEntries(t, dir); len(names) != 1 { // the directory model.npz
		t.Errorf("leftovers after failed writes: %v", names)
	}

	// A directory without write permission (meaningless for root, who may
	// write anyway).
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o500)
		p := filepath.Join(ro, "model.npz")
		if err := SaveNPZ(p, ts); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("read-only directory: error %v, want one naming %s", err, p)
		}
		if names := dirEntries(t, ro); len(names) != 0 {
			t.Errorf("read-only directory now holds %v", names)
		}
		os.Remove(ro)
	}

	// A writer that fails half-way leaves nothing and keeps the old file.
	old := filepath.Join(dir, "old.bin")
	os.WriteFile(old, []byte("previous"), 0o644)
	boom := errors.New("disk on fire")
	_, err = atomicfile.Write(old, func(w io.Writer) error {
		w.Write(make([]byte, 3<<20))
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), old) {
		t.Errorf("failing writer: error %v", err)
	}
	if b, _ := os.ReadFile(old); string(b) != "previous" {
		t.Errorf("old file now holds %q", b)
	}
	if names := dirEntries(t, dir); len(names) != 2 {
		t.Errorf("leftovers after a failing writer: %v", names)
	}
}

func mustQuantize(ts []Tensor) *Quantized {
	q, _ := Quantize(ts, nil)
	return q
}

package trainstate

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample(r *rand.Rand) *State {
	s := &State{Meta: json.RawMessage(`{"step":12,"note":"x"}`)}
	for i, shape := range [][]int{{3, 5}, {7}, {}, {2, 0, 4}, {1, 1, 17}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		if i == 1 {
			v[0] = float32(math.Copysign(0, -1)) // signed zero and a subnormal must survive
			v[1] = math.Float32frombits(1)
		}
		s.Tensors = append(s.Tensors, Tensor{Name: strings.Repeat("t", i+1), Shape: shape, Data: v})
	}
	return s
}

func encode(t *testing.T, s *State) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, s))
	return buf.Bytes()
}

// TestLayout checks the bytes against the layout of the package doc,
// computed here independently.
func TestLayout(t *testing.T) {
	s := &State{Meta: json.RawMessage(`{"a":1}`), Tensors: []Tensor{
		{Name: "w", Shape: []int{2}, Data: []float32{1.5, -2}},
		{Name: "z", Shape: []int{1}, Data: []float32{3}},
	}}
	b := encode(t, s)
	assert.Equal(t, "GOLFSTAT", string(b[:8]))
	assert.Equal(t, uint32(1), binary.LittleEndian.Uint32(b[8:]))
	hl := int(binary.LittleEndian.Uint32(b[12:]))
	var h struct {
		Meta    map[string]int `json:"meta"`
		Tensors []struct {
			Name   string `json:"name"`
			Shape  []int  `json:"shape"`
			Offset int    `json:"offset"`
			NBytes int    `json:"nbytes"`
		} `json:"tensors"`
	}
	require.NoError(t, json.Unmarshal(b[16:16+hl], &h))
	assert.Equal(t, 1, h.Meta["a"])
	require.Len(t, h.Tensors, 2)
	assert.Equal(t, 0, h.Tensors[0].Offset)
	assert.Equal(t, 8, h.Tensors[0].NBytes)
	assert.Equal(t, 64, h.Tensors[1].Offset) // data offsets are multiples of 64
	dataStart := (16 + hl + 63) / 64 * 64
	assert.Equal(t, uint32(0x3fc00000), binary.LittleEndian.Uint32(b[dataStart:]))    // 1.5
	assert.Equal(t, uint32(0xc0000000), binary.LittleEndian.Uint32(b[dataStart+4:]))  // -2
	assert.Equal(t, uint32(0x40400000), binary.LittleEndian.Uint32(b[dataStart+64:])) // 3
	assert.Equal(t, dataStart+128+32, len(b))
	sum := sha256.Sum256(b[:len(b)-32])
	assert.Equal(t, sum[:], b[len(b)-32:])
}

func TestRoundTripBits(t *testing.T) {
	s := sample(rand.New(rand.NewPCG(1, 2)))
	dir := t.TempDir()
	path := filepath.Join(dir, FileName(12))
	require.NoError(t, Write(path, s))
	got, err := Read(path)
	require.NoError(t, err)
	assert.JSONEq(t, string(s.Meta), string(got.Meta))
	require.Len(t, got.Tensors, len(s.Tensors))
	for i, w := range s.Tensors {
		g := got.Tensors[i]
		assert.Equal(t, w.Name, g.Name)
		assert.Equal(t, len(w.Shape), len(g.Shape))
		require.Len(t, g.Data, len(w.Data), w.Name)
		for j := range w.Data {
			require.Equal(t, math.Float32bits(w.Data[j]), math.Float32bits(g.Data[j]), "%s[%d]", w.Name, j)
		}
	}
	assert.NotNil(t, got.Tensor("ttt"))
	assert.Nil(t, got.Tensor("nope"))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "no temporary file left beside the state")
}

// TestCorruption: every single-byte change and every truncation is
// refused, naming the file.
func TestCorruption(t *testing.T) {
	b := encode(t, sample(rand.New(rand.NewPCG(3, 4))))
	for i := 0; i < len(b); i += 1 + i/16 {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		_, err := Decode(c, "x.state")
		require.Error(t, err, "byte %d flipped", i)
		assert.Contains(t, err.Error(), "x.state")
	}
	for _, n := range []int{0, 7, 16, 100, len(b) / 2, len(b) - 33, len(b) - 1} {
		_, err := Decode(b[:n], "x.state")
		require.Error(t, err, "truncated to %d", n)
		assert.Contains(t, err.Error(), "x.state")
	}
	_, err := Decode(append(bytes.Clone(b), 0), "x.state")
	assert.Error(t, err, "a trailing byte")
}

// resum rewrites b's trailer so that a tampered body passes the checksum:
// the structural checks behind it must still refuse it.
func resum(b []byte) []byte {
	s := sha256.Sum256(b[:len(b)-32])
	copy(b[len(b)-32:], s[:])
	return b
}

// assemble builds a state file from a header and data bytes by the layout
// of the package doc, with a valid checksum.
func assemble(version uint32, header string, data []byte) []byte {
	b := []byte("GOLFSTAT")
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(header)))
	b = append(b, header...)
	for len(b)%64 != 0 {
		b = append(b, 0)
	}
	b = append(b, data...)
	s := sha256.Sum256(b)
	return append(b, s[:]...)
}

// TestStructuralChecks tampers with a valid file's header and re-seals it
// with a correct checksum: the checks behind the checksum must refuse it.
func TestStructuralChecks(t *testing.T) {
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data, math.Float32bits(1))
	binary.LittleEndian.PutUint32(data[4:], math.Float32bits(2))
	const good = `{"meta":{},"tensors":[{"name":"w","shape":[2],"offset":0,"nbytes":8}]}`
	s, err := Decode(assemble(1, good, data), "s.state")
	require.NoError(t, err, "the untampered file")
	require.Equal(t, []float32{1, 2}, s.Tensors[0].Data)
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"nbytes", `"nbytes":8`, `"nbytes":4`, "does not match"},
		{"shape", `"shape":[2]`, `"shape":[3]`, "does not match"},
		{"negative dim", `"shape":[2]`, `"shape":[-2]`, "does not match"},
		{"huge dim", `"shape":[2]`, `"shape":[4611686018427387904,4]`, "does not match"},
		{"offset", `"offset":0`, `"offset":9`, "out of order"},
		{"past the data", `"offset":0,"nbytes":8`, `"offset":0,"nbytes":800`, "does not match"},
		{"repeated name", `}]}`, `},{"name":"w","shape":[2],"offset":64,"nbytes":8}]}`, "repeated"},
		{"unaccounted data", `"tensors":[{"name":"w","shape":[2],"offset":0,"nbytes":8}]`, `"tensors":[]`, "accounts for"},
		{"unknown field", `"meta":{}`, `"meta":{},"x":1`, "unknown field"},
		{"not json", `{"meta"`, `{meta"`, "header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, good, tc.from)
			_, err := Decode(assemble(1, strings.Replace(good, tc.from, tc.to, 1), data), "s.state")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "s.state")
		})
	}
	_, err = Decode(assemble(2, good, data), "s.state")
	assert.ErrorContains(t, err, "version 2")
	b := assemble(1, good, data)
	binary.LittleEndian.PutUint32(b[12:], 1<<30)
	_, err = Decode(resum(b), "s.state")
	assert.ErrorContains(t, err, "header length")
}

func TestEncodeRefuses(t *testing.T) {
	var buf bytes.Buffer
	assert.Error(t, Encode(&buf, &State{Tensors: []Tensor{{Name: "a", Shape: []int{3}, Data: []float32{1}}}}))
	assert.Error(t, Encode(&buf, &State{Tensors: []Tensor{{Name: "a", Data: []float32{1}}, {Name: "a", Data: []float32{2}}}}))
	assert.Error(t, Encode(&buf, &State{Tensors: []Tensor{{Name: "", Data: []float32{1}}}}))
}

func TestListPrune(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cps, err := List(dir)
	require.NoError(t, err)
	assert.Empty(t, cps)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, step := range []int{30, 5, 120, 7} {
		require.NoError(t, Write(filepath.Join(dir, FileName(step)), &State{}))
	}
	for _, other := range []string{"step_12.state", "notes.txt", ".step_00000009.state.tmp-1"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, other), nil, 0o644))
	}
	cps, err = List(dir)
	require.NoError(t, err)
	var steps []int
	for _, c := range cps {
		steps = append(steps, c.Step)
	}
	assert.Equal(t, []int{5, 7, 30, 120}, steps)
	require.NoError(t, Prune(dir, 2))
	cps, err = List(dir)
	require.NoError(t, err)
	require.Len(t, cps, 2)
	assert.Equal(t, 30, cps[0].Step)
	assert.Equal(t, filepath.Join(dir, "step_00000120.state"), cps[1].Path)
	assert.FileExists(t, filepath.Join(dir, "notes.txt"))
}

// FuzzDecode: Decode never panics, refuses naming the file, and what it
// accepts encodes to bytes that decode to a state encoding to the same
// bytes (Decode tolerates header whitespace and padding that Encode does
// not write, so the first encoding may differ from the input).
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	require.NoError(f, Encode(&buf, sample(rand.New(rand.NewPCG(5, 6)))))
	f.Add(buf.Bytes())
	f.Add([]byte("GOLFSTAT"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b, "fuzz.state")
		if err != nil {
			require.ErrorContains(t, err, "fuzz.state", "the error names the file")
			return
		}
		var out bytes.Buffer
		require.NoError(t, Encode(&out, s), "accepted state does not encode")
		s2, err := Decode(out.Bytes(), "again")
		require.NoError(t, err, "re-encoded state refused")
		require.Len(t, s2.Tensors, len(s.Tensors), "tensor count changed")
		// The bytes carry every name, shape and data bit (NaNs included).
		var again bytes.Buffer
		require.NoError(t, Encode(&again, s2))
		require.True(t, bytes.Equal(out.Bytes(), again.Bytes()), "the round trip changed the state: %d bytes, then %d", out.Len(), again.Len())
	})
}

// Package trainstate stores resumable training state: everything a run's
// future depends on (fp32 master weights, optimizer moments and momentum
// buffers, loss-scaler state, the step, the schedule position, the data
// position and the configuration), in one checksummed file per checkpoint.
//
// It is not an artifact format (those are in package artifact: .npz and
// the int8 container): a state file is read back only by golf, to continue
// a run bit for bit. The layout, all integers little-endian:
//
//	offset 0   magic    "GOLFSTAT"                       8 bytes
//	       8   version  uint32 (1)
//	      12   hdrLen   uint32: length of the JSON header
//	      16   header   JSON: {"meta": {...}, "tensors": [{"name","shape","offset","nbytes"}]}
//	           zero padding to a multiple of 64
//	           data     float32 tensors, each at its offset (relative to
//	                    the start of the data, multiples of 64)
//	 end-32   sha256    of every byte before it
//
// A file whose checksum, magic, version, header or tensor table does not
// hold is refused with an error naming it; nothing is trusted before the
// checksum has been verified.
package trainstate

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/golf-ml/golf/internal/atomicfile"
)

// Magic and Version identify the format.
const (
	Magic   = "GOLFSTAT"
	Version = 1

	align      = 64
	prefixLen  = 16
	sumLen     = sha256.Size
	maxHeader  = 64 << 20 // bytes of JSON header accepted
	fileSuffix = ".state"
)

// Tensor is one named fp32 array of the state.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// State is one checkpoint: Meta is the caller's JSON-encodable description
// (step, schedule, data position, configuration, ...), Tensors the arrays.
type State struct {
	Meta    json.RawMessage
	Tensors []Tensor
}

// Tensor returns the tensor called name, or nil.
func (s *State) Tensor(name string) *Tensor {
	for i := range s.Tensors {
		if s.Tensors[i].Name == name {
			return &s.Tensors[i]
		}
	}
	return nil
}

type tensorEntry struct {
	Name   string `json:"name"`
	Shape  []int  `json:"shape"`
	Offset int64  `json:"offset"`
	NBytes int64  `json:"nbytes"`
}

type header struct {
	Meta    json.RawMessage `json:"meta"`
	Tensors []tensorEntry   `json:"tensors"`
}

func padTo(n int64) int64 { return (n + align - 1) / align * align }

// Encode writes s to w in the format of the package doc.
func Encode(w io.Writer, s *State) error {
	h := header{Meta: s.Meta, Tensors: make([]tensorEntry, len(s.Tensors))}
	if len(h.Meta) == 0 {
		h.Meta = json.RawMessage("null")
	}
	seen := map[string]bool{}
	var off int64
	for i, t := range s.Tensors {
		if t.Name == "" || seen[t.Name] {
			return fmt.Errorf("trainstate: tensor name %q empty or repeated", t.Name)
		}
		seen[t.Name] = true
		n, ok := numel(t.Shape)
		if !ok || n != int64(len(t.Data)) {
			return fmt.Errorf("trainstate: tensor %q: shape %v does not hold %d values", t.Name, t.Shape, len(t.Data))
		}
		h.Tensors[i] = tensorEntry{Name: t.Name, Shape: slices.Clone(t.Shape), Offset: off, NBytes: 4 * n}
		off = padTo(off + 4*n)
	}
	js, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("trainstate: header: %w", err)
	}
	if len(js) > maxHeader {
		return fmt.Errorf("trainstate: header of %d bytes exceeds %d", len(js), maxHeader)
	}
	sum := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<20)
	var pre [prefixLen]byte
	copy(pre[:], Magic)
	binary.LittleEndian.PutUint32(pre[8:], Version)
	binary.LittleEndian.PutUint32(pre[12:], uint32(len(js)))
	bw.Write(pre[:])
	bw.Write(js)
	bw.Write(make([]byte, padTo(int64(prefixLen+len(js)))-int64(prefixLen+len(js))))
	buf := make([]byte, 0, 1<<16)
	for i, t := range s.Tensors {
		for j, x := range t.Data {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			if len(buf) == cap(buf) || j == len(t.Data)-1 {
				bw.Write(buf)
				buf = buf[:0]
			}
		}
		e := h.Tensors[i]
		bw.Write(make([]byte, padTo(e.Offset+e.NBytes)-(e.Offset+e.NBytes)))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(sum.Sum(nil))
	return err
}

// Decode parses a whole state file held in b; name appears in errors.
func Decode(b []byte, name string) (*State, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: not a usable training state: %s", name, fmt.Sprintf(format, args...))
	}
	if len(b) < prefixLen+sumLen {
		return nil, bad("truncated (%d bytes)", len(b))
	}
	body, trailer := b[:len(b)-sumLen], b[len(b)-sumLen:]
	if string(body[:8]) != Magic {
		return nil, bad("wrong magic %q", body[:8])
	}
	if got := sha256.Sum256(body); !bytes.Equal(got[:], trailer) {
		return nil, bad("checksum mismatch (corrupt or truncated file)")
	}
	if v := binary.LittleEndian.Uint32(body[8:]); v != Version {
		return nil, bad("format version %d, this golf reads %d", v, Version)
	}
	hl := int64(binary.LittleEndian.Uint32(body[12:]))
	if hl > maxHeader || prefixLen+hl > int64(len(body)) {
		return nil, bad("header length %d out of range", hl)
	}
	var h header
	dec := json.NewDecoder(bytes.NewReader(body[prefixLen : prefixLen+hl]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, bad("header: %v", err)
	}
	data := body[min(padTo(prefixLen+hl), int64(len(body))):]
	s := &State{Meta: h.Meta, Tensors: make([]Tensor, 0, len(h.Tensors))}
	seen := map[string]bool{}
	var next int64
	for _, e := range h.Tensors {
		n, ok := numel(e.Shape)
		switch {
		case e.Name == "" || seen[e.Name]:
			return nil, bad("tensor name %q empty or repeated", e.Name)
		case !ok || e.NBytes != 4*n:
			return nil, bad("tensor %q: shape %v does not match %d bytes", e.Name, e.Shape, e.NBytes)
		case e.Offset != next || e.Offset+e.NBytes > int64(len(data)):
			return nil, bad("tensor %q: bytes [%d, %d) outside the data or out of order", e.Name, e.Offset, e.Offset+e.NBytes)
		}
		seen[e.Name] = true
		raw := data[e.Offset : e.Offset+e.NBytes]
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		s.Tensors = append(s.Tensors, Tensor{Name: e.Name, Shape: e.Shape, Data: v})
		next = padTo(e.Offset + e.NBytes)
	}
	if next != int64(len(data)) {
		return nil, bad("%d bytes of data, the tensor table accounts for %d", len(data), next)
	}
	return s, nil
}

// numel is the element count of shape, false when a dimension is negative
// or the count overflows what a file can hold.
func numel(shape []int) (int64, bool) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 || (d > 0 && n > (math.MaxInt64/8)/int64(d)) {
			return 0, false
		}
		n *= int64(d)
	}
	return n, true
}

// Write stores s at path atomically: a temporary file in the same
// directory is written, synced and renamed, and the directory synced, so
// path is either absent, its old content, or complete.
func Write(path string, s *State) error {
	_, err := atomicfile.Write(path, func(w io.Writer) error { return Encode(w, s) })
	return err
}

// Read loads and verifies the state file at path.
func Read(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("training state: %w", err)
	}
	return Decode(b, path)
}

// Dir is where the checkpoints of run runID live under outDir.
func Dir(outDir, runID string) string { return filepath.Join(outDir, "checkpoints", runID) }

// FileName is the name of the checkpoint of step.
func FileName(step int) string { return fmt.Sprintf("step_%08d%s", step, fileSuffix) }

// stepOf parses a checkpoint file name; ok is false for other names.
func stepOf(name string) (int, bool) {
	s, found := strings.CutPrefix(name, "step_")
	if !found {
		return 0, false
	}
	s, found = strings.CutSuffix(s, fileSuffix)
	if !found || len(s) != 8 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// Checkpoint is a state file of a run, by step.
type Checkpoint struct {
	Path string
	Step int
}

// List returns the checkpoints in dir, oldest step first. A missing dir
// holds none.
func List(dir string) ([]Checkpoint, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Checkpoint
	for _, e := range ents {
		if step, ok := stepOf(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, Checkpoint{Path: filepath.Join(dir, e.Name()), Step: step})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, nil
}

// Prune removes all but the newest keep checkpoints in dir.
func Prune(dir string, keep int) error {
	cps, err := List(dir)
	if err != nil {
		return err
	}
	for i := 0; i < len(cps)-max(keep, 1); i++ {
		if err := os.Remove(cps[i].Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

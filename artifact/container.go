package artifact

import (
	"github.com/golf-ml/golf/internal/atomicfile"

	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Member-name prefixes and the metadata key of the quantized container.
const (
	prefixQuantized   = "quantized/"
	prefixScales      = "scales/"
	prefixPassthrough = "passthrough/"
	metaKey           = "__meta__"
)

// quantMeta is the JSON held (UTF-8, as a uint8 array) in __meta__.npy.
type quantMeta struct {
	Format                string            `json:"__quant_format__"`
	DTypes                map[string]string `json:"dtypes"`
	QMeta                 map[string]QMeta  `json:"qmeta"`
	PassthroughOrigDTypes map[string]string `json:"passthrough_orig_dtypes"`
	Order                 []string          `json:"order"`
}

// EncodeQuantized serializes q as the uncompressed .npz byte stream of the
// container (see the package documentation): __meta__.npy first, then per
// tensor in order quantized/<name>.npy and scales/<name>.npy, or
// passthrough/<name>.npy. Members are stored, so the result is
// deterministic.
func EncodeQuantized(q *Quantized) ([]byte, error) {
	meta := quantMeta{
		Format:                QuantFormat,
		DTypes:                q.DTypes,
		QMeta:                 q.QMeta,
		PassthroughOrigDTypes: q.PassthroughOrigDTypes,
		Order:                 q.Order,
	}
	js, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("quantized metadata: %w", err)
	}
	members := []NamedArray{{Name: metaKey, Array: Array{Elem: ElemU1, Shape: []int{len(js)}, Data: js}}}
	for _, name := range q.Order {
		if a, ok := q.Quantized[name]; ok {
			s, ok := q.Scales[name]
			if !ok {
				panic(fmt.Sprintf("artifact: EncodeQuantized: %q has no scale", name))
			}
			members = append(members,
				NamedArray{Name: prefixQuantized + name, Array: a},
				NamedArray{Name: prefixScales + name, Array: s})
			continue
		}
		a, ok := q.Passthrough[name]
		if !ok {
			panic(fmt.Sprintf("artifact: EncodeQuantized: %q is neither quantized nor passthrough", name))
		}
		members = append(members, NamedArray{Name: prefixPassthrough + name, Array: a})
	}
	var buf bytes.Buffer
	if err := WriteNPZ(&buf, members, false); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SaveQuantized writes q to path as zlib (level 9) of EncodeQuantized(q),
// atomically (temporary file, sync, rename; nothing left on error). It
// returns the file's size and the size of the uncompressed .npz stream
// (the reference logs the latter as raw_pickle).
func SaveQuantized(path string, q *Quantized) (fileBytes, rawBytes int, err error) {
	raw, err := EncodeQuantized(q)
	if err != nil {
		return 0, 0, fmt.Errorf("write %s: %w", path, err)
	}
	n, err := atomicfile.Write(path, func(w io.Writer) error {
		zw, err := zlib.NewWriterLevel(w, zlib.BestCompression)
		if err != nil {
			return err
		}
		if _, err := zw.Write(raw); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return 0, 0, err
	}
	return int(n), len(raw), nil
}

// LoadQuantized reads a container written by SaveQuantized (or by any tool
// following the documented format) and checks that it is well formed; see
// ReadQuantized for the cap on its size. Errors name path.
func LoadQuantized(path string, opts ...ReadOption) (*Quantized, error) {
	f, _, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	q, err := ReadQuantized(bufio.NewReader(f), opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return q, nil
}

// ReadQuantized inflates a container's zlib stream and decodes it
// (DecodeQuantized). The stream may inflate to at most the cap
// (DefaultMaxBytes, or MaxBytes): inflating stops there with an error, so a
// small file that would inflate to gigabytes costs at most the cap.
func ReadQuantized(r io.Reader, opts ...ReadOption) (*Quantized, error) {
	zr, err := zlib.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not zlib data: %w", err)
	}
	lim := newLimits(opts)
	var raw bytes.Buffer
	n, err := raw.ReadFrom(io.LimitReader(zr, lim.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("corrupt zlib data: %w", err)
	}
	if n > lim.maxBytes {
		return nil, fmt.Errorf("the zlib stream inflates to more than the %d-byte cap on what this artifact may decode", lim.maxBytes)
	}
	return DecodeQuantized(raw.Bytes(), opts...)
}

// DecodeQuantized parses the uncompressed .npz stream of the container and
// validates it: every name in the order is either quantized (int8 payload,
// a float scale of the right shape, a float dtype) or passthrough, and no
// member is left over. The members are read under the cap of ReadNPZArrays.
func DecodeQuantized(raw []byte, opts ...ReadOption) (*Quantized, error) {
	members, err := ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)), opts...)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]Array, len(members))
	for _, m := range members {
		byName[m.Name] = m.Array
	}
	ma, ok := byName[metaKey]
	if !ok {
		return nil, errors.New("quantized container has no __meta__.npy")
	}
	if ma.Elem != ElemU1 || len(ma.Shape) != 1 {
		return nil, fmt.Errorf("__meta__ is %v %v, want a 1-D uint8 array", ma.Elem, ma.Shape)
	}
	var meta quantMeta
	dec := json.NewDecoder(bytes.NewReader(ma.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&meta); err != nil {
		return nil, fmt.Errorf("__meta__: %w", err)
	}
	if meta.Format != QuantFormat {
		return nil, fmt.Errorf("__quant_format__ is %q, want %q", meta.Format, QuantFormat)
	}
	q := &Quantized{
		Order:                 meta.Order,
		Quantized:             map[string]Array{},
		Scales:                map[string]Array{},
		DTypes:                orEmpty(meta.DTypes),
		QMeta:                 orEmpty(meta.QMeta),
		Passthrough:           map[string]Array{},
		PassthroughOrigDTypes: orEmpty(meta.PassthroughOrigDTypes),
	}
	used := map[string]bool{metaKey: true}
	seen := map[string]bool{}
	for _, name := range q.Order {
		if name == "" || seen[name] {
			return nil, fmt.Errorf("order lists %q twice or an empty name", name)
		}
		seen[name] = true
		qa, isQ := byName[prefixQuantized+name]
		pa, isP := byName[prefixPassthrough+name]
		switch {
		case isQ && isP:
			return nil, fmt.Errorf("tensor %q is both quantized and passthrough", name)
		case isQ:
			sa, ok := byName[prefixScales+name]
			if !ok {
				return nil, fmt.Errorf("tensor %q has no scales/%s.npy", name, name)
			}
			if err := checkQuantizedEntry(name, qa, sa, q); err != nil {
				return nil, err
			}
			q.Quantized[name], q.Scales[name] = qa, sa
			used[prefixQuantized+name], used[prefixScales+name] = true, true
		case isP:
			if err := checkPassthroughEntry(name, pa, q); err != nil {
				return nil, err
			}
			q.Passthrough[name] = pa
			used[prefixPassthrough+name] = true
		default:
			return nil, fmt.Errorf("tensor %q has neither quantized/%s.npy nor passthrough/%s.npy", name, name, name)
		}
	}
	for _, m := range members {
		if !used[m.Name] {
			return nil, fmt.Errorf("member %s.npy is not in the metadata's order", m.Name)
		}
	}
	for _, tab := range []struct {
		what  string
		names []string
		want  map[string]Array
	}{
		{"dtypes", keys(q.DTypes), q.Quantized},
		{"qmeta", keys(q.QMeta), q.Quantized},
		{"passthrough_orig_dtypes", keys(q.PassthroughOrigDTypes), q.Passthrough},
	} {
		for _, n := range tab.names {
			if _, ok := tab.want[n]; !ok {
				return nil, fmt.Errorf("%s names %q, which has no matching array", tab.what, n)
			}
		}
	}
	return q, nil
}

func checkQuantizedEntry(name string, qa, sa Array, q *Quantized) error {
	if qa.Elem != ElemI1 {
		return fmt.Errorf("quantized/%s is %v, want int8", name, qa.Elem)
	}
	if _, ok := dtypeFromName(q.DTypes[name]); !ok {
		return fmt.Errorf("dtypes[%q] is %q, want float32, float16 or bfloat16", name, q.DTypes[name])
	}
	if !sa.Elem.IsFloat() {
		return fmt.Errorf("scales/%s is %v, want a float array", name, sa.Elem)
	}
	m, hasMeta := q.QMeta[name]
	if hasMeta && (m.Scheme != SchemePerRow || m.Axis != 0) {
		return fmt.Errorf("qmeta[%q] is %+v, want scheme per_row, axis 0", name, m)
	}
	if hasMeta || len(sa.Shape) > 0 {
		if len(qa.Shape) == 0 || len(sa.Shape) != 1 || sa.Shape[0] != qa.Shape[0] {
			return fmt.Errorf("scales/%s has shape %v for per-row payload of shape %v", name, sa.Shape, qa.Shape)
		}
		return nil
	}
	if sa.Numel() != 1 {
		return fmt.Errorf("scales/%s has shape %v, want a scalar", name, sa.Shape)
	}
	return nil
}

func checkPassthroughEntry(name string, pa Array, q *Quantized) error {
	switch pa.Elem {
	case ElemF4, ElemF2, ElemBF16, ElemI4:
	default:
		return fmt.Errorf("passthrough/%s is %v, want float32, float16, bfloat16 or int32", name, pa.Elem)
	}
	if orig, ok := q.PassthroughOrigDTypes[name]; ok {
		if _, ok := dtypeFromName(orig); !ok || !pa.Elem.IsFloat() {
			return fmt.Errorf("passthrough_orig_dtypes[%q] is %q for %v storage", name, orig, pa.Elem)
		}
	}
	return nil
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

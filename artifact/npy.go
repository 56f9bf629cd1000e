package artifact

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/golf-ml/golf/backend"
)

// Elem is the element type of a .npy array, named by its numpy descr.
type Elem uint8

const (
	ElemF4   Elem = iota + 1 // '<f4' float32
	ElemF2                   // '<f2' float16
	ElemBF16                 // '<V2' bfloat16 as MLX writes it; numpy reads raw 2-byte voids
	ElemI1                   // '|i1' int8: quantized payloads
	ElemU1                   // '|u1' uint8: the quantized container's JSON metadata
	ElemI4                   // '<i4' int32
)

// Descr is the numpy array-protocol type string written in .npy headers.
func (e Elem) Descr() string {
	switch e {
	case ElemF4:
		return "<f4"
	case ElemF2:
		return "<f2"
	case ElemBF16:
		return "<V2"
	case ElemI1:
		return "|i1"
	case ElemU1:
		return "|u1"
	case ElemI4:
		return "<i4"
	}
	panic(fmt.Sprintf("artifact: unknown Elem %d", e))
}

// Size is the number of bytes of one element.
func (e Elem) Size() int {
	switch e {
	case ElemF4, ElemI4:
		return 4
	case ElemF2, ElemBF16:
		return 2
	case ElemI1, ElemU1:
		return 1
	}
	panic(fmt.Sprintf("artifact: unknown Elem %d", e))
}

// String is the numpy/MLX dtype name: float32, float16, bfloat16, int8, uint8, int32.
func (e Elem) String() string {
	switch e {
	case ElemF4:
		return "float32"
	case ElemF2:
		return "float16"
	case ElemBF16:
		return "bfloat16"
	case ElemI1:
		return "int8"
	case ElemU1:
		return "uint8"
	case ElemI4:
		return "int32"
	}
	return fmt.Sprintf("elem(%d)", uint8(e))
}

// IsFloat reports whether e holds floating-point values.
func (e Elem) IsFloat() bool { return e == ElemF4 || e == ElemF2 || e == ElemBF16 }

// elemFromDescr parses a numpy descr. Byte order '=' and '|' are accepted
// for one-byte types and voids; big-endian data is refused.
func elemFromDescr(d string) (Elem, error) {
	switch d {
	case "<f4", "=f4":
		return ElemF4, nil
	case "<f2", "=f2":
		return ElemF2, nil
	case "<V2", "|V2", "V2":
		return ElemBF16, nil
	case "|i1", "<i1", "=i1", "i1":
		return ElemI1, nil
	case "|u1", "<u1", "=u1", "u1":
		return ElemU1, nil
	case "<i4", "=i4":
		return ElemI4, nil
	}
	return 0, fmt.Errorf("unsupported dtype descr %q (want <f4, <f2, <V2, |i1, |u1 or <i4)", d)
}

// Array is one .npy array: element type, C-order shape and the raw
// little-endian bytes, len(Data) = Numel·Elem.Size().
type Array struct {
	Elem  Elem
	Shape []int
	Data  []byte
}

// numel is the product of shape (1 for a 0-d array).
func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Numel is the number of elements.
func (a Array) Numel() int { return numel(a.Shape) }

// check panics when the byte count does not match the shape.
func (a Array) check(what string) {
	for _, d := range a.Shape {
		if d < 0 {
			panic(fmt.Sprintf("artifact: %s: negative dimension in shape %v", what, a.Shape))
		}
	}
	if len(a.Data) != a.Numel()*a.Elem.Size() {
		panic(fmt.Sprintf("artifact: %s: %d bytes for shape %v of %v", what, len(a.Data), a.Shape, a.Elem))
	}
}

// Float32s widens a float array (f4, f2, bfloat16) to float32 values (exact).
func (a Array) Float32s() []float32 {
	n := a.Numel()
	out := make([]float32, n)
	switch a.Elem {
	case ElemF4:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
		}
	case ElemF2:
		for i := range out {
			out[i] = backend.F16Float(binary.LittleEndian.Uint16(a.Data[2*i:]))
		}
	case ElemBF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(a.Data[2*i:])) << 16)
		}
	case ElemI1:
		for i := range out {
			out[i] = float32(int8(a.Data[i]))
		}
	default:
		panic(fmt.Sprintf("artifact: Float32s of %v array", a.Elem))
	}
	return out
}

// Int8s returns the values of an int8 array.
func (a Array) Int8s() []int8 {
	if a.Elem != ElemI1 {
		panic(fmt.Sprintf("artifact: Int8s of %v array", a.Elem))
	}
	out := make([]int8, len(a.Data))
	for i, b := range a.Data {
		out[i] = int8(b)
	}
	return out
}

// Int32s returns the values of an int32 array.
func (a Array) Int32s() []int32 {
	if a.Elem != ElemI4 {
		panic(fmt.Sprintf("artifact: Int32s of %v array", a.Elem))
	}
	out := make([]int32, a.Numel())
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(a.Data[4*i:]))
	}
	return out
}

// F32Array packs float32 values as '<f4'.
func F32Array(shape []int, xs []float32) Array {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Array{Elem: ElemF4, Shape: cloneShape(shape), Data: b}
}

// F16Array rounds float32 values to float16 (nearest, ties to even) and
// packs them as '<f2'.
func F16Array(shape []int, xs []float32) Array {
	b := make([]byte, 2*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint16(b[2*i:], backend.F16Bits(x))
	}
	return Array{Elem: ElemF2, Shape: cloneShape(shape), Data: b}
}

// BF16Array rounds float32 values to bfloat16 (nearest, ties to even) and
// packs them as MLX does ('<V2', the top 16 bits of the float32).
func BF16Array(shape []int, xs []float32) Array {
	b := make([]byte, 2*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint16(b[2*i:], backend.BF16Bits(x))
	}
	return Array{Elem: ElemBF16, Shape: cloneShape(shape), Data: b}
}

// I32Array packs int32 values as '<i4'.
func I32Array(shape []int, xs []int32) Array {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return Array{Elem: ElemI4, Shape: cloneShape(shape), Data: b}
}

// I8Array packs int8 values as '|i1'.
func I8Array(shape []int, xs []int8) Array {
	b := make([]byte, len(xs))
	for i, x := range xs {
		b[i] = byte(x)
	}
	return Array{Elem: ElemI1, Shape: cloneShape(shape), Data: b}
}

func cloneShape(s []int) []int { return append([]int{}, s...) }

// npyMagic opens every .npy file.
const npyMagic = "\x93NUMPY"

// npyAlign is numpy's ARRAY_ALIGN: the header is padded so data starts on a
// multiple of 64 bytes.
const npyAlign = 64

// npyHeader is the version 1.0 header for (descr, shape) in numpy's own
// spelling, which MLX's loader also parses (it reads descr at byte 11 and
// fortran_order at byte 34 of the dict):
//
//	\x93NUMPY \x01 \x00 <uint16 len> {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }<spaces>\n
func npyHeader(descr string, shape []int) ([]byte, error) {
	var d strings.Builder
	d.WriteString("{'descr': '")
	d.WriteString(descr)
	d.WriteString("', 'fortran_order': False, 'shape': (")
	for i, n := range shape {
		if i > 0 {
			d.WriteString(", ")
		}
		d.WriteString(strconv.Itoa(n))
	}
	if len(shape) == 1 {
		d.WriteString(",")
	}
	d.WriteString("), }")
	dict := d.String()
	total := len(npyMagic) + 2 + 2 + len(dict) + 1
	pad := (npyAlign - total%npyAlign) % npyAlign
	hlen := len(dict) + pad + 1
	if hlen > math.MaxUint16 {
		return nil, fmt.Errorf("npy header of %d bytes does not fit version 1.0", hlen)
	}
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.Write([]byte{1, 0})
	_ = binary.Write(&b, binary.LittleEndian, uint16(hlen))
	b.WriteString(dict)
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// WriteNPY writes a as a version 1.0 .npy stream (C order, little-endian).
func WriteNPY(w io.Writer, a Array) error {
	a.check("WriteNPY")
	h, err := npyHeader(a.Elem.Descr(), a.Shape)
	if err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	_, err = w.Write(a.Data)
	return err
}

// npyMaxHeader is the longest header ReadNPY accepts, numpy's own limit
// (numpy.lib.format's max_header_size, 10000 bytes): every header golf,
// numpy or MLX write for the dtypes here is far shorter.
const npyMaxHeader = 10000

// npyMaxDims is numpy's NPY_MAXDIMS (64 since numpy 2.0). It also bounds
// the work of reordering a Fortran-order array (elements × dimensions).
const npyMaxDims = 64

// ReadNPY reads one .npy stream (versions 1.0, 2.0 and 3.0). Arrays written
// in Fortran order (MLX does so for column-contiguous arrays) are returned
// in C order. Bytes after the data are an error. The header's shape is
// checked against the cap (DefaultMaxBytes, or MaxBytes) before the data is
// read, and the data buffer grows only as the stream delivers bytes, so a
// short stream claiming a large shape allocates little.
func ReadNPY(r io.Reader, opts ...ReadOption) (Array, error) {
	h, err := readNPYHeader(r)
	if err != nil {
		return Array{}, err
	}
	lim := newLimits(opts)
	if err := lim.take(h.prefix+h.nbytes, fmt.Sprintf("npy: array of shape %v %v", h.shape, h.elem)); err != nil {
		return Array{}, err
	}
	return readNPYData(r, h)
}

// npyHeaderInfo is a parsed .npy header.
type npyHeaderInfo struct {
	elem    Elem
	fortran bool
	shape   []int
	prefix  int64 // bytes before the data: magic, version, length, header
	nbytes  int64 // bytes of data the shape implies
}

// readNPYHeader reads and parses the magic, version and header of a .npy
// stream, leaving r at the first data byte.
func readNPYHeader(r io.Reader) (npyHeaderInfo, error) {
	var h npyHeaderInfo
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return h, fmt.Errorf("npy: short header: %w", err)
	}
	if string(pre[:6]) != npyMagic {
		return h, errors.New("npy: bad magic (not a .npy stream)")
	}
	var hlen, lenBytes int
	switch pre[6] {
	case 1:
		var n [2]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return h, fmt.Errorf("npy: short header: %w", err)
		}
		hlen, lenBytes = int(binary.LittleEndian.Uint16(n[:])), 2
	case 2, 3:
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return h, fmt.Errorf("npy: short header: %w", err)
		}
		if v := binary.LittleEndian.Uint32(n[:]); v > npyMaxHeader {
			return h, fmt.Errorf("npy: header of %d bytes is longer than numpy's limit of %d", v, npyMaxHeader)
		}
		hlen, lenBytes = int(binary.LittleEndian.Uint32(n[:])), 4
	default:
		return h, fmt.Errorf("npy: unsupported format version %d.%d", pre[6], pre[7])
	}
	if hlen > npyMaxHeader {
		return h, fmt.Errorf("npy: header of %d bytes is longer than numpy's limit of %d", hlen, npyMaxHeader)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return h, fmt.Errorf("npy: short header: %w", err)
	}
	descr, fortran, shape, err := parseNPYHeader(string(hdr))
	if err != nil {
		return h, fmt.Errorf("npy: %w", err)
	}
	e, err := elemFromDescr(descr)
	if err != nil {
		return h, fmt.Errorf("npy: %w", err)
	}
	if len(shape) > npyMaxDims {
		return h, fmt.Errorf("npy: shape with %d dimensions, more than numpy's %d", len(shape), npyMaxDims)
	}
	n := int64(e.Size())
	for _, d := range shape {
		if d < 0 || (d > 0 && n > math.MaxInt64/int64(d)) {
			return h, fmt.Errorf("npy: shape %v is too large", shape)
		}
		n *= int64(d)
	}
	return npyHeaderInfo{elem: e, fortran: fortran, shape: shape, prefix: int64(len(pre) + lenBytes + hlen), nbytes: n}, nil
}

// readNPYData reads the data the header h describes and checks that the
// stream ends there.
func readNPYData(r io.Reader, h npyHeaderInfo) (Array, error) {
	data, err := readFull(r, h.nbytes)
	if err != nil {
		return Array{}, fmt.Errorf("npy: data of shape %v %v truncated: %w", h.shape, h.elem, err)
	}
	var extra [1]byte
	if k, _ := r.Read(extra[:]); k > 0 {
		return Array{}, fmt.Errorf("npy: bytes after the data of shape %v %v", h.shape, h.elem)
	}
	a := Array{Elem: h.elem, Shape: h.shape, Data: data}
	if h.fortran && len(h.shape) > 1 {
		a.Data = fortranToC(data, h.shape, h.elem.Size())
	}
	return a, nil
}

// readFull reads exactly n bytes. The buffer starts at 1 MiB at most and
// doubles as bytes arrive, so a stream shorter than n costs about twice
// what it delivers, never n.
func readFull(r io.Reader, n int64) ([]byte, error) {
	const first = 1 << 20
	buf := make([]byte, 0, min(n, first))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(n, 2*int64(cap(buf))))-len(buf))
		}
		k, err := io.ReadFull(r, buf[len(buf):min(int64(cap(buf)), n)])
		buf = buf[:len(buf)+k]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// fortranToC reorders column-major data of the given (logical) shape into
// row-major order.
func fortranToC(src []byte, shape []int, size int) []byte {
	// Unit dimensions do not change either layout; dropping them keeps the
	// index arithmetic below proportional to the real rank.
	var dims []int
	for _, d := range shape {
		if d != 1 {
			dims = append(dims, d)
		}
	}
	shape = dims
	dst := make([]byte, len(src))
	nd := len(shape)
	idx := make([]int, nd)
	fstride := make([]int, nd) // element strides of the Fortran layout
	s := 1
	for k := 0; k < nd; k++ {
		fstride[k] = s
		s *= shape[k]
	}
	n := numel(shape)
	for c := 0; c < n; c++ {
		off := 0
		for k := 0; k < nd; k++ {
			off += idx[k] * fstride[k]
		}
		copy(dst[c*size:(c+1)*size], src[off*size:(off+1)*size])
		for k := nd - 1; k >= 0; k-- { // advance the C-order index
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return dst
}

// parseNPYHeader reads the Python dict literal of a .npy header:
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
func parseNPYHeader(h string) (descr string, fortran bool, shape []int, err error) {
	p := &dictParser{s: strings.TrimRight(h, " \n\x00")}
	if !p.eat('{') {
		return "", false, nil, fmt.Errorf("header %q is not a dict", h)
	}
	seen := map[string]bool{}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return "", false, nil, fmt.Errorf("header %q: %w", h, err)
		}
		p.space()
		if !p.eat(':') {
			return "", false, nil, fmt.Errorf("header %q: missing ':' after %q", h, key)
		}
		p.space()
		switch key {
		case "descr":
			descr, err = p.str()
		case "fortran_order":
			fortran, err = p.boolean()
		case "shape":
			shape, err = p.tuple()
		default:
			err = fmt.Errorf("unknown key %q", key)
		}
		if err != nil {
			return "", false, nil, fmt.Errorf("header %q: %w", h, err)
		}
		seen[key] = true
		p.space()
		p.eat(',')
	}
	p.space()
	if p.i != len(p.s) {
		return "", false, nil, fmt.Errorf("header %q: trailing text", h)
	}
	if !seen["descr"] || !seen["fortran_order"] || !seen["shape"] {
		return "", false, nil, fmt.Errorf("header %q lacks descr, fortran_order or shape", h)
	}
	return descr, fortran, shape, nil
}

// dictParser scans the small subset of Python literals .npy headers use.
type dictParser struct {
	s string
	i int
}

func (p *dictParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *dictParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *dictParser) str() (string, error) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", errors.New("expected a quoted string")
	}
	q := p.s[p.i]
	j := strings.IndexByte(p.s[p.i+1:], q)
	if j < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+j]
	p.i += j + 2
	return v, nil
}

func (p *dictParser) boolean() (bool, error) {
	switch {
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	}
	return false, errors.New("expected True or False")
}

func (p *dictParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("expected a shape tuple")
	}
	shape := []int{}
	for {
		p.space()
		if p.eat(')') {
			return shape, nil
		}
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		if j == p.i {
			return nil, errors.New("expected a dimension")
		}
		d, err := strconv.Atoi(p.s[p.i:j])
		if err != nil {
			return nil, err
		}
		shape = append(shape, d)
		p.i = j
		p.eat('L') // Python 2 longs
		p.space()
		if !p.eat(',') {
			p.space()
			if !p.eat(')') {
				return nil, errors.New("expected ',' or ')' in shape")
			}
			return shape, nil
		}
	}
}

package artifact

import (
	"github.com/golf-ml/golf/internal/atomicfile"

	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"strings"
)

// NamedArray is one member of an .npz archive: the key numpy.load shows
// (the member file is Name + ".npy") and its array.
type NamedArray struct {
	Name  string
	Array Array
}

// zipDate1980 is 1980-01-01 in MS-DOS date format: every member gets this
// fixed date so an archive's bytes depend only on its contents. It is set
// through the deprecated FileHeader.ModifiedDate on purpose: setting
// Modified instead makes archive/zip add an extended-timestamp extra
// field, which numpy's archives (Python's zipfile) do not carry.
const zipDate1980 = 1<<5 | 1

// WriteNPZ writes an .npz archive (a zip of .npy members, in order) as
// numpy.savez (stored members) or numpy.savez_compressed (deflate) would.
// Keys may contain '/'; numpy.load keeps them as written.
func WriteNPZ(w io.Writer, members []NamedArray, deflate bool) error {
	zw := zip.NewWriter(w)
	seen := make(map[string]bool, len(members))
	var buf bytes.Buffer
	for _, m := range members {
		if m.Name == "" || seen[m.Name] {
			panic(fmt.Sprintf("artifact: WriteNPZ: empty or duplicate member name %q", m.Name))
		}
		seen[m.Name] = true
		buf.Reset()
		if err := WriteNPY(&buf, m.Array); err != nil {
			return fmt.Errorf("member %s: %w", m.Name, err)
		}
		if deflate {
			//lint:ignore SA1019 see zipDate1980
			fw, err := zw.CreateHeader(&zip.FileHeader{Name: m.Name + ".npy", Method: zip.Deflate, ModifiedDate: zipDate1980})
			if err != nil {
				return err
			}
			if _, err := fw.Write(buf.Bytes()); err != nil {
				return err
			}
			continue
		}
		// Stored members go in raw with their CRC and sizes in the local
		// header, as Python's zipfile writes them (no data descriptor).
		fw, err := zw.CreateRaw(&zip.FileHeader{
			Name:               m.Name + ".npy",
			Method:             zip.Store,
			CRC32:              crc32.ChecksumIEEE(buf.Bytes()),
			CompressedSize64:   uint64(buf.Len()),
			UncompressedSize64: uint64(buf.Len()),
			//lint:ignore SA1019 see zipDate1980
			ModifiedDate: zipDate1980,
		})
		if err != nil {
			return err
		}
		if _, err := fw.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	return zw.Close()
}

// ReadNPZArrays reads every member of an .npz archive, in archive order.
// Members must be .npy files; size is the archive's length in bytes. The
// sizes the zip declares are checked against the cap (DefaultMaxBytes, or
// MaxBytes) before any member is read, and each member's .npy header must
// account for exactly its declared size, so nothing larger than the archive
// declares (and the cap allows) is allocated.
func ReadNPZArrays(r io.ReaderAt, size int64, opts ...ReadOption) ([]NamedArray, error) {
	var out []NamedArray
	err := walkNPZ(r, size, newLimits(opts), func(name string, rc io.Reader, h npyHeaderInfo) error {
		a, err := readNPYData(rc, h)
		if err == nil {
			// Drain to the end so the zip reader verifies the CRC.
			_, err = io.Copy(io.Discard, rc)
		}
		if err == nil {
			out = append(out, NamedArray{Name: name, Array: a})
		}
		return err
	})
	return out, err
}

// walkNPZ opens an .npz archive, checks its members' names and declared
// sizes against lim, and calls f for each member in archive order with the
// member's reader positioned after the .npy header.
func walkNPZ(r io.ReaderAt, size int64, lim *readLimits, f func(name string, rc io.Reader, h npyHeaderInfo) error) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return fmt.Errorf("not an npz (zip) archive: %w", err)
	}
	seen := make(map[string]bool, len(zr.File))
	var declared int64 // saturates at MaxInt64
	for _, zf := range zr.File {
		name, ok := strings.CutSuffix(zf.Name, ".npy")
		if !ok || name == "" {
			return fmt.Errorf("member %q is not a named .npy file", zf.Name)
		}
		if seen[name] {
			return fmt.Errorf("member %q appears twice", zf.Name)
		}
		seen[name] = true
		if d := zf.UncompressedSize64; d > uint64(math.MaxInt64-declared) {
			declared = math.MaxInt64
		} else {
			declared += int64(d)
		}
	}
	if err := lim.take(declared, fmt.Sprintf("the archive's %d members (as its directory declares)", len(zr.File))); err != nil {
		return err
	}
	for _, zf := range zr.File {
		if err := walkMember(zf, f); err != nil {
			return fmt.Errorf("member %s: %w", zf.Name, err)
		}
	}
	return nil
}

func walkMember(zf *zip.File, f func(name string, rc io.Reader, h npyHeaderInfo) error) error {
	rc, err := zf.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	h, err := readNPYHeader(rc)
	if err != nil {
		return err
	}
	if uint64(h.prefix)+uint64(h.nbytes) != zf.UncompressedSize64 || h.nbytes > math.MaxInt64-h.prefix {
		return fmt.Errorf("npy header says shape %v %v (%d bytes with the header) but the archive declares %d bytes",
			h.shape, h.elem, h.prefix+h.nbytes, zf.UncompressedSize64)
	}
	return f(strings.TrimSuffix(zf.Name, ".npy"), rc, h)
}

// SaveNPZ writes tensors to path as an .npz archive numpy.load and mx.load
// read, one stored member "<name>.npy" per tensor in order (as mx.savez
// writes the raw model). The write is atomic: a temporary file in the same
// directory is synced and renamed over path; on error no file is left.
func SaveNPZ(path string, tensors []Tensor) error {
	checkTensors(tensors)
	members := make([]NamedArray, len(tensors))
	for i, t := range tensors {
		members[i] = NamedArray{Name: t.Name, Array: t.ToArray()}
	}
	_, err := atomicfile.Write(path, func(w io.Writer) error {
		return WriteNPZ(w, members, false)
	})
	return err
}

// ReadNPZ reads the tensors of an .npz archive in archive order: float32,
// float16, bfloat16 ('<V2', as MLX writes it) and int32 members, under the
// cap of ReadNPZArrays. The error names path and the offending member.
func ReadNPZ(path string, opts ...ReadOption) ([]Tensor, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	arrays, err := ReadNPZArrays(f, size, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(arrays) == 0 {
		return nil, fmt.Errorf("%s: %w", path, errors.New("npz archive holds no arrays"))
	}
	out := make([]Tensor, len(arrays))
	for i, m := range arrays {
		if out[i], err = TensorFromArray(m.Name, m.Array); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

// ArrayInfo is what a .npy header says of an array: its element type and
// shape. Name is the member's key (for the int8 container, with its
// "quantized/", "scales/" or "passthrough/" prefix).
type ArrayInfo struct {
	Name  string
	Elem  Elem
	Shape []int
}

// InspectNPZ reads the .npy headers of an .npz archive, in archive order,
// without reading the arrays' data. The archive is checked as by ReadNPZ
// (names, declared sizes against the cap, each header against its declared
// size).
func InspectNPZ(path string, opts ...ReadOption) ([]ArrayInfo, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ArrayInfo
	err = walkNPZ(f, size, newLimits(opts), func(name string, _ io.Reader, h npyHeaderInfo) error {
		out = append(out, ArrayInfo{Name: name, Elem: h.elem, Shape: h.shape})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// openSized opens a regular file and returns its size.
func openSized(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file", path)
	}
	return f, st.Size(), nil
}

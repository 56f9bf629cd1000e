package checkpoint

import (
	"github.com/golf-ml/golf/internal/atomicfile"

	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
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
// fixed date so an archive's bytes depend only on its contents.
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
			panic(fmt.Sprintf("checkpoint: WriteNPZ: empty or duplicate member name %q", m.Name))
		}
		seen[m.Name] = true
		buf.Reset()
		if err := WriteNPY(&buf, m.Array); err != nil {
			return fmt.Errorf("member %s: %w", m.Name, err)
		}
		if deflate {
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
			ModifiedDate:       zipDate1980,
			CRC32:              crc32.ChecksumIEEE(buf.Bytes()),
			CompressedSize64:   uint64(buf.Len()),
			UncompressedSize64: uint64(buf.Len()),
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
// Members must be .npy files; size is the archive's length in bytes.
func ReadNPZArrays(r io.ReaderAt, size int64) ([]NamedArray, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("not an npz (zip) archive: %w", err)
	}
	out := make([]NamedArray, 0, len(zr.File))
	seen := make(map[string]bool, len(zr.File))
	for _, f := range zr.File {
		name, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok {
			return nil, fmt.Errorf("member %q is not a .npy file", f.Name)
		}
		if seen[name] {
			return nil, fmt.Errorf("member %q appears twice", f.Name)
		}
		seen[name] = true
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", f.Name, err)
		}
		a, err := ReadNPY(rc)
		if err == nil {
			// Drain to the end so the zip reader verifies the CRC.
			_, err = io.Copy(io.Discard, rc)
		}
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", f.Name, err)
		}
		out = append(out, NamedArray{Name: name, Array: a})
	}
	return out, nil
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
// float16, bfloat16 ('<V2', as MLX writes it) and int32 members. The error
// names path and the offending member.
func ReadNPZ(path string) ([]Tensor, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	arrays, err := ReadNPZArrays(bytes.NewReader(raw), int64(len(raw)))
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

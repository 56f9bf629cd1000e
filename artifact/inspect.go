package artifact

import (
	"bufio"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// InspectQuantized reads the .npy headers of an int8 container's members
// (the "__meta__", "quantized/<name>", "scales/<name>" and
// "passthrough/<name>" arrays, in order) without keeping their data: it
// streams the inflated .npz once, member by member, from the zip's local
// headers, and checks each member's CRC-32. Each member's declared size is
// drawn from the cap (DefaultMaxBytes, or MaxBytes) before its bytes are
// streamed, so a stream that would inflate past the cap stops there. Members
// must carry their sizes in their local headers (SaveQuantized, numpy.savez
// and Python's zipfile on a seekable file all write them so). Errors name
// path.
func InspectQuantized(path string, opts ...ReadOption) ([]ArrayInfo, error) {
	f, _, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := zlib.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: not zlib data: %w", path, err)
	}
	infos, err := scanZip(bufio.NewReader(zr), newLimits(opts))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return infos, nil
}

// Zip record signatures and the local header's fixed part
// (APPNOTE.TXT 4.3.7).
const (
	sigLocal      = 0x04034b50
	sigCentral    = 0x02014b50
	sigEnd        = 0x06054b50
	sigZip64End   = 0x06064b50
	localFixedLen = 26 // after the signature
	flagDataDesc  = 1 << 3
	zip64ExtraID  = 0x0001
)

// scanZip walks the local file headers of a zip stream up to its central
// directory, returning each member's .npy header.
func scanZip(r io.Reader, lim *readLimits) ([]ArrayInfo, error) {
	var out []ArrayInfo
	seen := map[string]bool{}
	for {
		var sig [4]byte
		if _, err := io.ReadFull(r, sig[:]); err != nil {
			return nil, fmt.Errorf("zip stream ends before its central directory: %w", err)
		}
		switch binary.LittleEndian.Uint32(sig[:]) {
		case sigLocal:
		case sigCentral, sigEnd, sigZip64End:
			return out, nil
		default:
			return nil, fmt.Errorf("zip stream: unexpected record signature %#x after %d members", sig, len(out))
		}
		info, err := scanMember(r, lim)
		if err != nil {
			return nil, err
		}
		if seen[info.Name] {
			return nil, fmt.Errorf("member %q appears twice", info.Name+".npy")
		}
		seen[info.Name] = true
		out = append(out, info)
	}
}

// scanMember reads one local header (signature consumed), the member's
// .npy header, and the rest of its data, checking sizes and CRC-32.
func scanMember(r io.Reader, lim *readLimits) (ArrayInfo, error) {
	var fixed [localFixedLen]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return ArrayInfo{}, fmt.Errorf("zip stream: short local header: %w", err)
	}
	le := binary.LittleEndian
	flags, method := le.Uint16(fixed[2:]), le.Uint16(fixed[4:])
	crc := le.Uint32(fixed[10:])
	csize, usize := uint64(le.Uint32(fixed[14:])), uint64(le.Uint32(fixed[18:]))
	nameLen, extraLen := int(le.Uint16(fixed[22:])), int(le.Uint16(fixed[24:]))
	nameExtra := make([]byte, nameLen+extraLen) // at most 128 KiB
	if _, err := io.ReadFull(r, nameExtra); err != nil {
		return ArrayInfo{}, fmt.Errorf("zip stream: short local header: %w", err)
	}
	zname := string(nameExtra[:nameLen])
	if csize == 0xffffffff || usize == 0xffffffff {
		var ok bool
		if csize, usize, ok = zip64Sizes(nameExtra[nameLen:], csize, usize); !ok {
			return ArrayInfo{}, fmt.Errorf("member %s: zip64 sizes missing from its extra field", zname)
		}
	}
	name, ok := strings.CutSuffix(zname, ".npy")
	if !ok || name == "" {
		return ArrayInfo{}, fmt.Errorf("member %q is not a named .npy file", zname)
	}
	if flags&flagDataDesc != 0 {
		return ArrayInfo{}, fmt.Errorf("member %s: sizes are in a data descriptor after the data, not in its local header", zname)
	}
	if usize > 1<<62 {
		return ArrayInfo{}, fmt.Errorf("member %s declares %d bytes", zname, usize)
	}
	if err := lim.take(int64(usize), "member "+zname+" (as its local header declares)"); err != nil {
		return ArrayInfo{}, err
	}
	packed := io.LimitReader(r, int64(min(csize, 1<<62)))
	var data io.Reader
	switch method {
	case 0: // stored
		if csize != usize {
			return ArrayInfo{}, fmt.Errorf("member %s is stored with compressed size %d != size %d", zname, csize, usize)
		}
		data = packed
	case 8: // deflate
		fr := flate.NewReader(packed)
		defer fr.Close()
		data = fr
	default:
		return ArrayInfo{}, fmt.Errorf("member %s: unsupported compression method %d", zname, method)
	}
	h := crc32.NewIEEE()
	member := io.TeeReader(io.LimitReader(data, int64(usize)), h)
	nh, err := readNPYHeader(member)
	if err != nil {
		return ArrayInfo{}, fmt.Errorf("member %s: %w", zname, err)
	}
	if uint64(nh.prefix)+uint64(nh.nbytes) != usize || nh.nbytes > 1<<62 {
		return ArrayInfo{}, fmt.Errorf("member %s: npy header says shape %v %v (%d bytes with the header) but the zip declares %d bytes",
			zname, nh.shape, nh.elem, nh.prefix+nh.nbytes, usize)
	}
	if n, err := io.Copy(io.Discard, member); err != nil || n != nh.nbytes {
		return ArrayInfo{}, fmt.Errorf("member %s: data truncated (%d of %d bytes): %v", zname, n, nh.nbytes, err)
	}
	if h.Sum32() != crc {
		return ArrayInfo{}, fmt.Errorf("member %s: CRC-32 %#08x, the header says %#08x", zname, h.Sum32(), crc)
	}
	// A deflated member's compressed bytes must be used up exactly.
	if rest, _ := io.Copy(io.Discard, packed); rest != 0 {
		return ArrayInfo{}, fmt.Errorf("member %s: %d compressed bytes after its data", zname, rest)
	}
	return ArrayInfo{Name: name, Elem: nh.elem, Shape: nh.shape}, nil
}

// zip64Sizes reads the sizes that a zip64 extra field holds for the 32-bit
// fields saturated at 0xffffffff (uncompressed first, APPNOTE.TXT 4.5.3).
func zip64Sizes(extra []byte, csize, usize uint64) (c, u uint64, ok bool) {
	le := binary.LittleEndian
	for len(extra) >= 4 {
		id, n := le.Uint16(extra), int(le.Uint16(extra[2:]))
		if len(extra) < 4+n {
			return 0, 0, false
		}
		body := extra[4 : 4+n]
		extra = extra[4+n:]
		if id != zip64ExtraID {
			continue
		}
		if usize == 0xffffffff {
			if len(body) < 8 {
				return 0, 0, false
			}
			usize, body = le.Uint64(body), body[8:]
		}
		if csize == 0xffffffff {
			if len(body) < 8 {
				return 0, 0, false
			}
			csize = le.Uint64(body)
		}
		return csize, usize, true
	}
	return 0, 0, false
}

package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/golf-ml/golf/internal/atomicfile"
	"io"
	"os"
)

// Shard header constants (see the package doc for the layout).
const (
	ShardMagic       = 20240520
	ShardVersion     = 1
	ShardHeaderInts  = 256
	ShardHeaderBytes = ShardHeaderInts * 4 // 1024
	shardTokenBytes  = 2
)

// ShardHeader is the meaningful part of a shard's 256-int32 header.
type ShardHeader struct {
	Magic, Version int32
	NumTokens      int32
}

// readShardHeader reads and checks the header of the open shard f of size
// bytes: magic, version, and size = 1024 + 2·count.
func readShardHeader(f io.Reader, path string, size int64) (ShardHeader, error) {
	if size < ShardHeaderBytes {
		return ShardHeader{}, fmt.Errorf("%s: truncated shard: header needs %d bytes, file has %d bytes",
			path, ShardHeaderBytes, size)
	}
	var raw [ShardHeaderBytes]byte
	if _, err := io.ReadFull(f, raw[:]); err != nil {
		return ShardHeader{}, fmt.Errorf("%s: reading shard header: %w", path, err)
	}
	h := ShardHeader{
		Magic:     int32(binary.LittleEndian.Uint32(raw[0:])),
		Version:   int32(binary.LittleEndian.Uint32(raw[4:])),
		NumTokens: int32(binary.LittleEndian.Uint32(raw[8:])),
	}
	if h.Magic != ShardMagic || h.Version != ShardVersion {
		return h, fmt.Errorf("%s: unexpected shard header (magic %d, version %d)", path, h.Magic, h.Version)
	}
	want := int64(ShardHeaderBytes) + shardTokenBytes*int64(h.NumTokens)
	if h.NumTokens < 0 || size != want {
		return h, fmt.Errorf("%s: shard size mismatch: header says %d tokens (%d bytes expected), file has %d bytes",
			path, h.NumTokens, want, size)
	}
	return h, nil
}

// CheckShard validates the header of the shard at path against its size
// without reading the tokens, and returns the header.
func CheckShard(path string) (ShardHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return ShardHeader{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ShardHeader{}, err
	}
	return readShardHeader(f, path, st.Size())
}

// ReadShard reads the tokens of the shard at path (load_data_shard). Any
// deviation from the format (short header, wrong magic or version, size not
// 1024 + 2·count, short read) is an error naming the file.
func ReadShard(path string) ([]uint16, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readShardFrom(f, path, st.Size())
}

// readShardFrom is ReadShard of the size bytes read from r; path names the
// shard in errors.
func readShardFrom(f io.Reader, path string, size int64) ([]uint16, error) {
	h, err := readShardHeader(f, path, size)
	if err != nil {
		return nil, err
	}
	tokens := make([]uint16, h.NumTokens)
	// Large reads straight from the file; a buffer no larger than the
	// tokens, so a small shard costs a small allocation.
	buf := make([]byte, min(1<<20, shardTokenBytes*len(tokens)))
	for done := 0; done < len(tokens); {
		n := min(len(buf)/shardTokenBytes, len(tokens)-done)
		if _, err := io.ReadFull(f, buf[:n*shardTokenBytes]); err != nil {
			return nil, shortRead(err, path, int64(len(tokens)), int64(done))
		}
		for i := range n {
			tokens[done+i] = binary.LittleEndian.Uint16(buf[i*shardTokenBytes:])
		}
		done += n
	}
	return tokens, nil
}

// shortRead is the error of a read of a shard's tokens that stopped after
// done of want tokens.
func shortRead(err error, path string, want, done int64) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: short read: header says %d tokens, file ended after %d", path, want, done)
	}
	return fmt.Errorf("%s: reading tokens: %w", path, err)
}

// WriteShard writes tokens as a shard at path, atomically: the bytes go to a
// temporary file in the same directory, which is synced and renamed into
// place, so path is either absent, its old content, or complete.
func WriteShard(path string, tokens []uint16) (err error) {
	if int64(len(tokens)) > int64(^uint32(0)>>1) {
		return fmt.Errorf("%s: %d tokens do not fit a shard header (max %d)", path, len(tokens), int32(^uint32(0)>>1))
	}
	_, err = atomicfile.Write(path, func(w io.Writer) error {
		var header [ShardHeaderBytes]byte
		binary.LittleEndian.PutUint32(header[0:], ShardMagic)
		binary.LittleEndian.PutUint32(header[4:], ShardVersion)
		binary.LittleEndian.PutUint32(header[8:], uint32(len(tokens)))
		if _, err := w.Write(header[:]); err != nil {
			return err
		}
		var b [shardTokenBytes]byte
		for _, t := range tokens {
			binary.LittleEndian.PutUint16(b[:], t)
			if _, err := w.Write(b[:]); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

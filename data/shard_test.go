package data

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawShard builds shard bytes by hand: header ints then little-endian
// uint16 tokens, independent of WriteShard.
func rawShard(magic, version, count int32, tokens []uint16) []byte {
	b := make([]byte, 1024+2*len(tokens))
	put := func(off int, v int32) { binary.LittleEndian.PutUint32(b[off:], uint32(v)) }
	put(0, magic)
	put(4, version)
	put(8, count)
	for i, t := range tokens {
		b[1024+2*i] = byte(t)
		b[1024+2*i+1] = byte(t >> 8)
	}
	return b
}

// writeShardT writes tokens as a shard named name in dir.
func writeShardT(t *testing.T, dir, name string, tokens []uint16) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, WriteShard(p, tokens))
	return p
}

func testTokens(n int, seed uint16) []uint16 {
	out := make([]uint16, n)
	x := uint32(seed)*2654435761 + 1
	for i := range out {
		x = x*1664525 + 1013904223
		out[i] = uint16(x >> 16)
	}
	return out
}

func TestShardRoundTrip(t *testing.T) {
	dir := t.TempDir()
	// Sizes around the reader's 32768-token chunk.
	for _, n := range []int{0, 1, 7, 32767, 32768, 32769, 70001} {
		tokens := testTokens(n, uint16(n))
		p := writeShardT(t, dir, "fineweb_train_000000.bin", tokens)
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		// bytes.Equal and slices.Equal: assert.Equal would print 140 kB.
		want := rawShard(ShardMagic, ShardVersion, int32(n), tokens)
		require.True(t, bytes.Equal(raw, want), "n=%d: WriteShard bytes differ from the format (len %d vs %d)", n, len(raw), len(want))
		got, err := ReadShard(p)
		require.NoError(t, err)
		require.True(t, slices.Equal(got, tokens), "n=%d: ReadShard returned different tokens", n)
		h, err := CheckShard(p)
		require.NoError(t, err, "n=%d: CheckShard", n)
		assert.Equal(t, ShardHeader{Magic: ShardMagic, Version: ShardVersion, NumTokens: int32(n)}, h, "n=%d: CheckShard", n)
	}
	// Tokens written by hand (not by WriteShard) read back too, including
	// values above 32767 that a signed reading would corrupt.
	tokens := []uint16{0, 1, 1023, 32768, 65535, 40000}
	p := filepath.Join(dir, "hand.bin")
	require.NoError(t, os.WriteFile(p, rawShard(ShardMagic, ShardVersion, int32(len(tokens)), tokens), 0o644))
	got, err := ReadShard(p)
	require.NoError(t, err, "ReadShard(hand-written)")
	assert.Equal(t, tokens, got, "ReadShard(hand-written)")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".tmp", "WriteShard left a temporary file")
	}
}

func TestReadShardErrors(t *testing.T) {
	dir := t.TempDir()
	good := rawShard(ShardMagic, ShardVersion, 4, []uint16{1, 2, 3, 4})
	cases := []struct {
		name    string
		content []byte
		want    string
	}{
		{"empty", nil, "truncated shard: header needs 1024 bytes, file has 0 bytes"},
		{"short_header", good[:1000], "truncated shard: header needs 1024 bytes, file has 1000 bytes"},
		{"wrong_magic", rawShard(20240521, 1, 4, []uint16{1, 2, 3, 4}), "unexpected shard header (magic 20240521, version 1)"},
		{"wrong_version", rawShard(ShardMagic, 2, 4, []uint16{1, 2, 3, 4}), "unexpected shard header (magic 20240520, version 2)"},
		{"truncated_tokens", good[:len(good)-1], "shard size mismatch: header says 4 tokens (1032 bytes expected), file has 1031 bytes"},
		{"extra_bytes", append(slices.Clone(good), 0, 0), "shard size mismatch: header says 4 tokens (1032 bytes expected), file has 1034 bytes"},
		{"negative_count", rawShard(ShardMagic, ShardVersion, -1, nil), "shard size mismatch: header says -1 tokens (1022 bytes expected), file has 1024 bytes"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name+".bin")
		require.NoError(t, os.WriteFile(p, c.content, 0o644))
		_, err := ReadShard(p)
		if !assert.Error(t, err, "%s: ReadShard", c.name) {
			continue
		}
		assert.EqualError(t, err, p+": "+c.want, "%s: ReadShard", c.name)
		_, err2 := CheckShard(p)
		assert.EqualError(t, err2, err.Error(), "%s: CheckShard's error is ReadShard's", c.name)
	}
	missing := filepath.Join(dir, "missing.bin")
	_, err := ReadShard(missing)
	assert.ErrorContains(t, err, missing, "missing file: the error names it")
}

// corruptMagic overwrites the magic of the shard at p.
func corruptMagic(t *testing.T, p string) {
	t.Helper()
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	binary.LittleEndian.PutUint32(raw, 12345)
	require.NoError(t, os.WriteFile(p, raw, 0o644))
}

// BenchmarkReadShard reads a 4M-token shard (8 MB); the reported MB/s is of
// file bytes.
func BenchmarkReadShard(b *testing.B) {
	tokens := testTokens(1<<22, 5)
	p := filepath.Join(b.TempDir(), "fineweb_train_000000.bin")
	if err := WriteShard(p, tokens); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(ShardHeaderBytes + 2*len(tokens)))
	for b.Loop() {
		if _, err := ReadShard(p); err != nil {
			b.Fatal(err)
		}
	}
}

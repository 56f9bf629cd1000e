package data

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validateFixture writes train shards of the given token counts, each token
// below vocab, and one validation shard into a fresh directory. It returns
// the directory and the tokens written per train shard.
func validateFixture(t testing.TB, sizes []int, vocab int) (dir string, shards [][]uint16) {
	t.Helper()
	dir = t.TempDir()
	for i, n := range sizes {
		toks := testTokens(n, uint16(i+1))
		for j := range toks {
			toks[j] %= uint16(vocab)
		}
		shards = append(shards, toks)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("fineweb_train_%06d.bin", i)),
			rawShard(ShardMagic, ShardVersion, int32(n), toks), 0o644))
	}
	val := testTokens(3000, 99)
	for j := range val {
		val[j] %= uint16(vocab)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fineweb_val_000000.bin"),
		rawShard(ShardMagic, ShardVersion, int32(len(val)), val), 0o644))
	return dir, shards
}

func maxOf(toks []uint16) int {
	m := -1
	for _, t := range toks {
		m = max(m, int(t))
	}
	return m
}

// setToken overwrites token i of the shard at p in place, keeping its
// size, and optionally its modification time.
func setToken(t *testing.T, p string, i int, v uint16, keepMtime bool) {
	t.Helper()
	st, err := os.Stat(p)
	require.NoError(t, err)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], v)
	_, err = f.WriteAt(b[:], int64(1024+2*i))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	if keepMtime {
		require.NoError(t, os.Chtimes(p, st.ModTime(), st.ModTime()))
	} else {
		// A later mtime even on a file system with coarse timestamps.
		later := st.ModTime().Add(2 * time.Second)
		require.NoError(t, os.Chtimes(p, later, later))
	}
}

func TestValidateShardsCountsAndProgress(t *testing.T) {
	// 600 000 tokens span two 1 MiB buffers; 0 tokens is a legal empty shard.
	sizes := []int{5000, 600_000, 0, 1}
	dir, shards := validateFixture(t, sizes, 1024)
	var reports []ValidateProgress
	opts := ValidateOptions{Workers: 3, NoCache: true, Progress: func(p ValidateProgress) { reports = append(reports, p) }}
	sets, err := ValidateShardSets(context.Background(),
		[]string{filepath.Join(dir, "fineweb_train_*.bin"), filepath.Join(dir, "fineweb_val_*.bin")}, 1024, opts)
	require.NoError(t, err)
	require.Len(t, sets, 2)

	train := sets[0]
	require.Len(t, train.Shards, len(sizes))
	var wantTokens, wantBytes int64
	for i, n := range sizes {
		sh := train.Shards[i]
		assert.Equal(t, filepath.Join(dir, fmt.Sprintf("fineweb_train_%06d.bin", i)), sh.Path)
		assert.Equal(t, int64(n), sh.Tokens, "shard %d tokens", i)
		assert.Equal(t, int64(1024+2*n), sh.Bytes, "shard %d bytes", i)
		assert.Equal(t, maxOf(shards[i]), sh.MaxToken, "shard %d max token", i)
		assert.False(t, sh.Cached)
		wantTokens += int64(n)
		wantBytes += int64(1024 + 2*n)
	}
	assert.Equal(t, wantTokens, train.Tokens)
	assert.Equal(t, wantBytes, train.Bytes)
	assert.Equal(t, int64(3000), sets[1].Tokens)
	assert.Equal(t, int64(1024+6000), sets[1].Bytes)

	// Progress: starts at zero, never goes back, ends at every byte and file.
	require.NotEmpty(t, reports)
	assert.Equal(t, ValidateProgress{Files: 5, Bytes: wantBytes + 7024}, reports[0])
	for i := 1; i < len(reports); i++ {
		assert.GreaterOrEqual(t, reports[i].BytesDone, reports[i-1].BytesDone)
		assert.GreaterOrEqual(t, reports[i].FilesDone, reports[i-1].FilesDone)
	}
	last := reports[len(reports)-1]
	assert.Equal(t, ValidateProgress{Files: 5, FilesDone: 5, Bytes: wantBytes + 7024, BytesDone: wantBytes + 7024}, last)

	// A token equal to the largest uint16 passes any vocabulary above it.
	setToken(t, train.Shards[0].Path, 17, 65535, false)
	_, err = ValidateShards(context.Background(), filepath.Join(dir, "fineweb_train_*.bin"), 65536, ValidateOptions{NoCache: true})
	assert.NoError(t, err)
	_, err = ValidateShards(context.Background(), filepath.Join(dir, "fineweb_train_*.bin"), 100000, ValidateOptions{NoCache: true})
	assert.NoError(t, err)
}

func TestValidateShardsErrors(t *testing.T) {
	ctx := context.Background()
	noCache := ValidateOptions{NoCache: true, Workers: 4}
	pattern := func(dir string) string { return filepath.Join(dir, "fineweb_train_*.bin") }

	// A token ≥ VOCAB_SIZE deep in a later shard, past the first buffer:
	// the error names the file, the id, its position and VOCAB_SIZE.
	dir, _ := validateFixture(t, []int{2000, 2000, 700_000}, 1024)
	bad := filepath.Join(dir, "fineweb_train_000002.bin")
	setToken(t, bad, 654_321, 1024, false)
	_, err := ValidateShards(ctx, pattern(dir), 1024, noCache)
	require.Error(t, err)
	assert.Equal(t, bad+": token id 1024 at position 654321 (byte offset 1309666) is outside VOCAB_SIZE=1024", err.Error())
	// The same file passes a vocabulary that holds the id.
	_, err = ValidateShards(ctx, pattern(dir), 1025, noCache)
	assert.NoError(t, err)

	// Header, size and truncation errors of a later shard, as ReadShard words them.
	for _, c := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"magic", rawShard(20240521, 1, 4, []uint16{1, 2, 3, 4}), "unexpected shard header (magic 20240521, version 1)"},
		{"truncated", rawShard(ShardMagic, ShardVersion, 4, []uint16{1, 2, 3, 4})[:1031], "shard size mismatch: header says 4 tokens (1032 bytes expected), file has 1031 bytes"},
		{"short_header", make([]byte, 10), "truncated shard: header needs 1024 bytes, file has 10 bytes"},
	} {
		dir, _ := validateFixture(t, []int{100, 100, 100}, 1024)
		p := filepath.Join(dir, "fineweb_train_000001.bin")
		require.NoError(t, os.WriteFile(p, c.content, 0o644))
		_, err := ValidateShards(ctx, pattern(dir), 1024, noCache)
		require.Error(t, err, c.name)
		assert.Equal(t, p+": "+c.want, err.Error(), c.name)
	}

	// Several bad shards: always the first in name order, whatever the
	// scheduling.
	dir, _ = validateFixture(t, []int{50_000, 3000, 50_000, 3000, 50_000, 3000}, 1024)
	for _, i := range []int{2, 3, 5} {
		setToken(t, filepath.Join(dir, fmt.Sprintf("fineweb_train_%06d.bin", i)), 7, 2000+uint16(i), false)
	}
	for range 10 {
		_, err := ValidateShards(ctx, pattern(dir), 1024, noCache)
		require.Error(t, err)
		assert.Equal(t, filepath.Join(dir, "fineweb_train_000002.bin")+": token id 2002 at position 7 (byte offset 1038) is outside VOCAB_SIZE=1024", err.Error())
	}

	// No files, a bad vocabulary, a cancelled context.
	empty := pattern(t.TempDir())
	_, err = ValidateShards(ctx, empty, 1024, noCache)
	assert.EqualError(t, err, "No files found for pattern: "+empty)
	_, err = ValidateShards(ctx, pattern(dir), 0, noCache)
	assert.EqualError(t, err, "VOCAB_SIZE must be positive, got 0")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = ValidateShards(cctx, pattern(dir), 1024, noCache)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestValidateShardsCache(t *testing.T) {
	ctx := context.Background()
	// The middle shard is over 2 MiB: bytes between its first and last MiB
	// are outside the sample hash.
	dir, _ := validateFixture(t, []int{3000, 1_200_000, 4000}, 1024)
	pattern := filepath.Join(dir, "fineweb_train_*.bin")
	cacheDir := t.TempDir()
	var logs []string
	opts := ValidateOptions{CacheDir: cacheDir, Log: func(s string) { logs = append(logs, s) }}
	cachedFlags := func(s ShardSetInfo) []bool {
		var out []bool
		for _, sh := range s.Shards {
			out = append(out, sh.Cached)
		}
		return out
	}

	first, err := ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, false}, cachedFlags(first))
	cacheFile := filepath.Join(cacheDir, "shard-check-v1.json")
	require.FileExists(t, cacheFile)

	// Unchanged: every shard from the cache, with the same counts.
	second, err := ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true}, cachedFlags(second))
	assert.Equal(t, 3, second.Cached)
	for i := range first.Shards {
		assert.Equal(t, first.Shards[i].Tokens, second.Shards[i].Tokens)
		assert.Equal(t, first.Shards[i].MaxToken, second.Shards[i].MaxToken)
	}

	// The cached largest id decides for another vocabulary: a smaller one
	// re-reads the shard and reports the exact first offending token.
	var firstBig int
	toks, err := ReadShard(first.Shards[0].Path)
	require.NoError(t, err)
	for i, v := range toks {
		if v >= 512 {
			firstBig = i
			break
		}
	}
	_, err = ValidateShards(ctx, pattern, 512, opts)
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("%s: token id %d at position %d (byte offset %d) is outside VOCAB_SIZE=512",
		first.Shards[0].Path, toks[firstBig], firstBig, 1024+2*firstBig), err.Error())

	// An in-place write (new mtime) in the middle of the big shard, outside
	// the sampled bytes: the mtime catches it.
	p1 := first.Shards[1].Path
	setToken(t, p1, 600_000, 4000, false)
	_, err = ValidateShards(ctx, pattern, 1024, opts)
	require.Error(t, err)
	assert.Equal(t, p1+": token id 4000 at position 600000 (byte offset 1201024) is outside VOCAB_SIZE=1024", err.Error())
	setToken(t, p1, 600_000, 5, false)

	// A same-size change with the old mtime restored (cp -p of another
	// shard): the sample hash of the first MiB catches it.
	p2 := first.Shards[2].Path
	setToken(t, p2, 10, 3000, true)
	_, err = ValidateShards(ctx, pattern, 1024, opts)
	require.Error(t, err)
	assert.Equal(t, p2+": token id 3000 at position 10 (byte offset 1044) is outside VOCAB_SIZE=1024", err.Error())
	setToken(t, p2, 10, 3, true)

	// Repaired: only the last shard is read again (the run before re-read
	// and cached the big one after its repair).
	third, err := ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, false}, cachedFlags(third))
	assert.Empty(t, logs)
	entries, err := os.ReadDir(cacheDir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the cache file, no temporary files")

	// A corrupt cache file is ignored (and logged), then rewritten.
	require.NoError(t, os.WriteFile(cacheFile, []byte("{not json"), 0o644))
	fourth, err := ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	assert.Equal(t, 0, fourth.Cached)
	require.Len(t, logs, 1)
	assert.Contains(t, logs[0], cacheFile)
	fifth, err := ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	assert.Equal(t, 3, fifth.Cached)

	// A cache directory that cannot be created: validation still succeeds,
	// the problem is logged.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	logs = nil
	opts.CacheDir = filepath.Join(blocker, "cache")
	_, err = ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	assert.True(t, strings.HasPrefix(logs[len(logs)-1], "shard validation cache not saved: "), logs[len(logs)-1])

	// NoCache writes nothing.
	empty := t.TempDir()
	_, err = ValidateShards(ctx, pattern, 1024, ValidateOptions{CacheDir: empty, NoCache: true})
	require.NoError(t, err)
	entries, err = os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestValidateShardsDefaultCacheDir(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir())
	dir, _ := validateFixture(t, []int{10}, 1024)
	_, err := ValidateShards(context.Background(), filepath.Join(dir, "fineweb_train_*.bin"), 1024, ValidateOptions{})
	require.NoError(t, err)
	if d, err := os.UserCacheDir(); err == nil && d == cache {
		assert.FileExists(t, filepath.Join(cache, "golf", "shard-check-v1.json"))
	}
}

func TestSampleHash(t *testing.T) {
	// The hash covers the size, the first MiB and the last MiB: a change in
	// either end changes it, a change strictly between does not.
	content := make([]byte, 3<<20)
	for i := range content {
		content[i] = byte(i * 7)
	}
	base, err := sampleHash(strings.NewReader(string(content)), int64(len(content)))
	require.NoError(t, err)
	for _, c := range []struct {
		at   int
		same bool
	}{{0, false}, {1<<20 - 1, false}, {1 << 20, true}, {2<<20 - 1, true}, {2 << 20, false}, {3<<20 - 1, false}} {
		mod := []byte(string(content))
		mod[c.at] ^= 1
		h, err := sampleHash(strings.NewReader(string(mod)), int64(len(mod)))
		require.NoError(t, err)
		assert.Equal(t, c.same, h == base, "byte %d", c.at)
	}
	short, err := sampleHash(strings.NewReader(string(content[:100])), 100)
	require.NoError(t, err)
	shorter, err := sampleHash(strings.NewReader(string(content[:99])), 99)
	require.NoError(t, err)
	assert.NotEqual(t, short, shorter)
}

// BenchmarkValidateShards validates four 4M-token shards (32 MiB) without
// the cache, then with it; MB/s is of shard bytes.
func BenchmarkValidateShards(b *testing.B) {
	dir, _ := validateFixture(b, []int{1 << 22, 1 << 22, 1 << 22, 1 << 22}, 1024)
	pattern := filepath.Join(dir, "fineweb_train_*.bin")
	size := int64(4 * (1024 + 2<<22))
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if _, err := ValidateShards(context.Background(), pattern, 1024, ValidateOptions{NoCache: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		opts := ValidateOptions{CacheDir: b.TempDir()}
		if _, err := ValidateShards(context.Background(), pattern, 1024, opts); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(size)
		for b.Loop() {
			if _, err := ValidateShards(context.Background(), pattern, 1024, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestShardSetFingerprint(t *testing.T) {
	ctx := context.Background()
	dir, _ := validateFixture(t, []int{3000, 5000}, 1024)
	pattern := filepath.Join(dir, "fineweb_train_*.bin")
	opts := ValidateOptions{CacheDir: t.TempDir()}
	first, err := ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	fp := first.Fingerprint()
	require.Len(t, fp, 64)
	for _, sh := range first.Shards {
		require.Len(t, sh.SampleSHA256, 64)
	}

	// From the cache, and without it: the same fingerprint.
	cached, err := ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	require.Equal(t, 2, cached.Cached)
	assert.Equal(t, fp, cached.Fingerprint())
	uncached, err := ValidateShards(ctx, pattern, 1024, ValidateOptions{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, fp, uncached.Fingerprint())

	// The same shards in another directory: the same fingerprint.
	moved := t.TempDir()
	for _, sh := range first.Shards {
		b, err := os.ReadFile(sh.Path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(moved, filepath.Base(sh.Path)), b, 0o644))
	}
	other, err := ValidateShards(ctx, filepath.Join(moved, "fineweb_train_*.bin"), 1024, ValidateOptions{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, fp, other.Fingerprint())

	// A changed token, a renamed shard, a removed shard: different.
	setToken(t, filepath.Join(moved, "fineweb_train_000001.bin"), 4, 1000, false)
	changed, err := ValidateShards(ctx, filepath.Join(moved, "fineweb_train_*.bin"), 1024, ValidateOptions{NoCache: true})
	require.NoError(t, err)
	assert.NotEqual(t, fp, changed.Fingerprint())
	require.NoError(t, os.Rename(filepath.Join(dir, "fineweb_train_000001.bin"), filepath.Join(dir, "fineweb_train_000002.bin")))
	renamed, err := ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	assert.NotEqual(t, fp, renamed.Fingerprint())
	require.NoError(t, os.Remove(filepath.Join(dir, "fineweb_train_000002.bin")))
	removed, err := ValidateShards(ctx, pattern, 1024, opts)
	require.NoError(t, err)
	assert.NotEqual(t, fp, removed.Fingerprint())
}

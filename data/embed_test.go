package data

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// embeddedOnDisk lists the files of data/embedded in the source tree, the
// oracle for what an extraction must hold.
func embeddedOnDisk(t *testing.T) map[string][]byte {
	t.Helper()
	want := map[string][]byte{}
	require.NoError(t, filepath.WalkDir("embedded", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel("embedded", p)
		want[filepath.ToSlash(rel)] = b
		return err
	}))
	require.Contains(t, want, "datasets/brown_sp1024/fineweb_train_000000.bin")
	return want
}

// requireTree checks that root holds exactly want, byte for byte.
func requireTree(t *testing.T, root string, want map[string][]byte) {
	t.Helper()
	got := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		require.True(t, d.Type().IsRegular(), "%s is not a regular file", p)
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		got[filepath.ToSlash(rel)] = b
		return err
	}))
	require.Equal(t, len(want), len(got), "files under %s", root)
	for k, v := range want {
		require.Equal(t, v, got[k], "%s", k)
	}
}

// onlyEntry is the single entry of dir (no temporary directories beside it).
func onlyEntry(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Len(t, names, 1, "entries of %s: %v", dir, names)
	return names[0]
}

func TestExtractEmbedded(t *testing.T) {
	want := embeddedOnDisk(t)
	dir := t.TempDir()
	dataPath, tokPath, err := ExtractEmbedded(dir)
	require.NoError(t, err)
	name := onlyEntry(t, dir)
	require.True(t, strings.HasPrefix(name, "embedded-") && len(name) == len("embedded-")+16, name)
	root := filepath.Join(dir, name)
	assert.Equal(t, filepath.Join(root, "datasets", "brown_sp1024"), dataPath)
	assert.Equal(t, filepath.Join(root, "tokenizers", "brown_1024_bpe.model"), tokPath)
	requireTree(t, root, want)

	// The extracted set is what training validates: every shard passes.
	sets, err := ValidateShardSets(context.Background(), []string{
		filepath.Join(dataPath, "fineweb_train_*.bin"), filepath.Join(dataPath, "fineweb_val_*.bin"),
	}, 1024, ValidateOptions{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, int64(918509), sets[0].Tokens, "tokens_train of the embedded manifest")
	assert.Equal(t, int64(55899), sets[1].Tokens, "tokens_val of the embedded manifest")

	train := filepath.Join(dataPath, "fineweb_train_000000.bin")
	damage := []struct {
		name string
		do   func()
	}{
		{"one byte changed, same size and mtime", func() {
			st, err := os.Stat(train)
			require.NoError(t, err)
			b, err := os.ReadFile(train)
			require.NoError(t, err)
			b[len(b)/2] ^= 0x40
			require.NoError(t, os.WriteFile(train, b, 0o644))
			require.NoError(t, os.Chtimes(train, st.ModTime(), st.ModTime()))
		}},
		{"a file removed", func() { require.NoError(t, os.Remove(tokPath)) }},
		{"a shard added", func() {
			require.NoError(t, os.WriteFile(filepath.Join(dataPath, "fineweb_train_000001.bin"),
				rawShard(ShardMagic, ShardVersion, 2, []uint16{1, 2}), 0o644))
		}},
		{"a file replaced by a symbolic link", func() {
			other := filepath.Join(t.TempDir(), "copy")
			require.NoError(t, os.WriteFile(other, want["manifest.json"], 0o644))
			require.NoError(t, os.Remove(filepath.Join(root, "manifest.json")))
			require.NoError(t, os.Symlink(other, filepath.Join(root, "manifest.json")))
		}},
		{"the whole dataset directory removed", func() { require.NoError(t, os.RemoveAll(dataPath)) }},
		{"a truncated file", func() { require.NoError(t, os.Truncate(train, 100)) }},
	}
	for _, d := range damage {
		d.do()
		dp, tp, err := ExtractEmbedded(dir)
		require.NoError(t, err, d.name)
		assert.Equal(t, dataPath, dp, d.name)
		assert.Equal(t, tokPath, tp, d.name)
		requireTree(t, root, want)
		assert.Equal(t, name, onlyEntry(t, dir), "%s: no temporary directory left", d.name)
	}
}

func TestExtractEmbeddedLeftovers(t *testing.T) {
	// A killed extraction's temporary directory: removed by the next
	// extraction once old; a recent one (maybe in progress) is kept.
	dir := t.TempDir()
	old := filepath.Join(dir, ".embedded-0123456789abcdef.tmp-1")
	recent := filepath.Join(dir, ".embedded-0123456789abcdef.tmp-2")
	for _, d := range []string{old, recent} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "datasets"), 0o755))
	}
	long := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(old, long, long))
	_, _, err := ExtractEmbedded(dir)
	require.NoError(t, err)
	assert.NoDirExists(t, old)
	assert.DirExists(t, recent)
}

func TestExtractEmbeddedConcurrent(t *testing.T) {
	want := embeddedOnDisk(t)
	dir := t.TempDir()
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = ExtractEmbedded(dir)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err, "round %d", round)
		}
		root := filepath.Join(dir, onlyEntry(t, dir))
		requireTree(t, root, want)
		// Damage it for the next round.
		require.NoError(t, os.Truncate(filepath.Join(root, "manifest.json"), 3))
	}
}

func TestExtractEmbeddedDefaultDir(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir())
	if d, err := os.UserCacheDir(); err != nil || d != cache {
		t.Skipf("os.UserCacheDir does not follow XDG_CACHE_HOME here (%q, %v)", d, err)
	}
	dataPath, _, err := ExtractEmbedded("")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(dataPath, filepath.Join(cache, "golf", "embedded-")), dataPath)

	// No user cache directory at all: the temporary directory.
	tmp := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	t.Setenv("TMPDIR", tmp)
	_, err = os.UserCacheDir()
	require.Error(t, err)
	dataPath, _, err = ExtractEmbedded("")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(dataPath, filepath.Join(tmp, "golf-")), dataPath)

	// A directory that cannot be created: an error naming it.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	_, _, err = ExtractEmbedded(filepath.Join(blocker, "cache"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(blocker, "cache", "embedded-"))
}

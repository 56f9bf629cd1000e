package data

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testManifest = `{
  "version": 1,
  "datasets": [
    {"name": "fineweb10B_byte260", "tokenizer_name": "pure_byte_260", "stats": {"files_train": 10, "files_val": 1}},
    {"name": "fineweb10B_sp1024", "tokenizer_name": "sp_bpe_1024",
     "stats": {"files_train": 3, "files_val": 1, "tokens_train": 3000}},
    {"name": "fineweb10B_sp4096", "tokenizer_name": "sp_bpe_4096", "stats": {}}
  ],
  "tokenizers": [
    {"name": "pure_byte_260", "kind": "byte", "path": "tokenizers/fineweb_pure_byte_260.json"},
    {"name": "sp_bpe_1024", "kind": "sentencepiece", "vocab_size": 1024,
     "model_path": "tokenizers/fineweb_1024_bpe.model", "vocab_path": "tokenizers/fineweb_1024_bpe.vocab"},
    {"name": "sp_bpe_4096", "model_path": "tokenizers/fineweb_4096_bpe.model"}
  ]
}`

// manifestFixture lays out <root>/manifest.json and
// <root>/datasets/<name>/ with n train shards.
func manifestFixture(t *testing.T, manifest, name string, n int) (root, dataDir string) {
	t.Helper()
	root = t.TempDir()
	dataDir = filepath.Join(root, "datasets", name)
	require.NoError(t, os.MkdirAll(dataDir, 0o755))
	if manifest != "" {
		require.NoError(t, os.WriteFile(filepath.Join(root, "manifest.json"), []byte(manifest), 0o644))
	}
	for i := range n {
		writeShardT(t, dataDir, fmt.Sprintf("fineweb_train_%06d.bin", i), []uint16{1, 2})
	}
	writeShardT(t, dataDir, "fineweb_val_000000.bin", []uint16{1, 2})
	return root, dataDir
}

func TestValidateDatasetTokenizerPair(t *testing.T) {
	type result struct {
		name             string
		actual, expected int
	}
	cases := []struct {
		desc, manifest, dataset string
		shards                  int
		tokenizer               string
		want                    result
		wantErr                 string
	}{
		{"match", testManifest, "fineweb10B_sp1024", 2, "/elsewhere/fineweb_1024_bpe.model",
			result{"fineweb10B_sp1024", 2, 3}, ""},
		{"all shards", testManifest, "fineweb10B_sp1024", 3, "fineweb_1024_bpe.model",
			result{"fineweb10B_sp1024", 3, 3}, ""},
		{"tokenizer mismatch", testManifest, "fineweb10B_sp1024", 1, "tok/fineweb_8192_bpe.model",
			result{}, "fineweb10B_sp1024 expects tokenizer fineweb_1024_bpe.model, got fineweb_8192_bpe.model"},
		{"too many shards", testManifest, "fineweb10B_sp1024", 4, "fineweb_1024_bpe.model",
			result{}, "fineweb10B_sp1024 has more train shards than expected: found 4, manifest says 3"},
		{"path fallback", testManifest, "fineweb10B_byte260", 2, "fineweb_pure_byte_260.json",
			result{"fineweb10B_byte260", 2, 10}, ""},
		{"path fallback mismatch", testManifest, "fineweb10B_byte260", 2, "x.model",
			result{}, "fineweb10B_byte260 expects tokenizer fineweb_pure_byte_260.json, got x.model"},
		{"no files_train", testManifest, "fineweb10B_sp4096", 5, "fineweb_4096_bpe.model",
			result{"fineweb10B_sp4096", 5, -1}, ""},
		{"dataset not in manifest", testManifest, "fineweb10B_sp2048", 7, "anything.model",
			result{"fineweb10B_sp2048", 7, -1}, ""},
		{"no manifest", "", "fineweb10B_sp1024", 9, "anything.model",
			result{"fineweb10B_sp1024", 9, -1}, ""},
		{"bad json", "{not json", "fineweb10B_sp1024", 1, "anything.model",
			result{}, "invalid manifest"},
	}
	for _, c := range cases {
		root, dataDir := manifestFixture(t, c.manifest, c.dataset, c.shards)
		name, actual, expected, err := ValidateDatasetTokenizerPair(dataDir, c.tokenizer)
		if c.wantErr != "" {
			mp := filepath.Join(root, "manifest.json")
			assert.ErrorContains(t, err, c.wantErr, c.desc)
			assert.ErrorContains(t, err, mp, "%s: the error names the manifest", c.desc)
			continue
		}
		if !assert.NoError(t, err, c.desc) {
			continue
		}
		assert.Equal(t, c.want, result{name, actual, expected}, c.desc)
	}
}

func TestValidateDatasetTokenizerPairResolves(t *testing.T) {
	// A relative path with ".." and a symlinked dataset directory both find
	// the manifest of the real location.
	root, dataDir := manifestFixture(t, testManifest, "fineweb10B_sp1024", 4)
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dataDir, link))
	_, _, _, err := ValidateDatasetTokenizerPair(link, "fineweb_1024_bpe.model")
	assert.ErrorContains(t, err, "found 4, manifest says 3", "symlinked dataset dir")
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, filepath.Join(root, "datasets", "x", "..", "fineweb10B_sp1024"))
	require.NoError(t, err)
	_, _, _, err = ValidateDatasetTokenizerPair(rel, "fineweb_1024_bpe.model")
	assert.ErrorContains(t, err, "found 4, manifest says 3", "relative path %s", rel)
	// A dataset directory that does not exist counts zero shards.
	name, n, exp, err := ValidateDatasetTokenizerPair(filepath.Join(root, "datasets", "fineweb10B_sp1024_missing"), "t.model")
	assert.NoError(t, err, "missing dir")
	assert.Equal(t, "fineweb10B_sp1024_missing", name, "missing dir")
	assert.Equal(t, 0, n, "missing dir: shards found")
	assert.Equal(t, -1, exp, "missing dir: shards in the manifest")
}

func TestManifestStatCounts(t *testing.T) {
	// JSON numbers and numeric strings that are whole counts are read;
	// fractions, negatives and numbers past 2^53 (where float64 stops being
	// exact) are refused naming the dataset and the key.
	m, err := parseManifest("m.json", []byte(`{"datasets": [{"name": "d", "stats": {
		"a": 195, "b": " 12 ", "c": 0, "d": 9007199254740992, "e": null,
		"f": 2.5, "g": -1, "h": "-3", "i": 1e300, "j": "x", "k": [1], "l": 9007199254740994}}]}`))
	require.NoError(t, err)
	d := &m.Datasets[0]
	for key, want := range map[string]int{"a": 195, "b": 12, "c": 0, "d": 1 << 53} {
		v, ok, err := d.stat(key)
		require.NoError(t, err, key)
		assert.True(t, ok, key)
		assert.Equal(t, want, v, key)
	}
	for _, key := range []string{"e", "missing"} {
		_, ok, err := d.stat(key)
		assert.NoError(t, err, key)
		assert.False(t, ok, key)
	}
	for key, shown := range map[string]string{"f": "2.5", "g": "-1", "h": "-3", "i": "1e+300", "j": "x", "k": "[1]", "l": "9.007199254740994e+15"} {
		_, _, err := d.stat(key)
		assert.EqualError(t, err, "dataset d: stats."+key+" is not a count (a whole number ≥ 0): "+shown, key)
	}
}

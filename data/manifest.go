package data

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// manifest is the part of manifest.json that training and the downloader
// read (see the package doc).
type manifest struct {
	Datasets   []manifestDataset   `json:"datasets"`
	Tokenizers []manifestTokenizer `json:"tokenizers"`
	// SHA256 maps a file's path relative to the data root (slash-separated,
	// as datasets/<dataset>/fineweb_val_000000.bin or
	// tokenizers/<model>) to its lowercase hex SHA-256. Optional: the
	// reference export does not write it, and Fetch checks the files it
	// lists.
	SHA256 map[string]string `json:"sha256"`
}

type manifestDataset struct {
	Name          string         `json:"name"`
	TokenizerName string         `json:"tokenizer_name"`
	Stats         map[string]any `json:"stats"`
}

type manifestTokenizer struct {
	Name      string `json:"name"`
	ModelPath string `json:"model_path"`
	VocabPath string `json:"vocab_path"`
	Path      string `json:"path"`
}

// readManifest parses the manifest at path.
func readManifest(path string) (*manifest, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseManifest(path, raw)
}

// parseManifest parses manifest JSON; path names it in errors. Digests are
// checked to be 64 hex digits (and stored in lowercase), and their keys to
// be relative paths that stay inside the root.
func parseManifest(path string, raw []byte) (*manifest, error) {
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: invalid manifest: %w", path, err)
	}
	for k, v := range m.SHA256 {
		if b, err := hex.DecodeString(v); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("%s: invalid manifest: sha256 of %q is %q, want 64 hex digits", path, k, v)
		}
		if !fs.ValidPath(k) || k == "." || strings.Contains(k, "\\") {
			return nil, fmt.Errorf("%s: invalid manifest: sha256 key %q is not a relative slash-separated path", path, k)
		}
		m.SHA256[k] = strings.ToLower(v)
	}
	return &m, nil
}

func (m *manifest) dataset(name string) *manifestDataset {
	for i := range m.Datasets {
		if m.Datasets[i].Name == name {
			return &m.Datasets[i]
		}
	}
	return nil
}

func (m *manifest) tokenizer(name string) *manifestTokenizer {
	for i := range m.Tokenizers {
		if m.Tokenizers[i].Name == name {
			return &m.Tokenizers[i]
		}
	}
	return nil
}

// maxStat bounds a count read from the manifest: every integer up to it is
// exact in a JSON number (float64).
const maxStat = 1 << 53

// stat returns stats[key], a count, as an integer: a JSON number or a
// numeric string (as Python's int() reads them) that is a whole number in
// [0, 2^53]; ok is false when the key is absent or null. Python's int()
// would also truncate 2.5 and accept -1; a count like that is a broken
// manifest, refused here.
func (d *manifestDataset) stat(key string) (v int, ok bool, err error) {
	switch x := d.Stats[key].(type) {
	case nil:
		return 0, false, nil
	case float64:
		if x == math.Trunc(x) && x >= 0 && x <= maxStat {
			return int(x), true, nil
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil && n >= 0 && n <= maxStat {
			return int(n), true, nil
		}
	}
	return 0, false, fmt.Errorf("dataset %s: stats.%s is not a count (a whole number ≥ 0): %v", d.Name, key, d.Stats[key])
}

// countTrainShards counts the fineweb_train_*.bin files in dir (0 when dir
// does not exist).
func countTrainShards(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if ok, _ := filepath.Match("fineweb_train_*.bin", e.Name()); ok {
			n++
		}
	}
	return n, nil
}

// resolvePath is pathlib's Path.resolve(strict=False): absolute, with
// symbolic links resolved as far as the path exists.
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	// Resolve the longest existing prefix and keep the rest as written.
	dir, rest := abs, ""
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest), nil
		}
	}
}

// ValidateDatasetTokenizerPair checks that the dataset directory dataPath
// and the tokenizer file tokenizerPath belong together
// (validate_dataset_tokenizer_pair). The manifest is manifest.json two
// directories above the resolved dataset directory. It returns the dataset
// name (the directory's name), the number of fineweb_train_*.bin files in
// it, and the manifest's files_train (-1 when there is no manifest, no entry
// for the dataset, or no count). Errors: a tokenizer whose file name differs
// from the entry's model_path (else path), and more train shards than
// files_train.
func ValidateDatasetTokenizerPair(dataPath, tokenizerPath string) (datasetName string, actualTrainFiles, expectedTrainFiles int, err error) {
	dir, err := resolvePath(dataPath)
	if err != nil {
		return "", 0, -1, fmt.Errorf("DATA_PATH %s: %w", dataPath, err)
	}
	name := filepath.Base(dir)
	actual, err := countTrainShards(dir)
	if err != nil {
		return "", 0, -1, err
	}
	// Python's Path.parents of /a/b is (/a, /): fewer than two means no
	// grandparent directory to hold a manifest.
	parent := filepath.Dir(dir)
	if parent == dir || filepath.Dir(parent) == parent {
		return name, actual, -1, nil
	}
	manifestPath := filepath.Join(filepath.Dir(parent), "manifest.json")
	if st, err := os.Stat(manifestPath); err != nil || !st.Mode().IsRegular() {
		return name, actual, -1, nil
	}
	m, err := readManifest(manifestPath)
	if err != nil {
		return "", 0, -1, err
	}
	entry := m.dataset(name)
	if entry == nil {
		return name, actual, -1, nil
	}
	var tok *manifestTokenizer
	if entry.TokenizerName != "" {
		tok = m.tokenizer(entry.TokenizerName)
	}
	expectedName := ""
	if tok != nil {
		if p := tok.ModelPath; p != "" {
			expectedName = pathName(p)
		} else if tok.Path != "" {
			expectedName = pathName(tok.Path)
		}
	}
	if got := pathName(tokenizerPath); expectedName != "" && got != expectedName {
		return "", 0, -1, fmt.Errorf("%s: %s expects tokenizer %s, got %s", manifestPath, name, expectedName, got)
	}
	expected, ok, err := entry.stat("files_train")
	if err != nil {
		return "", 0, -1, fmt.Errorf("%s: %w", manifestPath, err)
	}
	if !ok {
		return name, actual, -1, nil
	}
	if actual > expected {
		return "", 0, -1, fmt.Errorf("%s: %s has more train shards than expected: found %d, manifest says %d",
			manifestPath, name, actual, expected)
	}
	return name, actual, expected, nil
}

// pathName is pathlib's Path(p).name: the last element, "" for "" or "/".
func pathName(p string) string {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return ""
	}
	return p[strings.LastIndexByte(p, '/')+1:]
}

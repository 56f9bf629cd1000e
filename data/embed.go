package data

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/golf-ml/golf/internal/atomicfile"
)

// The embedded default dataset (built by scripts/build_embedded from the
// Brown corpus): manifest.json, datasets/brown_sp1024/fineweb_{train,val}_000000.bin
// and tokenizers/brown_1024_bpe.model, so a fresh clone trains without a
// download.
//
//go:embed embedded
var embedded embed.FS

// Names of the embedded data set inside its root.
const (
	EmbeddedDataset   = "brown_sp1024"
	embeddedTokenizer = "tokenizers/brown_1024_bpe.model"
)

// ExtractEmbedded writes the embedded dataset under dir (once: a directory
// named after the content hash is reused) and returns the DATA_PATH and
// TOKENIZER_PATH to train on it.
func ExtractEmbedded(dir string) (dataPath, tokenizerPath string, err error) {
	h := sha256.New()
	err = fs.WalkDir(embedded, "embedded", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := embedded.ReadFile(p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", "", err
	}
	root := filepath.Join(dir, "golf-embedded-"+hex.EncodeToString(h.Sum(nil))[:12])
	err = fs.WalkDir(embedded, "embedded", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("embedded", p)
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := embedded.ReadFile(p)
		if err != nil {
			return err
		}
		if st, err := os.Stat(dst); err == nil && st.Size() == int64(len(b)) {
			return nil
		}
		return atomicfile.WriteFile(dst, b)
	})
	if err != nil {
		return "", "", fmt.Errorf("extracting the embedded dataset to %s: %w", root, err)
	}
	return filepath.Join(root, "datasets", EmbeddedDataset), filepath.Join(root, embeddedTokenizer), nil
}

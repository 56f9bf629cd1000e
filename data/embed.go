package data

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
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

// embeddedFile is one file of the embedded data set.
type embeddedFile struct {
	rel    string // slash-separated path under the root
	data   []byte
	digest [sha256.Size]byte
}

// embeddedSet is the embedded files in path order and the set's hash.
type embeddedSet struct {
	files []embeddedFile
	hash  string // hex SHA-256 over every (path, file digest)
}

var loadEmbedded = sync.OnceValues(func() (*embeddedSet, error) {
	set := &embeddedSet{}
	err := fs.WalkDir(embedded, "embedded", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := embedded.ReadFile(p)
		if err != nil {
			return err
		}
		set.files = append(set.files, embeddedFile{rel: strings.TrimPrefix(p, "embedded/"), data: b, digest: sha256.Sum256(b)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(set.files, func(a, b embeddedFile) int { return strings.Compare(a.rel, b.rel) })
	h := sha256.New()
	for _, f := range set.files {
		fmt.Fprintf(h, "%s\x00%x\n", f.rel, f.digest)
	}
	set.hash = hex.EncodeToString(h.Sum(nil))
	return set, nil
})

// leftoverAge is how old an extraction's temporary directory must be
// before another start removes it as the leftover of a killed process
// (an extraction takes milliseconds; a younger one may be in progress).
const leftoverAge = 10 * time.Minute

// ExtractEmbedded makes a verified copy of the embedded data set under dir
// and returns the DATA_PATH and TOKENIZER_PATH to train on it. An empty
// dir means CacheDir() (os.UserCacheDir()/golf, falling back to
// os.TempDir() only without a user cache directory).
//
// The copy is <dir>/embedded-<hash>, hash being the first 16 hex digits of
// SHA-256 over the embedded files' paths and digests. Every call verifies
// the whole copy against the embedded bytes (SHA-256 of every file, ~5 ms
// for the 2 MB set) and that it holds no other file, never trusting sizes:
// a stale copy once changed val_bpb from 3.85 to 7.69 while its sizes
// matched. A copy that fails is replaced whole: the set is written into a
// temporary directory beside it, synced, and renamed into place, so a
// killed extraction leaves no half directory at the final path (its
// temporary directory is removed by a later start). Concurrent calls are
// safe: a process that finds the copy repaired by another keeps it.
func ExtractEmbedded(dir string) (dataPath, tokenizerPath string, err error) {
	set, err := loadEmbedded()
	if err != nil {
		return "", "", err
	}
	if dir == "" {
		if dir, err = CacheDir(); err != nil {
			return "", "", err
		}
	}
	root := filepath.Join(dir, "embedded-"+set.hash[:16])
	dataPath = filepath.Join(root, "datasets", EmbeddedDataset)
	tokenizerPath = filepath.Join(root, filepath.FromSlash(embeddedTokenizer))
	if set.verify(root) == nil {
		return dataPath, tokenizerPath, nil
	}
	if err := set.install(dir, root); err != nil {
		return "", "", fmt.Errorf("extracting the embedded dataset to %s: %w", root, err)
	}
	return dataPath, tokenizerPath, nil
}

// verify checks that root holds exactly the embedded files, byte for byte
// (by SHA-256), as regular files.
func (set *embeddedSet) verify(root string) error {
	want := make(map[string]*embeddedFile, len(set.files))
	for i := range set.files {
		want[set.files[i].rel] = &set.files[i]
	}
	seen := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		f := want[filepath.ToSlash(rel)]
		if f == nil {
			return fmt.Errorf("%s: not part of the embedded data set", p)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		got, err := fileDigest(p)
		if err != nil {
			return err
		}
		if got != f.digest {
			return fmt.Errorf("%s: content differs from the embedded file", p)
		}
		seen++
		return nil
	})
	if err == nil && seen != len(set.files) {
		err = fmt.Errorf("%s: %d of %d embedded files present", root, seen, len(set.files))
	}
	return err
}

func fileDigest(p string) (d [sha256.Size]byte, err error) {
	f, err := os.Open(p)
	if err != nil {
		return d, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return d, err
	}
	copy(d[:], h.Sum(nil))
	return d, nil
}

// install writes the set into a temporary directory in dir and renames it
// to root, moving a bad root aside first.
func (set *embeddedSet) install(dir, root string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	removeLeftovers(dir)
	base := filepath.Base(root)
	tmp, err := os.MkdirTemp(dir, "."+base+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := set.write(tmp); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := os.Rename(tmp, root)
		if err == nil {
			syncDir(dir)
			return nil
		}
		// root exists: another process may have just installed a good
		// copy; otherwise move the bad one aside and try again.
		if set.verify(root) == nil {
			return nil
		}
		if attempt >= 3 {
			return err
		}
		old := tmp + ".old"
		if err := os.Rename(root, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		os.RemoveAll(old)
	}
}

// write creates the set's files under tmp, synced.
func (set *embeddedSet) write(tmp string) error {
	dirs := map[string]bool{}
	for _, f := range set.files {
		p := filepath.Join(tmp, filepath.FromSlash(f.rel))
		if d := path.Dir(f.rel); !dirs[d] {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			dirs[d] = true
		}
		out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, bytes.NewReader(f.data))
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	for d := range dirs {
		syncDir(filepath.Join(tmp, filepath.FromSlash(d)))
	}
	return nil
}

// removeLeftovers deletes the temporary directories of extractions killed
// at least leftoverAge ago.
func removeLeftovers(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".embedded-*.tmp-*"))
	for _, m := range matches {
		if st, err := os.Lstat(m); err == nil && time.Since(st.ModTime()) > leftoverAge {
			os.RemoveAll(m)
		}
	}
}

// syncDir makes renames and creations in dir durable where the platform
// can sync a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CacheKey identifies one compile: the program's source and headers, the
// compile options, the target architecture, and the versions of the NVRTC
// that compiles and of the driver that will load the result (0 when no
// driver is present, as for `golf kernels`). Any change to one of them is
// a new key, so a cached cubin is never used with a compiler or driver it
// was not made for.
type CacheKey struct {
	Program       Program
	Options       []string
	Arch          string // "sm_80"
	NVRTCVersion  [2]int // major, minor
	DriverVersion int    // cuDriverGetVersion, e.g. 12040; 0 without a driver
}

// Hash is the hex SHA-256 of every field of k, each length-prefixed so that
// no two keys share an encoding.
func (k CacheKey) Hash() string {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	field("golf-cuda-cubin-v1")
	field(k.Program.Name)
	field(k.Program.Source)
	fmt.Fprintf(h, "headers %d;", len(k.Program.Headers))
	for _, hd := range k.Program.Headers {
		field(hd.Name)
		field(hd.Source)
	}
	fmt.Fprintf(h, "options %d;", len(k.Options))
	for _, o := range k.Options {
		field(o)
	}
	field(k.Arch)
	fmt.Fprintf(h, "nvrtc %d.%d; driver %d;", k.NVRTCVersion[0], k.NVRTCVersion[1], k.DriverVersion)
	return hex.EncodeToString(h.Sum(nil))
}

// Program is one NVRTC translation unit: a .cu source and the headers it
// includes by name (NVRTC resolves #include "name" against them, and names
// the files in its messages).
type Program struct {
	Name    string // "attention.cu"
	Source  string
	Headers []Header
}

// Header is a file a Program includes.
type Header struct {
	Name, Source string
}

// Cache stores compiled cubins with the compile log (which holds ptxas's
// resource report) on disk, one pair of files per CacheKey:
// <Dir>/<hash>.cubin and <hash>.log. Entries are written atomically (a
// temporary file renamed into place, the log first and the cubin last), so
// a crash or a concurrent golf never leaves a half-written entry that a
// later start would read: an entry exists when its cubin does.
type Cache struct {
	Dir string
}

// EnvCacheDir names the environment variable that overrides the cache
// directory.
const EnvCacheDir = "GOLF_CUDA_CACHE_DIR"

// DefaultCache is $GOLF_CUDA_CACHE_DIR, else os.UserCacheDir()/golf/cuda.
func DefaultCache() (*Cache, error) {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return &Cache{Dir: d}, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("cuda: kernel cache: %w", err)
	}
	return &Cache{Dir: filepath.Join(d, "golf", "cuda")}, nil
}

// Get returns the cached cubin and log of k; ok is false on a miss.
func (c *Cache) Get(k CacheKey) (cubin []byte, log string, ok bool, err error) {
	base := filepath.Join(c.Dir, k.Hash())
	cubin, err = os.ReadFile(base + ".cubin")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("cuda: kernel cache: %w", err)
	}
	lb, err := os.ReadFile(base + ".log")
	if err != nil {
		// A cubin without its log was not written by Put; treat it as a
		// miss and let Put replace it.
		return nil, "", false, nil
	}
	return cubin, string(lb), true, nil
}

// Put stores the cubin and log of k.
func (c *Cache) Put(k CacheKey, cubin []byte, log string) error {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("cuda: kernel cache: %w", err)
	}
	base := filepath.Join(c.Dir, k.Hash())
	if err := writeAtomic(base+".log", []byte(log)); err != nil {
		return err
	}
	return writeAtomic(base+".cubin", cubin)
}

// writeAtomic writes b to a temporary file in path's directory and renames
// it to path.
func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("cuda: kernel cache: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("cuda: kernel cache: %w", werr)
	}
	return nil
}

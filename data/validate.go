package data

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/golf-ml/golf/internal/atomicfile"
)

// ValidateOptions configures ValidateShards. The zero value validates with
// GOMAXPROCS workers, no progress reports, and the cache in CacheDir().
type ValidateOptions struct {
	// Workers is how many shards are read at once; 0 means GOMAXPROCS.
	// Each worker holds one 1 MiB buffer, never a whole shard.
	Workers int
	// Progress, when set, is called as validation advances: once at the
	// start, then after each file and each MiB read. Calls never overlap.
	Progress func(ValidateProgress)
	// CacheDir is where the cache file lives; "" means CacheDir().
	CacheDir string
	// NoCache reads every token of every file and neither reads nor writes
	// the cache.
	NoCache bool
	// Log, when set, receives one line when the cache cannot be read or
	// written. A cache problem is never an error: validation just reads
	// the files.
	Log func(string)
}

// ValidateProgress is a snapshot of a validation: files and bytes in all,
// and how many are done (a file from the cache counts as done at once).
type ValidateProgress struct {
	Files, FilesDone int
	Bytes, BytesDone int64
	CachedFiles      int
}

// ShardInfo is what validating one shard found.
type ShardInfo struct {
	Path     string // as the pattern matched it
	Tokens   int64  // token count (the header's, checked against the size)
	Bytes    int64  // file size, 1024 + 2·Tokens
	MaxToken int    // largest token id in the shard; -1 for an empty shard
	Cached   bool   // taken from the cache without reading the tokens
	// SampleSHA256 is the hex SHA-256 of the size, first MiB and last MiB
	// (see ValidateShardSets); it identifies the shard's content.
	SampleSHA256 string
}

// ShardSetInfo is what validating the shards of one pattern found.
type ShardSetInfo struct {
	Pattern string
	Shards  []ShardInfo // in sorted name order, the order TokenStream reads them
	Tokens  int64       // Σ Shards[i].Tokens
	Bytes   int64       // Σ Shards[i].Bytes
	Cached  int         // shards taken from the cache
}

// Fingerprint identifies the shard set for a checkpoint: the hex SHA-256
// over each shard's base name, size, token count and sample hash, in
// order. It does not depend on where the data directory is, so a moved
// data set still resumes; a different, added, removed, reordered or
// rewritten shard changes it.
func (s ShardSetInfo) Fingerprint() string {
	h := sha256.New()
	for _, sh := range s.Shards {
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%s\n", filepath.Base(sh.Path), sh.Bytes, sh.Tokens, sh.SampleSHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ValidateShards checks every shard of sorted(glob(pattern)) before
// training reads any: the header (magic, version), the size (exactly
// 1024 + 2·count bytes) and every token id (< vocab, VOCAB_SIZE). It is
// ValidateShardSets of one pattern.
func ValidateShards(ctx context.Context, pattern string, vocab int, opts ValidateOptions) (ShardSetInfo, error) {
	sets, err := ValidateShardSets(ctx, []string{pattern}, vocab, opts)
	if err != nil {
		return ShardSetInfo{}, err
	}
	return sets[0], nil
}

// ValidateShardSets validates the shards of several patterns (the train and
// validation splits) in one pass, so one progress report covers them all.
// The result has one ShardSetInfo per pattern, in order.
//
// Shards are read in parallel by opts.Workers goroutines, streaming 1 MiB at
// a time. A pattern that matches nothing is an error; so is the first bad
// shard in pattern-then-name order, which is the error reported whatever
// the scheduling. Errors name the file; a bad token's error gives its id,
// its position in the shard (token index and byte offset) and VOCAB_SIZE.
// A cancelled ctx stops the workers and returns ctx's error.
//
// # Cache
//
// A shard that passed once is not read again while it is unchanged: the
// cache (shard-check-v1.json in opts.CacheDir) records, per absolute path,
// the size, the modification time, a content sample hash, the token count
// and the largest token id. The largest id, not a verdict, is stored so
// that one entry serves every VOCAB_SIZE: the shard passes when
// max id < vocab. A file whose entry matches skips the token scan; one
// whose cached max id fails is scanned again to report the exact position.
//
// The sample hash is SHA-256 of the size, the first MiB and the last MiB
// (the whole file when it is at most 2 MiB), which includes the header. A
// full hash would cost the same read as validating, defeating the cache;
// size and mtime alone miss a shard replaced by a different one of the same
// size whose mtime was carried over (cp -p, rsync -t, tar, a re-export of
// a fixed-size shard in the same second on a coarse-mtime file system).
// Shards are written whole, so a replacement differs in its first or last
// MiB. Any write in place updates the mtime. What it does not catch, a
// same-size edit of the middle of a file with its mtime forged back, is
// not a failure mode of a data pipeline. Reading 2 MiB per shard keeps a
// second start at well under a second for a hundred 200 MB shards.
//
// The cache is written atomically after validation (good shards only;
// entries of files that no longer exist are dropped). A cache that cannot
// be read or written is reported through opts.Log and ignored; concurrent
// runs may drop each other's new entries, which only costs a re-read.
func ValidateShardSets(ctx context.Context, patterns []string, vocab int, opts ValidateOptions) ([]ShardSetInfo, error) {
	if vocab <= 0 {
		return nil, fmt.Errorf("VOCAB_SIZE must be positive, got %d", vocab)
	}
	type job struct {
		set, idx int
		path     string
		size     int64
	}
	var jobs []job
	sets := make([]ShardSetInfo, len(patterns))
	var totalBytes int64
	for si, p := range patterns {
		files, err := globSorted(p)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("No files found for pattern: %s", p)
		}
		sets[si] = ShardSetInfo{Pattern: p, Shards: make([]ShardInfo, len(files))}
		for i, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				return nil, err
			}
			if !st.Mode().IsRegular() {
				return nil, fmt.Errorf("%s: not a regular file", f)
			}
			jobs = append(jobs, job{si, i, f, st.Size()})
			totalBytes += st.Size()
		}
	}

	v := &validator{
		ctx:      ctx,
		vocab:    vocab,
		opts:     opts,
		progress: ValidateProgress{Files: len(jobs), Bytes: totalBytes},
		firstBad: int64(len(jobs)),
	}
	if !opts.NoCache {
		v.loadCache()
	}
	v.report(0, false, false)

	errs := make([]error, len(jobs))
	next := make(chan int)
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for k := range next {
				j := jobs[k]
				info, err := v.validate(k, j.path, buf)
				if errors.Is(err, errAbandoned) {
					continue // a lower job failed, or ctx ended: its error wins
				}
				if err != nil {
					errs[k] = err
					v.bad(k)
					continue
				}
				sets[j.set].Shards[j.idx] = info
			}
		}()
	}
	for k := range jobs {
		// Files after a bad one are not needed: the first bad file in
		// order is the one reported, and every file before it is read.
		if int64(k) > atomic.LoadInt64(&v.firstBad) || ctx.Err() != nil {
			break
		}
		next <- k
	}
	close(next)
	wg.Wait()

	if !opts.NoCache {
		v.saveCache()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for si := range sets {
		s := &sets[si]
		for _, sh := range s.Shards {
			s.Tokens += sh.Tokens
			s.Bytes += sh.Bytes
			if sh.Cached {
				s.Cached++
			}
		}
	}
	return sets, nil
}

// validator is the state one ValidateShardSets call shares among workers.
type validator struct {
	ctx   context.Context
	vocab int
	opts  ValidateOptions

	firstBad int64 // index of the first bad job found so far (atomic)

	mu       sync.Mutex
	progress ValidateProgress
	cache    map[string]shardCacheEntry // absolute path → entry; nil: no cache
	updated  bool                       // cache has entries to write
}

// shardCacheEntry is one file's record in the validation cache.
type shardCacheEntry struct {
	Size         int64  `json:"size"`
	MtimeNs      int64  `json:"mtime_ns"`
	SampleSHA256 string `json:"sample_sha256"`
	Tokens       int64  `json:"tokens"`
	MaxToken     int    `json:"max_token"`
}

// shardCacheFile is the cache file's content.
type shardCacheFile struct {
	Version int                        `json:"version"`
	Entries map[string]shardCacheEntry `json:"entries"`
}

const (
	shardCacheName    = "shard-check-v1.json"
	shardCacheVersion = 1
	sampleBytes       = 1 << 20 // hashed at each end of a shard
)

func (v *validator) logf(format string, args ...any) {
	if v.opts.Log != nil {
		v.opts.Log(fmt.Sprintf(format, args...))
	}
}

// cachePath is the cache file's path, "" when there is no cache directory.
func (v *validator) cachePath() string {
	dir := v.opts.CacheDir
	if dir == "" {
		d, err := CacheDir()
		if err != nil {
			v.logf("shard validation cache disabled: %v", err)
			return ""
		}
		dir = d
	}
	return filepath.Join(dir, shardCacheName)
}

// loadCache reads the cache; a missing or unreadable one starts empty.
func (v *validator) loadCache() {
	v.cache = map[string]shardCacheEntry{}
	p := v.cachePath()
	if p == "" {
		return
	}
	raw, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var c shardCacheFile
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err == nil && c.Version != shardCacheVersion {
		err = fmt.Errorf("version %d, want %d", c.Version, shardCacheVersion)
	}
	if err != nil {
		v.logf("shard validation cache %s ignored: %v", p, err)
		return
	}
	for k, e := range c.Entries {
		v.cache[k] = e
	}
}

// saveCache writes the cache back when validation added entries.
func (v *validator) saveCache() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.updated {
		return
	}
	p := v.cachePath()
	if p == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		v.logf("shard validation cache not saved: %v", err)
		return
	}
	c := shardCacheFile{Version: shardCacheVersion, Entries: map[string]shardCacheEntry{}}
	for k, e := range v.cache {
		if _, err := os.Stat(k); err == nil {
			c.Entries[k] = e
		}
	}
	raw, err := json.MarshalIndent(c, "", " ")
	if err == nil {
		err = atomicfile.WriteFile(p, raw)
	}
	if err != nil {
		v.logf("shard validation cache not saved: %v", err)
	}
}

// report adds bytes (and, when fileDone, one file) to the progress and
// calls opts.Progress.
func (v *validator) report(bytes int64, fileDone, cached bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.progress.BytesDone += bytes
	if fileDone {
		v.progress.FilesDone++
	}
	if cached {
		v.progress.CachedFiles++
	}
	if v.opts.Progress != nil {
		v.opts.Progress(v.progress)
	}
}

// bad records that job k failed, so later jobs can stop.
func (v *validator) bad(k int) {
	for {
		cur := atomic.LoadInt64(&v.firstBad)
		if int64(k) >= cur || atomic.CompareAndSwapInt64(&v.firstBad, cur, int64(k)) {
			return
		}
	}
}

// abandoned reports that job k's result can no longer matter.
func (v *validator) abandoned(k int) bool {
	return int64(k) > atomic.LoadInt64(&v.firstBad) || v.ctx.Err() != nil
}

// errAbandoned stops a scan whose result is no longer needed.
var errAbandoned = errors.New("abandoned")

// validate checks job k, the shard at path, using the cache when it can.
func (v *validator) validate(k int, path string, buf []byte) (ShardInfo, error) {
	if v.abandoned(k) {
		return ShardInfo{}, errAbandoned
	}
	f, err := os.Open(path)
	if err != nil {
		return ShardInfo{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ShardInfo{}, err
	}
	size, mtime := st.Size(), st.ModTime().UnixNano()

	sample, err := sampleHash(f, size)
	if err != nil {
		return ShardInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	var key string
	if v.cache != nil {
		if key, err = filepath.Abs(path); err != nil {
			key = ""
		}
		v.mu.Lock()
		e, ok := v.cache[key]
		v.mu.Unlock()
		if ok && key != "" && e.Size == size && e.MtimeNs == mtime && e.SampleSHA256 == sample && e.MaxToken < v.vocab {
			v.report(size, true, true)
			return ShardInfo{Path: path, Tokens: e.Tokens, Bytes: size, MaxToken: e.MaxToken, Cached: true, SampleSHA256: sample}, nil
		}
	}

	// sampleHash reads with ReadAt: the file offset is still 0.
	var reported int64
	h, maxTok, err := scanShard(f, path, size, v.vocab, buf, func(n int64) error {
		if v.abandoned(k) {
			return errAbandoned
		}
		v.report(n-reported, false, false)
		reported = n
		return nil
	})
	if err != nil {
		return ShardInfo{}, err
	}
	v.report(size-reported, true, false)
	if key != "" {
		v.mu.Lock()
		v.cache[key] = shardCacheEntry{Size: size, MtimeNs: mtime, SampleSHA256: sample, Tokens: int64(h.NumTokens), MaxToken: maxTok}
		v.updated = true
		v.mu.Unlock()
	}
	return ShardInfo{Path: path, Tokens: int64(h.NumTokens), Bytes: size, MaxToken: maxTok, SampleSHA256: sample}, nil
}

// sampleHash is the cache's content hash of the size bytes of r (see
// ValidateShardSets): SHA-256 of the size as 8 little-endian bytes, the
// first MiB and the last MiB, the two ranges not overlapping.
func sampleHash(r io.ReaderAt, size int64) (string, error) {
	h := sha256.New()
	var sz [8]byte
	binary.LittleEndian.PutUint64(sz[:], uint64(size))
	h.Write(sz[:])
	head := min(size, sampleBytes)
	tailStart := max(head, size-sampleBytes)
	for _, rg := range [][2]int64{{0, head}, {tailStart, size}} {
		if _, err := io.Copy(h, io.NewSectionReader(r, rg[0], rg[1]-rg[0])); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// scanShard reads the shard of size bytes from r through buf, checking the
// header against the size (readShardHeader) and every token against vocab,
// without keeping the tokens. progress, when set, is called with the bytes
// read so far after each buffer; an error from it stops the scan. It
// returns the header and the largest token id (-1 for no tokens).
func scanShard(r io.Reader, path string, size int64, vocab int, buf []byte, progress func(int64) error) (ShardHeader, int, error) {
	h, err := readShardHeader(r, path, size)
	if err != nil {
		return h, -1, err
	}
	buf = buf[:len(buf)/shardTokenBytes*shardTokenBytes]
	if len(buf) == 0 {
		panic("data.scanShard: buffer shorter than one token")
	}
	maxTok := -1
	limit := uint16(min(vocab, 1<<16) - 1) // largest allowed id; vocab ≥ 1
	allOK := vocab > 1<<16
	n := int64(h.NumTokens)
	for done := int64(0); done < n; {
		k := int(min(int64(len(buf)/shardTokenBytes), n-done))
		b := buf[:k*shardTokenBytes]
		if _, err := io.ReadFull(r, b); err != nil {
			return h, -1, shortRead(err, path, n, done)
		}
		m := uint16(0)
		for i := 0; i < len(b); i += shardTokenBytes {
			m = max(m, binary.LittleEndian.Uint16(b[i:]))
		}
		if !allOK && m > limit {
			for i := 0; i < len(b); i += shardTokenBytes {
				if t := binary.LittleEndian.Uint16(b[i:]); t > limit {
					pos := done + int64(i/shardTokenBytes)
					return h, -1, fmt.Errorf("%s: token id %d at position %d (byte offset %d) is outside VOCAB_SIZE=%d",
						path, t, pos, ShardHeaderBytes+shardTokenBytes*pos, vocab)
				}
			}
		}
		maxTok = max(maxTok, int(m))
		done += int64(k)
		if progress != nil {
			if err := progress(ShardHeaderBytes + shardTokenBytes*done); err != nil {
				return h, -1, err
			}
		}
	}
	return h, maxTok, nil
}

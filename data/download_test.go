package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeHub serves files like a Hugging Face dataset repository:
// /datasets/<repo>/resolve/main/<remote path>, with HEAD and Range support
// from http.ServeContent. It records every request.
type fakeHub struct {
	t        *testing.T
	srv      *httptest.Server
	files    map[string][]byte                                       // remote path → content
	override map[string]func(w http.ResponseWriter, r *http.Request) // remote path → handler

	mu       sync.Mutex
	requests []string // "METHOD remote [Range]"
}

const hubRepo = "test-org/test-golf"

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t, files: map[string][]byte{}, override: map[string]func(http.ResponseWriter, *http.Request){}}
	// Three train shards and one val shard of a few thousand bytes.
	for i := range 3 {
		h.files[fmt.Sprintf("datasets/datasets/fineweb10B_sp1024/fineweb_train_%06d.bin", i)] =
			rawShard(ShardMagic, ShardVersion, int32(1500+i), testTokens(1500+i, uint16(i)))
	}
	h.files["datasets/datasets/fineweb10B_sp1024/fineweb_val_000000.bin"] = rawShard(ShardMagic, ShardVersion, 999, testTokens(999, 77))
	model, err := os.ReadFile(testModelPath)
	require.NoError(t, err)
	h.files["datasets/tokenizers/fineweb_1024_bpe.model"] = model
	h.files["datasets/tokenizers/fineweb_1024_bpe.vocab"] = []byte("<unk>\t0\n<s>\t0\n")
	h.files["datasets/manifest.json"] = []byte(testManifest)
	h.files["datasets/docs_selected.jsonl"] = []byte(`{"text": "doc"}` + "\n")
	h.files["datasets/docs_selected.source_manifest.json"] = []byte(`{"docs_sha256": "x"}`)
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	remote, ok := strings.CutPrefix(r.URL.Path, "/datasets/"+hubRepo+"/resolve/main/")
	line := r.Method + " " + remote
	if rg := r.Header.Get("Range"); rg != "" {
		line += " " + rg
	}
	h.mu.Lock()
	h.requests = append(h.requests, line)
	f := h.override[remote]
	h.mu.Unlock()
	if f != nil {
		f(w, r)
		return
	}
	content, found := h.files[remote]
	if !ok || !found {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
}

// count is the number of recorded requests whose line starts with prefix.
func (h *fakeHub) count(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

// handle serves remote with f instead of its content (nil: the content).
func (h *fakeHub) handle(remote string, f func(w http.ResponseWriter, r *http.Request)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.override[remote] = f
}

func (h *fakeHub) reset() {
	h.mu.Lock()
	h.requests = nil
	h.mu.Unlock()
}

func (h *fakeHub) options(root string, trainShards int) FetchOptions {
	return FetchOptions{
		BaseURL:      h.srv.URL + "/datasets/" + hubRepo + "/resolve/main/",
		RepoID:       hubRepo,
		RemotePrefix: "datasets",
		LocalRoot:    root,
		Variant:      "sp1024",
		TrainShards:  trainShards,
		Client:       h.srv.Client(),
		// Fast failures and retries: a test must never wait on the defaults.
		FirstByteTimeout: 2 * time.Second,
		ManifestTimeout:  5 * time.Second,
		IdleTimeout:      2 * time.Second,
		Retries:          DefaultRetries,
		RetryWaitMin:     time.Millisecond,
		RetryWaitMax:     4 * time.Millisecond,
	}
}

// local maps a served remote path to where Fetch must put it.
func local(root, remote string) string {
	return filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(remote, "datasets/")))
}

// wantFiles checks that exactly the named remote files (plus nothing else,
// no .part) are under root, byte for byte.
func (h *fakeHub) wantFiles(t *testing.T, root string, remotes ...string) {
	t.Helper()
	var want, got []string
	for _, r := range remotes {
		p := local(root, r)
		want = append(want, p)
		content, err := os.ReadFile(p)
		if !assert.NoError(t, err, "missing %s", p) {
			continue
		}
		// bytes.Equal, not assert.Equal: a shard's hex dump helps no one.
		assert.True(t, bytes.Equal(content, h.files[r]), "%s: %d bytes differ from the served %d", p, len(content), len(h.files[r]))
	}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			got = append(got, p)
		}
		return nil
	})
	slices.Sort(want)
	assert.Equal(t, want, got, "files under root")
}

const (
	rManifest = "datasets/manifest.json"
	rVal      = "datasets/datasets/fineweb10B_sp1024/fineweb_val_000000.bin"
	rTrain0   = "datasets/datasets/fineweb10B_sp1024/fineweb_train_000000.bin"
	rTrain1   = "datasets/datasets/fineweb10B_sp1024/fineweb_train_000001.bin"
	rTrain2   = "datasets/datasets/fineweb10B_sp1024/fineweb_train_000002.bin"
	rModel    = "datasets/tokenizers/fineweb_1024_bpe.model"
	rVocab    = "datasets/tokenizers/fineweb_1024_bpe.vocab"
	rDocs     = "datasets/docs_selected.jsonl"
	rDocsMan  = "datasets/docs_selected.source_manifest.json"
)

func TestFetchFullThenSkip(t *testing.T) {
	h := newFakeHub(t)
	root := filepath.Join(t.TempDir(), "data")
	opts := h.options(root, 2)
	final := map[string][2]int64{}
	opts.Progress = func(file string, done, total int64) { final[file] = [2]int64{done, total} }
	var logs []string
	opts.Log = func(s string) { logs = append(logs, s) }
	require.NoError(t, Fetch(context.Background(), opts))
	h.wantFiles(t, root, rManifest, rVal, rTrain0, rTrain1, rModel, rVocab)
	assert.Equal(t, 6, h.count("GET "), "GETs: %q", h.requests)
	for _, r := range []string{rVal, rTrain0, rTrain1, rModel, rVocab} {
		size := int64(len(h.files[r]))
		assert.Equal(t, [2]int64{size, size}, final[local(root, r)], "%s: last progress (done, total)", r)
	}
	assert.NotEmpty(t, logs, "no log lines")
	// The fetched tree is what training validates against.
	name, actual, expected, err := ValidateDatasetTokenizerPair(
		filepath.Join(root, "datasets", "fineweb10B_sp1024"), filepath.Join(root, "tokenizers", "fineweb_1024_bpe.model"))
	assert.NoError(t, err)
	assert.Equal(t, "fineweb10B_sp1024", name)
	assert.Equal(t, 2, actual, "shards found")
	assert.Equal(t, 3, expected, "shards in the manifest")

	// Again: every file is complete, so one HEAD each and no GET (the local
	// manifest is used as is).
	h.reset()
	require.NoError(t, Fetch(context.Background(), opts))
	assert.Equal(t, 0, h.count("GET "), "second run GETs: %q", h.requests)
	assert.Equal(t, 5, h.count("HEAD "), "second run HEADs: %q", h.requests)

	// A local file of the wrong size, and a shard whose header disagrees
	// with its size although the size is right, are fetched again.
	require.NoError(t, os.WriteFile(local(root, rVocab), []byte("x"), 0o644))
	corruptMagic(t, local(root, rTrain1))
	h.reset()
	require.NoError(t, Fetch(context.Background(), opts))
	assert.Equal(t, 2, h.count("GET "), "third run: %q, want GETs of exactly %s and %s", h.requests, rVocab, rTrain1)
	assert.Equal(t, 1, h.count("GET "+rVocab), "third run: %q", h.requests)
	assert.Equal(t, 1, h.count("GET "+rTrain1), "third run: %q", h.requests)
	h.wantFiles(t, root, rManifest, rVal, rTrain0, rTrain1, rModel, rVocab)

	// More shards and the docs on top.
	opts.TrainShards, opts.WithDocs = 3, true
	h.reset()
	require.NoError(t, Fetch(context.Background(), opts))
	assert.Equal(t, 3, h.count("GET "), "fourth run: %q", h.requests)
	h.wantFiles(t, root, rManifest, rVal, rTrain0, rTrain1, rTrain2, rModel, rVocab, rDocs, rDocsMan)
}

func TestFetchResume(t *testing.T) {
	h := newFakeHub(t)
	root := t.TempDir()
	part := local(root, rTrain1) + ".part"
	require.NoError(t, os.MkdirAll(filepath.Dir(part), 0o755))
	require.NoError(t, os.WriteFile(part, h.files[rTrain1][:1700], 0o644))
	require.NoError(t, Fetch(context.Background(), h.options(root, 2)))
	assert.Equal(t, 1, h.count("GET "+rTrain1+" bytes=1700-"), "requests %q, want one ranged GET of %s from 1700", h.requests, rTrain1)
	assert.Equal(t, 1, h.count("GET "+rTrain1), "requests %q, want one GET of %s", h.requests, rTrain1)
	h.wantFiles(t, root, rManifest, rVal, rTrain0, rTrain1, rModel, rVocab)

	// A .part already complete: the server answers 416, and it is renamed.
	root = t.TempDir()
	part = local(root, rVal) + ".part"
	require.NoError(t, os.MkdirAll(filepath.Dir(part), 0o755))
	require.NoError(t, os.WriteFile(part, h.files[rVal], 0o644))
	h.reset()
	require.NoError(t, Fetch(context.Background(), h.options(root, 0)))
	assert.Equal(t, 1, h.count(fmt.Sprintf("GET %s bytes=%d-", rVal, len(h.files[rVal]))),
		"requests %q, want a ranged GET past the end of %s", h.requests, rVal)
	h.wantFiles(t, root, rManifest, rVal, rModel, rVocab)

	// A server that ignores Range: the whole file comes again and replaces
	// the .part.
	root = t.TempDir()
	part = local(root, rVal) + ".part"
	require.NoError(t, os.MkdirAll(filepath.Dir(part), 0o755))
	require.NoError(t, os.WriteFile(part, []byte("garbage that is not a prefix"), 0o644))
	h.handle(rVal, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(h.files[rVal])))
		w.Write(h.files[rVal])
	})
	require.NoError(t, Fetch(context.Background(), h.options(root, 0)))
	h.wantFiles(t, root, rManifest, rVal, rModel, rVocab)
}

func TestFetchSizeMismatch(t *testing.T) {
	h := newFakeHub(t)
	content := h.files[rTrain0]

	// The body ends before its Content-Length: an error, the bytes kept in
	// the .part for a resume, no final file.
	root := t.TempDir()
	h.handle(rTrain0, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(content)))
		w.Write(content[:len(content)/2])
	})
	err := Fetch(context.Background(), h.options(root, 1))
	u := h.srv.URL + "/datasets/" + hubRepo + "/resolve/main/" + rTrain0
	assert.ErrorContains(t, err, u, "truncated body")
	assert.ErrorContains(t, err, local(root, rTrain0), "truncated body")
	_, err = os.Stat(local(root, rTrain0))
	assert.ErrorIs(t, err, fs.ErrNotExist, "truncated body: the final file")

	// A resume whose Content-Range announces a different total than the
	// bytes that arrive: size mismatch, no final file, no .part.
	root = t.TempDir()
	part := local(root, rTrain0) + ".part"
	require.NoError(t, os.MkdirAll(filepath.Dir(part), 0o755))
	require.NoError(t, os.WriteFile(part, content[:100], 0o644))
	h.handle(rTrain0, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes 100-%d/%d", len(content)-1, len(content)+10))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(content[100:])
	})
	err = Fetch(context.Background(), h.options(root, 1))
	assert.ErrorContains(t, err, "size mismatch", "wrong total")
	assert.ErrorContains(t, err, u, "wrong total")
	for _, p := range []string{local(root, rTrain0), part} {
		_, err := os.Stat(p)
		assert.ErrorIs(t, err, fs.ErrNotExist, "wrong total: %s", p)
	}

	// A complete transfer of a shard whose header does not match its size.
	root = t.TempDir()
	bad := rawShard(ShardMagic, ShardVersion, 5, testTokens(4, 1))
	h.handle(rTrain0, func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(bad))
	})
	err = Fetch(context.Background(), h.options(root, 1))
	assert.ErrorContains(t, err, "shard size mismatch", "inconsistent shard")
	_, err = os.Stat(local(root, rTrain0))
	assert.ErrorIs(t, err, fs.ErrNotExist, "inconsistent shard: the final file")
}

func TestFetchErrors(t *testing.T) {
	h := newFakeHub(t)
	base := h.srv.URL + "/datasets/" + hubRepo + "/resolve/main/"

	// A manifest artifact the server does not have.
	delete(h.files, rVocab)
	root := t.TempDir()
	err := Fetch(context.Background(), h.options(root, 1))
	assert.ErrorContains(t, err, base+rVocab, "404")
	assert.ErrorContains(t, err, "404")
	_, err = os.Stat(local(root, rVocab))
	assert.ErrorIs(t, err, fs.ErrNotExist, "404: the file")

	// More train shards than the manifest lists: refused before any shard.
	h.reset()
	err = Fetch(context.Background(), h.options(t.TempDir(), 4))
	assert.EqualError(t, err, "sp1024 only has 3 training shards on "+hubRepo+", requested 4", "too many shards")
	assert.Equal(t, 0, h.count("GET datasets/datasets/"), "too many shards: shard requests %q", h.requests)

	bad := []struct {
		desc string
		edit func(*FetchOptions)
		want string
	}{
		{"negative shards", func(o *FetchOptions) { o.TrainShards = -1 }, "train_shards must be non-negative"},
		{"bad variant", func(o *FetchOptions) { o.Variant = "gpt2" }, `unsupported variant "gpt2"; expected byte260 or sp<VOCAB_SIZE>`},
		{"bad variant sp", func(o *FetchOptions) { o.Variant = "sp" }, `unsupported variant "sp"`},
		{"no manifest", func(o *FetchOptions) { o.SkipManifest = true }, "manifest.json is required for manifest-driven shard counts but is not present locally at "},
		{"unknown dataset", func(o *FetchOptions) { o.Variant = "sp8192" }, "dataset fineweb10B_sp8192 not found in datasets/manifest.json"},
		{"no files_train", func(o *FetchOptions) { o.Variant = "sp4096" }, "dataset fineweb10B_sp4096 has no stats.files_train"},
	}
	for _, c := range bad {
		o := h.options(t.TempDir(), 1)
		c.edit(&o)
		assert.ErrorContains(t, Fetch(context.Background(), o), c.want, c.desc)
	}

	// A manifest whose artifact path climbs out of the root.
	h.files[rManifest] = []byte(strings.Replace(testManifest, "tokenizers/fineweb_1024_bpe.vocab", "../../etc/x", 1))
	h.files[rVocab] = []byte("v")
	assert.ErrorContains(t, Fetch(context.Background(), h.options(t.TempDir(), 0)), "refusing remote path", "escaping artifact path")

	// A cancelled context stops the fetch.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Error(t, Fetch(ctx, h.options(t.TempDir(), 1)), "cancelled context")
}

func TestFetchDefaults(t *testing.T) {
	t.Setenv(envRepoID, "me/my-data")
	t.Setenv(envRemotePrefix, "export50B")
	o := NewFetchOptions()
	assert.Equal(t, "me/my-data", o.RepoID, "from env")
	assert.Equal(t, "export50B", o.RemotePrefix, "from env")
	assert.Equal(t, 80, o.TrainShards, "from env")
	assert.Equal(t, "https://huggingface.co/datasets/me/my-data/resolve/main/", o.BaseURL, "from env")
	assert.Equal(t, "./data", o.LocalRoot, "from env")
	assert.Equal(t, "sp1024", o.Variant, "from env")
	t.Setenv(envRepoID, "")
	os.Unsetenv(envRemotePrefix)
	o = NewFetchOptions()
	assert.Equal(t, DefaultRepoID, o.RepoID, "defaults")
	assert.Equal(t, "datasets", o.RemotePrefix, "defaults")
	assert.Equal(t, "https://huggingface.co/datasets/willdepueoai/parameter-golf/resolve/main/", o.BaseURL, "defaults")
	f := &fetcher{FetchOptions: FetchOptions{LocalRoot: "r"}, prefix: "datasets"}
	for remote, want := range map[string]string{
		"datasets/manifest.json":              "r/manifest.json",
		"datasets/datasets/d/fineweb_val.bin": "r/datasets/d/fineweb_val.bin",
		"datasets/tokenizers/t.model":         "r/tokenizers/t.model",
		"other/tokenizers/t.model":            "r/other/tokenizers/t.model",
		"datasets/docs_selected.jsonl":        "r/docs_selected.jsonl",
	} {
		got, err := f.localPath(remote)
		assert.NoError(t, err, "localPath(%q)", remote)
		assert.Equal(t, want, got, "localPath(%q)", remote)
	}
	for v, want := range map[string]string{"byte260": "fineweb10B_byte260", "sp1024": "fineweb10B_sp1024", "sp8192": "fineweb10B_sp8192"} {
		got, err := DatasetDirForVariant(v)
		assert.NoError(t, err, "DatasetDirForVariant(%q)", v)
		assert.Equal(t, want, got, "DatasetDirForVariant(%q)", v)
	}
	for _, v := range []string{"sp", "sp1k", "byte256", "SP1024", ""} {
		_, err := DatasetDirForVariant(v)
		assert.Error(t, err, "DatasetDirForVariant(%q)", v)
	}
}

func TestFetchNoPrefix(t *testing.T) {
	// An export at the repository root (prefix "/"): remote paths have no
	// prefix and map one to one under the local root.
	h := newFakeHub(t)
	flat := map[string][]byte{}
	for k, v := range h.files {
		flat[strings.TrimPrefix(k, "datasets/")] = v
	}
	h.files = flat
	root := t.TempDir()
	o := h.options(root, 1)
	o.RemotePrefix = "/"
	require.NoError(t, Fetch(context.Background(), o))
	for _, p := range []string{"manifest.json", "datasets/fineweb10B_sp1024/fineweb_train_000000.bin", "tokenizers/fineweb_1024_bpe.model"} {
		assert.FileExists(t, filepath.Join(root, p))
	}
	assert.Equal(t, 1, h.count("GET manifest.json"), "requests %q", h.requests)
}

// stall blocks a handler until the client gives up (or the test ends).
func stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(30 * time.Second):
	}
}

func TestFetchStalledServer(t *testing.T) {
	h := newFakeHub(t)
	content := h.files[rTrain0]
	half := len(content) / 2
	u := h.srv.URL + "/datasets/" + hubRepo + "/resolve/main/" + rTrain0
	// The guard only ends a hung test; the idle timeout must fire first.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The body stops after half its bytes and the connection stays open.
	h.handle(rTrain0, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(content)))
		w.Write(content[:half])
		w.(http.Flusher).Flush()
		stall(r)
	})
	root := t.TempDir()
	o := h.options(root, 1)
	o.IdleTimeout, o.Retries = 200*time.Millisecond, 0
	err := Fetch(ctx, o)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the guard fired: the stall was not detected")
	var idle *IdleTimeoutError
	require.ErrorAs(t, err, &idle)
	part := local(root, rTrain0) + ".part"
	assert.Equal(t, fmt.Sprintf("GET %s (%s): no data received for 200ms (idle timeout); %d bytes kept in %s to resume",
		u, local(root, rTrain0), half, part), err.Error())
	assert.NoFileExists(t, local(root, rTrain0))
	kept, err := os.ReadFile(part)
	require.NoError(t, err)
	assert.Equal(t, content[:half], kept)

	// The server recovers: the next fetch resumes from the kept bytes.
	h.handle(rTrain0, nil)
	h.reset()
	require.NoError(t, Fetch(ctx, o))
	assert.Equal(t, 1, h.count(fmt.Sprintf("GET %s bytes=%d-", rTrain0, half)), "requests %q", h.requests)
	h.wantFiles(t, root, rManifest, rVal, rTrain0, rModel, rVocab)

	// No response headers at all: the first-byte timeout, not the idle
	// timeout, applies (timeouts_test.go has the other stalls).
	h.handle(rVal, func(w http.ResponseWriter, r *http.Request) { stall(r) })
	root = t.TempDir()
	o = h.options(root, 0)
	o.FirstByteTimeout, o.IdleTimeout, o.Retries = 200*time.Millisecond, time.Hour, 0
	err = Fetch(ctx, o)
	require.Error(t, err)
	require.NoError(t, ctx.Err())
	uVal := h.srv.URL + "/datasets/" + hubRepo + "/resolve/main/" + rVal
	assert.Equal(t, fmt.Sprintf("GET %s (%s): no response headers within 200ms (first-byte timeout)", uVal, local(root, rVal)), err.Error())

	// With retries, one Fetch rides over a stall in the body: the retry
	// resumes at the byte where the stalled transfer stopped.
	var stalled atomic.Bool
	h.handle(rTrain0, func(w http.ResponseWriter, r *http.Request) {
		if !stalled.Swap(true) {
			w.Header().Set("Content-Length", fmt.Sprint(len(content)))
			w.Write(content[:half])
			w.(http.Flusher).Flush()
			stall(r)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
	})
	h.handle(rVal, nil)
	root = t.TempDir()
	o = h.options(root, 1)
	o.IdleTimeout = 200 * time.Millisecond
	var logs []string
	o.Log = func(s string) { logs = append(logs, s) }
	h.reset()
	require.NoError(t, Fetch(ctx, o))
	assert.Equal(t, 2, h.count("GET "+rTrain0), "requests %q", h.requests)
	assert.Equal(t, 1, h.count(fmt.Sprintf("GET %s bytes=%d-", rTrain0, half)), "requests %q", h.requests)
	assert.Contains(t, strings.Join(logs, "\n"), "idle timeout")
	h.wantFiles(t, root, rManifest, rVal, rTrain0, rModel, rVocab)
}

func TestFetchRetries(t *testing.T) {
	h := newFakeHub(t)
	ctx := context.Background()

	// Two 503s, then the file: one Fetch, three GETs of it.
	var fails atomic.Int32
	h.handle(rVal, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && fails.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(h.files[rVal]))
	})
	root := t.TempDir()
	o := h.options(root, 0)
	var logs []string
	o.Log = func(s string) { logs = append(logs, s) }
	require.NoError(t, Fetch(ctx, o))
	assert.Equal(t, 3, h.count("GET "+rVal), "requests %q", h.requests)
	h.wantFiles(t, root, rManifest, rVal, rModel, rVocab)
	uVal := h.srv.URL + "/datasets/" + hubRepo + "/resolve/main/" + rVal
	assert.Contains(t, logs, "retry GET "+uVal+": 503 Service Unavailable")

	// Always 503: Retries+1 attempts, then the status, naming URL and file.
	h.handle(rVal, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	h.reset()
	root = t.TempDir()
	o = h.options(root, 0)
	o.Retries = 2
	err := Fetch(ctx, o)
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("GET %s (%s): 503 Service Unavailable", uVal, local(root, rVal)), err.Error())
	assert.Equal(t, 3, h.count("GET "+rVal))

	// A 404 is final: one request.
	h.handle(rVal, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	h.reset()
	require.Error(t, Fetch(ctx, h.options(t.TempDir(), 0)))
	assert.Equal(t, 1, h.count("GET "+rVal))

	// A connection refused is retried, then named.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	o = h.options(t.TempDir(), 0)
	o.BaseURL, o.Retries = deadURL+"/", 1
	err = Fetch(ctx, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GET "+deadURL+"/datasets/manifest.json")
	assert.Contains(t, err.Error(), "connection refused")
	assert.Contains(t, err.Error(), "(after 2 attempts)")
}

func TestFetchTruncatedBodyResumes(t *testing.T) {
	// The server closes the connection after 1000 bytes the first time; the
	// second request asks for the rest and the file is complete.
	h := newFakeHub(t)
	content := h.files[rTrain1]
	var cut atomic.Bool
	h.handle(rTrain1, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && !cut.Swap(true) {
			w.Header().Set("Content-Length", fmt.Sprint(len(content)))
			w.Write(content[:1000])
			w.(http.Flusher).Flush()
			return // net/http closes a connection whose body fell short
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
	})
	root := t.TempDir()
	require.NoError(t, Fetch(context.Background(), h.options(root, 2)))
	assert.Equal(t, 1, h.count("GET "+rTrain1+" bytes=1000-"), "requests %q", h.requests)
	assert.Equal(t, 2, h.count("GET "+rTrain1), "requests %q", h.requests)
	h.wantFiles(t, root, rManifest, rVal, rTrain0, rTrain1, rModel, rVocab)
}

// manifestWithDigests is testManifest with a sha256 map.
func manifestWithDigests(digests map[string]string) []byte {
	var entries []string
	for k, v := range digests {
		entries = append(entries, fmt.Sprintf("%q: %q", k, v))
	}
	slices.Sort(entries)
	return []byte(strings.Replace(testManifest, `"version": 1,`,
		`"version": 1, "sha256": {`+strings.Join(entries, ", ")+`},`, 1))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestFetchSHA256(t *testing.T) {
	h := newFakeHub(t)
	ctx := context.Background()
	valKey := "datasets/fineweb10B_sp1024/fineweb_val_000000.bin"
	modelKey := "tokenizers/fineweb_1024_bpe.model"
	good := h.files[rVal]
	h.files[rManifest] = manifestWithDigests(map[string]string{
		valKey:   sha256Hex(good),
		modelKey: strings.ToUpper(sha256Hex(h.files[rModel])), // case does not matter
	})
	root := t.TempDir()
	require.NoError(t, Fetch(ctx, h.options(root, 0)))
	h.wantFiles(t, root, rManifest, rVal, rModel, rVocab)

	// Present and matching: skipped without asking the server.
	h.reset()
	require.NoError(t, Fetch(ctx, h.options(root, 0)))
	assert.Zero(t, h.count("HEAD "+rVal)+h.count("GET "+rVal), "requests %q", h.requests)
	assert.Equal(t, 1, h.count("HEAD "+rVocab), "a file without a digest is checked by size")

	// A local copy of the right size and header but different tokens (a
	// size check passes it) is fetched again.
	bad := slices.Clone(good)
	bad[len(bad)-1] ^= 0x01
	require.NoError(t, os.WriteFile(local(root, rVal), bad, 0o644))
	h.reset()
	require.NoError(t, Fetch(ctx, h.options(root, 0)))
	assert.Equal(t, 1, h.count("GET "+rVal))
	h.wantFiles(t, root, rManifest, rVal, rModel, rVocab)

	// The server's copy differs from the manifest: refused, nothing left.
	h.files[rVal] = bad
	root = t.TempDir()
	err := Fetch(ctx, h.options(root, 0))
	require.Error(t, err)
	uVal := h.srv.URL + "/datasets/" + hubRepo + "/resolve/main/" + rVal
	assert.Equal(t, fmt.Sprintf("GET %s (%s): sha256 mismatch: got %s, manifest says %s",
		uVal, local(root, rVal), sha256Hex(bad), sha256Hex(good)), err.Error())
	assert.NoFileExists(t, local(root, rVal))
	assert.NoFileExists(t, local(root, rVal)+".part")

	// A .part from another version of the file: the resumed file fails its
	// digest, so it is fetched again from the start, once.
	h.files[rVal] = good
	root = t.TempDir()
	part := local(root, rVal) + ".part"
	require.NoError(t, os.MkdirAll(filepath.Dir(part), 0o755))
	require.NoError(t, os.WriteFile(part, bad[:1500], 0o644))
	bad[1200] ^= 0xff // differ inside the kept prefix
	require.NoError(t, os.WriteFile(part, bad[:1500], 0o644))
	h.reset()
	require.NoError(t, Fetch(ctx, h.options(root, 0)))
	assert.Equal(t, []string{"GET " + rVal + " bytes=1500-", "GET " + rVal}, filterPrefix(h.requests, "GET "+rVal))
	h.wantFiles(t, root, rManifest, rVal, rModel, rVocab)

	// Malformed digests are refused naming the manifest.
	for _, m := range []map[string]string{{valKey: "abc"}, {"../x": sha256Hex(good)}, {"/abs": sha256Hex(good)}} {
		h.files[rManifest] = manifestWithDigests(m)
		root = t.TempDir()
		err := Fetch(ctx, h.options(root, 0))
		require.Error(t, err, "%v", m)
		assert.True(t, strings.HasPrefix(err.Error(), filepath.Join(root, "manifest.json")+": invalid manifest: sha256"), err.Error())
	}
}

func filterPrefix(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

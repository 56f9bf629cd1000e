package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Downloader defaults (cached_challenge_fineweb.py).
const (
	DefaultRepoID       = "willdepueoai/parameter-golf"
	DefaultRemotePrefix = "datasets"
	DefaultLocalRoot    = "./data"
	DefaultVariant      = "sp1024"
	DefaultTrainShards  = 80

	envRepoID       = "MATCHED_FINEWEB_REPO_ID"
	envRemotePrefix = "MATCHED_FINEWEB_REMOTE_ROOT_PREFIX"
)

// FetchOptions configures Fetch. Empty strings take their defaults;
// TrainShards is used as given (NewFetchOptions sets DefaultTrainShards).
type FetchOptions struct {
	// BaseURL is the URL remote paths are appended to; default
	// https://huggingface.co/datasets/<RepoID>/resolve/main/.
	BaseURL string
	// RepoID is the Hugging Face dataset repository; default
	// $MATCHED_FINEWEB_REPO_ID, else DefaultRepoID.
	RepoID string
	// RemotePrefix is the export's root folder in the repository; default
	// $MATCHED_FINEWEB_REMOTE_ROOT_PREFIX (which may be empty), else
	// "datasets". "/" means the repository root.
	RemotePrefix string
	// LocalRoot is the local data directory; default "./data".
	LocalRoot string
	// Variant is byte260 or sp<VOCAB_SIZE>; default sp1024.
	Variant string
	// TrainShards is how many train shards to fetch (a prefix of the
	// export): at least 0, at most the manifest's files_train.
	TrainShards int
	// SkipManifest uses the local manifest.json and never downloads it.
	SkipManifest bool
	// WithDocs also fetches docs_selected.jsonl and its source manifest.
	WithDocs bool
	// Client is the base of the requests' client; default one whose dialer
	// and TLS handshake are bounded by FirstByteTimeout. Either way the
	// limits below and the retries are added around it.
	Client *http.Client
	// FirstByteTimeout fails an attempt (and each redirect of it) that has
	// not received a connection, its response headers and its first body
	// byte this long after it started (a *FirstByteTimeoutError); it is
	// retried. Default DefaultFirstByteTimeout.
	FirstByteTimeout time.Duration
	// ManifestTimeout fails an attempt at manifest.json, redirects
	// included, not complete this long after it started (a
	// *ManifestTimeoutError); it is retried. Default DefaultManifestTimeout.
	ManifestTimeout time.Duration
	// IdleTimeout fails a transfer whose body, after its first byte,
	// receives nothing for this long (an *IdleTimeoutError): a stalled
	// server is an error, not a hang; it is retried and resumed from the
	// .part. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Retries is how many times a failed request (connection error, 429,
	// 5xx) or an interrupted transfer (resumed from its .part) is tried
	// again, waiting RetryWaitMin, doubling, up to RetryWaitMax in
	// between: 0 means one attempt and no retry, N means at most N+1
	// attempts; negative is an error. Unlike the other fields, 0 is not
	// replaced by a default: NewFetchOptions sets DefaultRetries.
	Retries int
	// RetryWaitMin and RetryWaitMax bound the backoff; defaults
	// DefaultRetryWaitMin and DefaultRetryWaitMax.
	RetryWaitMin, RetryWaitMax time.Duration
	// Progress, when set, is called as a file arrives with the local path,
	// the bytes present and the total size (-1 when unknown).
	Progress func(file string, done, total int64)
	// Log, when set, receives one line per file fetched or skipped.
	Log func(string)
}

// NewFetchOptions returns the downloader's defaults, reading the
// MATCHED_FINEWEB_* environment variables.
func NewFetchOptions() FetchOptions {
	o := FetchOptions{TrainShards: DefaultTrainShards, Retries: DefaultRetries}
	o.fillDefaults()
	return o
}

func (o *FetchOptions) fillDefaults() {
	if o.RepoID == "" {
		o.RepoID = DefaultRepoID
		if v, ok := os.LookupEnv(envRepoID); ok && v != "" {
			o.RepoID = v
		}
	}
	if o.RemotePrefix == "" {
		o.RemotePrefix = DefaultRemotePrefix
		if v, ok := os.LookupEnv(envRemotePrefix); ok {
			o.RemotePrefix = v
			if v == "" {
				o.RemotePrefix = "/"
			}
		}
	}
	if o.BaseURL == "" {
		o.BaseURL = "https://huggingface.co/datasets/" + o.RepoID + "/resolve/main/"
	}
	if o.LocalRoot == "" {
		o.LocalRoot = DefaultLocalRoot
	}
	if o.Variant == "" {
		o.Variant = DefaultVariant
	}
	if o.FirstByteTimeout <= 0 {
		o.FirstByteTimeout = DefaultFirstByteTimeout
	}
	if o.ManifestTimeout <= 0 {
		o.ManifestTimeout = DefaultManifestTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.RetryWaitMin <= 0 {
		o.RetryWaitMin = DefaultRetryWaitMin
	}
	if o.RetryWaitMax <= 0 {
		o.RetryWaitMax = DefaultRetryWaitMax
	}
	o.RetryWaitMax = max(o.RetryWaitMax, o.RetryWaitMin)
}

// DatasetDirForVariant maps a tokenizer variant to its dataset directory:
// byte260 → fineweb10B_byte260, sp<N> → fineweb10B_sp<N>.
func DatasetDirForVariant(variant string) (string, error) {
	if variant == "byte260" {
		return "fineweb10B_byte260", nil
	}
	if n, ok := strings.CutPrefix(variant, "sp"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		return "fineweb10B_" + variant, nil
	}
	return "", fmt.Errorf("unsupported variant %q; expected byte260 or sp<VOCAB_SIZE>", variant)
}

// fetcher holds one Fetch's resolved settings.
type fetcher struct {
	FetchOptions
	prefix string                // RemotePrefix without surrounding slashes; "" for none
	client *retryablehttp.Client // with timeouts and retries
	sha256 map[string]string     // root-relative path → expected hex digest
}

// Fetch downloads the manifest, the validation shards, the first
// TrainShards train shards and the tokenizer files of a variant into
// LocalRoot (cached_challenge_fineweb.py):
//
//	<root>/manifest.json
//	<root>/datasets/fineweb10B_<variant>/fineweb_{val,train}_%06d.bin
//	<root>/tokenizers/...
//
// A local manifest is used as is. A file already present is kept when its
// size equals the server's (HEAD) and, for a shard, its header agrees with
// its size and, where the manifest gives its SHA-256, its digest matches.
// Otherwise it is downloaded into <file>.part, resuming a partial .part with
// a Range request, checked against the size the server announced, a
// shard's header and the manifest's SHA-256, and renamed into place, so a
// final file is never partial or unverified.
//
// Every attempt fails without a connection, response headers and first
// body byte within FirstByteTimeout, every body once it stops for
// IdleTimeout, and every attempt at the manifest unless complete within
// ManifestTimeout; errors name the limit, the URL and the file. Failed
// attempts (connection errors, these timeouts, 429 and 5xx) are retried
// Retries times with exponential backoff; a transfer cut off midway is
// resumed from its .part. A server that never answers fails Fetch after
// about UnansweredLimit.
func Fetch(ctx context.Context, opts FetchOptions) error {
	opts.fillDefaults()
	if opts.Retries < 0 {
		return fmt.Errorf("retries must be 0 (no retry) or more, got %d", opts.Retries)
	}
	if !strings.HasSuffix(opts.BaseURL, "/") {
		opts.BaseURL += "/"
	}
	f := &fetcher{FetchOptions: opts, prefix: strings.Trim(opts.RemotePrefix, "/"), client: opts.httpClient()}
	datasetDir, err := DatasetDirForVariant(opts.Variant)
	if err != nil {
		return err
	}
	if opts.TrainShards < 0 {
		return fmt.Errorf("train_shards must be non-negative, got %d", opts.TrainShards)
	}

	m, manifestPath, err := f.loadManifest(ctx)
	if err != nil {
		return err
	}
	f.sha256 = m.SHA256
	manifestName := f.remote("manifest.json")
	entry := m.dataset(datasetDir)
	if entry == nil {
		return fmt.Errorf("%s: dataset %s not found in %s", manifestPath, datasetDir, manifestName)
	}
	maxTrain, ok, err := entry.stat("files_train")
	if err == nil && !ok {
		err = fmt.Errorf("dataset %s has no stats.files_train", datasetDir)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", manifestPath, err)
	}
	valShards, ok, err := entry.stat("files_val")
	if err == nil && !ok {
		err = fmt.Errorf("dataset %s has no stats.files_val", datasetDir)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", manifestPath, err)
	}
	if opts.TrainShards > maxTrain {
		return fmt.Errorf("%s only has %d training shards on %s, requested %d",
			opts.Variant, maxTrain, opts.RepoID, opts.TrainShards)
	}
	tok := m.tokenizer(entry.TokenizerName)
	if tok == nil {
		return fmt.Errorf("%s: tokenizer %s not found in %s", manifestPath, entry.TokenizerName, manifestName)
	}
	var artifacts []string
	for _, p := range []string{tok.ModelPath, tok.VocabPath, tok.Path} {
		if p != "" {
			artifacts = append(artifacts, p)
		}
	}
	if len(artifacts) == 0 {
		return fmt.Errorf("%s: tokenizer entry %s is missing downloadable artifacts", manifestPath, tok.Name)
	}

	var remotes []string
	if opts.WithDocs {
		remotes = append(remotes, f.remote("docs_selected.jsonl"), f.remote("docs_selected.source_manifest.json"))
	}
	datasetPrefix := f.remote("datasets/" + datasetDir)
	for i := range valShards {
		remotes = append(remotes, fmt.Sprintf("%s/fineweb_val_%06d.bin", datasetPrefix, i))
	}
	for i := range opts.TrainShards {
		remotes = append(remotes, fmt.Sprintf("%s/fineweb_train_%06d.bin", datasetPrefix, i))
	}
	for _, a := range artifacts {
		remotes = append(remotes, f.remote(a))
	}
	// Map every path first, so a bad artifact path fails before any download.
	locals := make([]string, len(remotes))
	for i, r := range remotes {
		if locals[i], err = f.localPath(r); err != nil {
			return fmt.Errorf("%s: %w", manifestPath, err)
		}
	}
	for i, r := range remotes {
		if err := f.get(ctx, r, locals[i]); err != nil {
			return err
		}
	}
	return nil
}

// remote is a path under the remote prefix.
func (f *fetcher) remote(p string) string {
	if f.prefix == "" {
		return p
	}
	return f.prefix + "/" + p
}

// localPath maps a remote path to the local root, dropping the first
// component when it is the prefix. Paths that would leave the root are
// refused.
func (f *fetcher) localPath(remote string) (string, error) {
	parts := strings.Split(remote, "/")
	if f.prefix != "" && parts[0] == f.prefix {
		parts = parts[1:]
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.Contains(p, "\\") {
			return "", fmt.Errorf("refusing remote path %q", remote)
		}
	}
	return filepath.Join(append([]string{f.LocalRoot}, parts...)...), nil
}

// url is the download URL of a remote path.
func (f *fetcher) url(remote string) string {
	parts := strings.Split(remote, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return f.BaseURL + strings.Join(parts, "/")
}

func (f *fetcher) logf(format string, args ...any) {
	if f.Log != nil {
		f.Log(fmt.Sprintf(format, args...))
	}
}

// loadManifest reads the local manifest, downloading it first when absent
// (unless SkipManifest).
func (f *fetcher) loadManifest(ctx context.Context) (*manifest, string, error) {
	remote := f.remote("manifest.json")
	local, err := f.localPath(remote)
	if err != nil {
		return nil, "", err
	}
	if st, err := os.Stat(local); err != nil || !st.Mode().IsRegular() {
		if f.SkipManifest {
			return nil, "", fmt.Errorf("manifest.json is required for manifest-driven shard counts but is not present locally at %s", local)
		}
		if err := f.download(ctx, remote, local, f.ManifestTimeout); err != nil {
			return nil, "", err
		}
	}
	m, err := readManifest(local)
	return m, local, err
}

// rel is the root-relative, slash-separated path of a remote path: the
// key of the manifest's sha256 map.
func (f *fetcher) rel(remote string) string {
	if f.prefix != "" {
		if r, ok := strings.CutPrefix(remote, f.prefix+"/"); ok {
			return r
		}
	}
	return remote
}

// get makes local a complete copy of remote.
func (f *fetcher) get(ctx context.Context, remote, local string) error {
	want := f.sha256[f.rel(remote)]
	st, err := os.Stat(local)
	switch {
	case err == nil && st.Mode().IsRegular() && want != "":
		// The digest decides; no need to ask the server.
		got, err := fileSHA256(local)
		if err != nil {
			return err
		}
		if got == want {
			f.logf("skip %s (complete, sha256 %s)", local, want[:12])
			return nil
		}
		f.logf("refetch %s: sha256 %s, manifest says %s", local, got, want)
	case err == nil && st.Mode().IsRegular():
		size, err := f.head(ctx, remote)
		if err != nil {
			return fmt.Errorf("%w (checking %s)", err, local)
		}
		complete := size < 0 || st.Size() == size
		if complete && isShard(local) {
			_, err := CheckShard(local)
			complete = err == nil
		}
		if complete {
			f.logf("skip %s (complete, %d bytes)", local, st.Size())
			return nil
		}
		f.logf("refetch %s: has %d bytes, server has %d", local, st.Size(), size)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return f.download(ctx, remote, local, 0)
}

func isShard(p string) bool { return strings.HasSuffix(p, ".bin") }

// newRequest is a request through f.client; limit > 0 bounds each of its
// attempts as a whole.
func (f *fetcher) newRequest(ctx context.Context, method, u string, limit time.Duration) (*retryablehttp.Request, error) {
	req, err := retryablehttp.NewRequestWithContext(withTotalLimit(withAttempts(ctx), limit), method, u, nil)
	if err != nil {
		return nil, err
	}
	// Sizes must be the stored bytes: no transparent decompression.
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", "golf-data-fetch")
	return req, nil
}

// head returns the server's size of remote (-1 when it gives none).
func (f *fetcher) head(ctx context.Context, remote string) (int64, error) {
	u := f.url(remote)
	req, err := f.newRequest(ctx, http.MethodHead, u, 0)
	if err != nil {
		return 0, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("HEAD %s: %w", u, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HEAD %s: %s", u, resp.Status)
	}
	return resp.ContentLength, nil
}

// transferError is a failure while receiving a body: the bytes so far are
// in the .part, and another attempt resumes from them.
type transferError struct{ err error }

func (e *transferError) Error() string { return e.err.Error() }
func (e *transferError) Unwrap() error { return e.err }

// download fetches remote into local via local+".part". A partial .part is
// resumed; an interrupted transfer is resumed after a backoff, up to
// Retries times; a .part the server cannot resume, or one whose digest
// fails after a resume (its old bytes may be of another version of the
// file), is discarded and fetched once more from the start. limit > 0
// bounds each attempt as a whole (the manifest's ManifestTimeout).
func (f *fetcher) download(ctx context.Context, remote, local string, limit time.Duration) error {
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	part := local + ".part"
	restarted := false
	for attempt := 0; ; attempt++ {
		restart, err := f.downloadOnce(ctx, remote, local, part, limit)
		if err == nil {
			return nil
		}
		if restart && !restarted {
			restarted = true
			if err := os.Remove(part); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		var te *transferError
		if !errors.As(err, &te) || attempt >= f.Retries || ctx.Err() != nil {
			if attempt > 0 {
				err = fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return err
		}
		wait := f.backoff(attempt)
		f.logf("retry in %s: %v", wait, err)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// downloadOnce makes one GET (retried by the client until a response
// arrives); restart reports that the .part has to be discarded.
func (f *fetcher) downloadOnce(ctx context.Context, remote, local, part string, limit time.Duration) (restart bool, err error) {
	u := f.url(remote)
	var offset int64
	if st, err := os.Stat(part); err == nil && st.Mode().IsRegular() {
		offset = st.Size()
	}
	req, err := f.newRequest(ctx, http.MethodGet, u, limit)
	if err != nil {
		return false, err
	}
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("GET %s (%s): %w", u, local, err)
	}
	defer resp.Body.Close()

	var total int64 = -1
	flags := os.O_WRONLY | os.O_CREATE
	switch {
	case resp.StatusCode == http.StatusOK:
		offset, total = 0, resp.ContentLength
		flags |= os.O_TRUNC
		f.logf("fetch %s -> %s", u, local)
	case resp.StatusCode == http.StatusPartialContent && offset > 0:
		start, t, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil || start != offset {
			return false, fmt.Errorf("GET %s (%s): bad Content-Range %q for a resume at byte %d",
				u, local, resp.Header.Get("Content-Range"), offset)
		}
		total = t
		flags |= os.O_APPEND
		f.logf("resume %s -> %s at byte %d", u, local, offset)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && offset > 0:
		if _, t, err := parseContentRange(resp.Header.Get("Content-Range")); err == nil && t == offset {
			return f.finish(u, remote, part, local, offset, t, true)
		}
		f.logf("discard %s: the server cannot resume at byte %d", part, offset)
		return true, fmt.Errorf("GET %s (%s): %s", u, local, resp.Status)
	default:
		return false, fmt.Errorf("GET %s (%s): %s", u, local, resp.Status)
	}

	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return false, err
	}
	written, copyErr := f.copy(out, resp.Body, local, offset, total)
	if err := out.Sync(); err != nil && copyErr == nil {
		copyErr = err
	}
	if err := out.Close(); err != nil && copyErr == nil {
		copyErr = err
	}
	if copyErr != nil {
		err := fmt.Errorf("GET %s (%s): %w; %d bytes kept in %s to resume", u, local, copyErr, offset+written, part)
		var te *transferError
		if errors.As(copyErr, &te) {
			err = &transferError{err}
		}
		return false, err
	}
	return f.finish(u, remote, part, local, offset+written, total, offset > 0)
}

// finish checks the downloaded .part (size against the announced total, a
// shard's header, the manifest's SHA-256) and renames it into place; a bad
// .part is removed. restart asks for one more download from the start
// when the digest fails on a resumed .part.
func (f *fetcher) finish(u, remote, part, local string, size, total int64, resumed bool) (restart bool, err error) {
	if total >= 0 && size != total {
		os.Remove(part)
		return false, fmt.Errorf("GET %s (%s): size mismatch: got %d bytes, server announced %d", u, local, size, total)
	}
	if isShard(local) {
		if _, err := CheckShard(part); err != nil {
			os.Remove(part)
			return resumed, fmt.Errorf("GET %s (%s): %w", u, local, err)
		}
	}
	if want := f.sha256[f.rel(remote)]; want != "" {
		got, err := fileSHA256(part)
		if err != nil {
			return false, err
		}
		if got != want {
			os.Remove(part)
			return resumed, fmt.Errorf("GET %s (%s): sha256 mismatch: got %s, manifest says %s", u, local, got, want)
		}
	}
	return false, os.Rename(part, local)
}

// fileSHA256 is the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copy streams body into out, reporting progress. A read error is a
// *transferError (worth resuming); a write error is not.
func (f *fetcher) copy(out io.Writer, body io.Reader, local string, offset, total int64) (int64, error) {
	if f.Progress != nil {
		f.Progress(local, offset, total)
	}
	buf := make([]byte, 1<<20)
	var written int64
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				return written, err
			}
			written += int64(n)
			if f.Progress != nil {
				f.Progress(local, offset+written, total)
			}
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			return written, &transferError{rerr}
		}
	}
}

// parseContentRange parses "bytes start-end/total" or "bytes */total"
// (start -1); total is -1 for "*".
func parseContentRange(s string) (start, total int64, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	rng, tot, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return 0, 0, fmt.Errorf("bad Content-Range %q", s)
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("bad Content-Range %q", s)
		}
	}
	if rng == "*" {
		return -1, total, nil
	}
	a, _, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, fmt.Errorf("bad Content-Range %q", s)
	}
	if start, err = strconv.ParseInt(a, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("bad Content-Range %q", s)
	}
	return start, total, nil
}

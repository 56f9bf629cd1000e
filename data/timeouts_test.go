package data

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests below stall a local server in each phase of a request, with
// limits of a fraction of a second, so that every stall is detected in
// well under a second per attempt. Their only timing assertion is that a
// whole Fetch ends before DefaultFirstByteTimeout, the shortest default
// limit: it proves that no default was waited for, not how fast the
// limits fire.

// stallGuard is a context that only ends a hung test; the limit under test
// must fire long before it.
func stallGuard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// retryLines are the "retry ..." lines among logs.
func retryLines(logs []string) []string { return filterPrefix(logs, "retry ") }

// logTo collects o.Log's lines.
func logTo(o *FetchOptions) func() []string {
	var mu sync.Mutex
	var logs []string
	o.Log = func(s string) { mu.Lock(); logs = append(logs, s); mu.Unlock() }
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), logs...) }
}

// (a) The server accepts the connection, reads the request and never
// answers: every attempt ends at the first-byte timeout (not the much
// longer idle timeout), is retried, and the error names the phase, the
// URL, the file, the limit and the attempts.
func TestFetchStallBeforeHeaders(t *testing.T) {
	h := newFakeHub(t)
	h.handle(rManifest, func(w http.ResponseWriter, r *http.Request) { stall(r) })
	ctx := stallGuard(t)
	root := t.TempDir()
	o := h.options(root, 0)
	o.FirstByteTimeout, o.IdleTimeout, o.Retries = 100*time.Millisecond, DefaultIdleTimeout, 2
	logs := logTo(&o)
	start := time.Now()
	err := Fetch(ctx, o)
	elapsed := time.Since(start)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the guard fired: the stall was not detected")

	u := o.BaseURL + rManifest
	assert.Equal(t, fmt.Sprintf("GET %s (%s): no response headers within 100ms (first-byte timeout) (after 3 attempts)",
		u, local(root, rManifest)), err.Error())
	var fb *FirstByteTimeoutError
	require.ErrorAs(t, err, &fb)
	assert.Equal(t, FirstByteTimeoutError{Limit: 100 * time.Millisecond, Awaiting: "response headers"}, *fb)
	var timeout interface{ Timeout() bool }
	assert.True(t, errors.As(err, &timeout) && timeout.Timeout(), "a timeout error")
	assert.Equal(t, 3, h.count("GET "+rManifest), "attempts: %q", h.requests)
	assert.Equal(t, []string{
		"retry GET " + u + ": no response headers within 100ms (first-byte timeout)",
		"retry GET " + u + ": no response headers within 100ms (first-byte timeout)",
	}, retryLines(logs()))
	assert.Less(t, elapsed, DefaultFirstByteTimeout, "waited a default limit")
	assert.NoFileExists(t, local(root, rManifest))

	// A complete-looking local file is checked with HEAD, under the same
	// limit.
	h.handle(rManifest, nil)
	h.handle(rVal, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			stall(r)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(h.files[rVal]))
	})
	root = t.TempDir()
	o.LocalRoot = root
	require.NoError(t, os.MkdirAll(filepath.Dir(local(root, rVal)), 0o755))
	require.NoError(t, os.WriteFile(local(root, rVal), h.files[rVal], 0o644))
	h.reset()
	start = time.Now()
	err = Fetch(ctx, o)
	elapsed = time.Since(start)
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("HEAD %s: no response headers within 100ms (first-byte timeout) (after 3 attempts) (checking %s)",
		o.BaseURL+rVal, local(root, rVal)), err.Error())
	assert.ErrorAs(t, err, &fb)
	assert.Equal(t, 3, h.count("HEAD "+rVal), "attempts: %q", h.requests)
	assert.Less(t, elapsed, DefaultFirstByteTimeout, "waited a default limit")
}

// (b) The server sends the response headers and then not one byte of
// the body: the first-byte timeout still applies (the idle timeout is
// for a body that has started), and the transfer is tried again.
func TestFetchStallAfterHeaders(t *testing.T) {
	h := newFakeHub(t)
	h.handle(rVal, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(h.files[rVal])))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		stall(r)
	})
	ctx := stallGuard(t)
	root := t.TempDir()
	o := h.options(root, 0)
	o.FirstByteTimeout, o.IdleTimeout, o.Retries = 100*time.Millisecond, DefaultIdleTimeout, 2
	logs := logTo(&o)
	start := time.Now()
	err := Fetch(ctx, o)
	elapsed := time.Since(start)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the guard fired: the stall was not detected")

	part := local(root, rVal) + ".part"
	assert.Equal(t, fmt.Sprintf("GET %s (%s): response headers but no body byte within 100ms (first-byte timeout); 0 bytes kept in %s to resume (after 3 attempts)",
		o.BaseURL+rVal, local(root, rVal), part), err.Error())
	var fb *FirstByteTimeoutError
	require.ErrorAs(t, err, &fb)
	assert.Equal(t, "body byte", fb.Awaiting)
	assert.Equal(t, 3, h.count("GET "+rVal), "attempts: %q", h.requests)
	assert.Len(t, filterPrefix(logs(), "retry in "), 2, "one retry line per retry: %q", logs())
	assert.Less(t, elapsed, DefaultFirstByteTimeout, "waited a default limit")
	assert.NoFileExists(t, local(root, rVal))
}

// (c) The body stops midway, at every attempt: the idle timeout (not the
// first-byte timeout, long past) ends each, and each retry asks to resume
// at the bytes kept.
func TestFetchStallMidBody(t *testing.T) {
	h := newFakeHub(t)
	content := h.files[rTrain0]
	half := len(content) / 2
	h.handle(rTrain0, func(w http.ResponseWriter, r *http.Request) {
		// Ignores Range: each attempt gets the first half again.
		w.Header().Set("Content-Length", fmt.Sprint(len(content)))
		w.Write(content[:half])
		w.(http.Flusher).Flush()
		stall(r)
	})
	ctx := stallGuard(t)
	root := t.TempDir()
	o := h.options(root, 1)
	o.FirstByteTimeout, o.IdleTimeout, o.Retries = DefaultFirstByteTimeout, 100*time.Millisecond, 2
	start := time.Now()
	err := Fetch(ctx, o)
	elapsed := time.Since(start)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the guard fired: the stall was not detected")

	part := local(root, rTrain0) + ".part"
	assert.Equal(t, fmt.Sprintf("GET %s (%s): no data received for 100ms (idle timeout); %d bytes kept in %s to resume (after 3 attempts)",
		o.BaseURL+rTrain0, local(root, rTrain0), half, part), err.Error())
	var idle *IdleTimeoutError
	require.ErrorAs(t, err, &idle)
	assert.Equal(t, 100*time.Millisecond, idle.Idle)
	assert.Equal(t, 3, h.count("GET "+rTrain0), "attempts: %q", h.requests)
	assert.Equal(t, 2, h.count(fmt.Sprintf("GET %s bytes=%d-", rTrain0, half)), "resumes: %q", h.requests)
	assert.Less(t, elapsed, DefaultFirstByteTimeout, "waited a default limit")
}

// The TLS handshake never completes (a TCP listener that accepts and says
// nothing): the first-byte timeout ends the attempt before a connection,
// and says so.
func TestFetchStallConnecting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var accepted atomic.Int32
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	ctx := stallGuard(t)
	root := t.TempDir()
	o := FetchOptions{
		BaseURL: "https://" + ln.Addr().String() + "/", LocalRoot: root, // the default client
		FirstByteTimeout: 100 * time.Millisecond, Retries: 1,
		RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond,
	}
	start := time.Now()
	err = Fetch(ctx, o)
	elapsed := time.Since(start)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the guard fired: the stall was not detected")
	assert.Equal(t, fmt.Sprintf("GET %sdatasets/manifest.json (%s): no connection within 100ms (first-byte timeout) (after 2 attempts)",
		o.BaseURL, filepath.Join(root, "manifest.json")), err.Error())
	var fb *FirstByteTimeoutError
	require.ErrorAs(t, err, &fb)
	assert.Equal(t, "connection", fb.Awaiting)
	assert.Eventually(t, func() bool { return accepted.Load() == 2 }, 5*time.Second, 10*time.Millisecond,
		"connections accepted: %d, want one per attempt", accepted.Load())
	assert.Less(t, elapsed, DefaultFirstByteTimeout, "waited a default limit")
}

// drip serves content one byte every gap, until done or the client goes.
func drip(w http.ResponseWriter, r *http.Request, content []byte, chunk int, gap time.Duration) {
	w.Header().Set("Content-Length", fmt.Sprint(len(content)))
	for len(content) > 0 {
		n := min(chunk, len(content))
		if _, err := w.Write(content[:n]); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		content = content[n:]
		select {
		case <-r.Context().Done():
			return
		case <-time.After(gap):
		}
	}
}

// A manifest that keeps coming, a byte at a time (so neither the
// first-byte nor the idle timeout fires), fails each attempt at the
// manifest timeout; a shard as slow is not under that limit.
func TestFetchManifestTimeout(t *testing.T) {
	h := newFakeHub(t)
	h.handle(rManifest, func(w http.ResponseWriter, r *http.Request) {
		drip(w, r, h.files[rManifest], 1, 20*time.Millisecond) // about 15 s in all
	})
	ctx := stallGuard(t)
	root := t.TempDir()
	o := h.options(root, 0)
	o.ManifestTimeout, o.Retries = 300*time.Millisecond, 1
	start := time.Now()
	err := Fetch(ctx, o)
	elapsed := time.Since(start)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the guard fired: the slow manifest was not cut")

	prefix := fmt.Sprintf("GET %s (%s): not received in full within 300ms (manifest timeout); ", o.BaseURL+rManifest, local(root, rManifest))
	assert.True(t, strings.HasPrefix(err.Error(), prefix), "%q\nwant prefix %q", err.Error(), prefix)
	assert.True(t, strings.HasSuffix(err.Error(), " bytes kept in "+local(root, rManifest)+".part to resume (after 2 attempts)"), "%q", err.Error())
	var mt *ManifestTimeoutError
	require.ErrorAs(t, err, &mt)
	assert.Equal(t, 300*time.Millisecond, mt.Limit)
	assert.Equal(t, 2, h.count("GET "+rManifest), "attempts: %q", h.requests)
	assert.Less(t, elapsed, DefaultFirstByteTimeout, "waited a default limit")

	// A shard that takes several manifest limits to arrive, in steady
	// chunks, is fine.
	h.handle(rManifest, nil)
	val := h.files[rVal]
	h.handle(rVal, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			drip(w, r, val, len(val)/8+1, 100*time.Millisecond)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(val))
	})
	root = t.TempDir()
	o.LocalRoot = root
	require.NoError(t, Fetch(ctx, o))
	h.wantFiles(t, root, rManifest, rVal, rModel, rVocab)
}

// The manifest limit is per attempt, not per redirect: a redirect that
// takes most of it leaves the rest for the redirected request (Hugging
// Face redirects files to a CDN). Each hop alone is under the limit.
func TestFetchManifestTimeoutSpansRedirects(t *testing.T) {
	h := newFakeHub(t)
	const moved = "datasets/moved/manifest.json"
	hop := 700 * time.Millisecond
	h.handle(rManifest, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(hop)
		http.Redirect(w, r, "/datasets/"+hubRepo+"/resolve/main/"+moved, http.StatusFound)
	})
	content := h.files[rManifest]
	h.handle(moved, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(content)))
		w.Write(content[:1])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(hop):
		}
		w.Write(content[1:])
	})
	ctx := stallGuard(t)
	root := t.TempDir()
	o := h.options(root, 0)
	o.ManifestTimeout, o.Retries = time.Second, 0
	err := Fetch(ctx, o)
	require.Error(t, err)
	var mt *ManifestTimeoutError
	require.ErrorAs(t, err, &mt, "%v", err)
	assert.Equal(t, 1, h.count("GET "+rManifest), "requests %q", h.requests)
	assert.Equal(t, 1, h.count("GET "+moved), "requests %q", h.requests)
}

// UnansweredLimit adds the attempts' first-byte limits and the backoff
// between them (RetryWaits): with the defaults 6 × 15 s + 1+2+4+8+16 s.
func TestUnansweredLimit(t *testing.T) {
	assert.Equal(t, 2*time.Minute+time.Second, NewFetchOptions().UnansweredLimit())
	assert.Equal(t, DefaultFirstByteTimeout, FetchOptions{}.UnansweredLimit(), "no retry")
	assert.Equal(t, 303*time.Millisecond, FetchOptions{
		Retries: 2, FirstByteTimeout: 100 * time.Millisecond, RetryWaitMin: time.Millisecond, RetryWaitMax: 4 * time.Millisecond,
	}.UnansweredLimit())
	assert.Equal(t, 3*15*time.Second+30*time.Second+30*time.Second, FetchOptions{
		Retries: 2, RetryWaitMin: 30 * time.Second, RetryWaitMax: 30 * time.Second,
	}.UnansweredLimit(), "waits capped at RetryWaitMax")
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second},
		NewFetchOptions().RetryWaits())
	assert.Empty(t, FetchOptions{}.RetryWaits())
}

// The limits' defaults and their zero values.
func TestFetchLimitDefaults(t *testing.T) {
	o := NewFetchOptions()
	assert.Equal(t, 15*time.Second, o.FirstByteTimeout)
	assert.Equal(t, 30*time.Second, o.ManifestTimeout)
	assert.Equal(t, 60*time.Second, o.IdleTimeout)
	var z FetchOptions
	z.fillDefaults()
	assert.Equal(t, [3]time.Duration{DefaultFirstByteTimeout, DefaultManifestTimeout, DefaultIdleTimeout},
		[3]time.Duration{z.FirstByteTimeout, z.ManifestTimeout, z.IdleTimeout})
}

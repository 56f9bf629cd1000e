package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIDataFetchRetries runs golf data fetch against a server that
// answers every request 503 (Retry-After: 0, so retries do not wait):
// --retries N sends N+1 requests and prints one retry line per retry,
// --retries 0 one request and none, and a negative count is refused
// naming the flag before any request.
func TestCLIDataFetchRetries(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "0")
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, c := range []struct {
		retries  string
		requests int32
	}{{"0", 1}, {"2", 3}} {
		requests.Store(0)
		out, err := runCLI(t, "data", "fetch", "--base-url", srv.URL+"/", "--root", t.TempDir(), "--retries", c.retries)
		require.Error(t, err, "--retries %s", c.retries)
		assert.Contains(t, err.Error(), "503 Service Unavailable")
		assert.Equal(t, c.requests, requests.Load(), "--retries %s: requests", c.retries)
		assert.Equal(t, int(c.requests)-1, strings.Count(out, "retry "), "--retries %s: retry lines in %q", c.retries, out)
		assert.NotContains(t, err.Error(), "after 6 attempts")
	}

	requests.Store(0)
	_, err := runCLI(t, "data", "fetch", "--base-url", srv.URL+"/", "--root", t.TempDir(), "--retries", "-1")
	require.Error(t, err)
	assert.Equal(t, "data fetch: --retries must be 0 (no retry) or more, got -1", err.Error())
	assert.Equal(t, int32(0), requests.Load())
}

// TestCLIDataFetchStall runs golf data fetch against a server that reads
// each request and never answers: --first-byte-timeout (and its old name
// --connect-timeout) ends each attempt, the retry line and the error name
// the limit, and the run ends long before the 15 s default would have
// let one attempt end.
func TestCLIDataFetchStall(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	defer srv.Close()
	u := srv.URL + "/datasets/manifest.json"
	for _, c := range []struct {
		flag, retries string
		requests      int32
		after         string
	}{{"--first-byte-timeout", "1", 2, " (after 2 attempts)"}, {"--connect-timeout", "0", 1, ""}} {
		requests.Store(0)
		root := t.TempDir()
		start := time.Now()
		out, err := runCLI(t, "data", "fetch", "--base-url", srv.URL+"/", "--remote-prefix", "datasets", "--root", root,
			c.flag, "100ms", "--retries", c.retries)
		elapsed := time.Since(start)
		require.Error(t, err, c.flag)
		assert.Equal(t, fmt.Sprintf("GET %s (%s): no response headers within 100ms (first-byte timeout)%s",
			u, filepath.Join(root, "manifest.json"), c.after), err.Error(), c.flag)
		assert.Equal(t, c.requests, requests.Load(), "%s: requests", c.flag)
		want := ""
		if c.requests > 1 {
			want = "retry GET " + u + ": no response headers within 100ms (first-byte timeout)\n"
		}
		assert.Equal(t, want, out, c.flag)
		assert.Less(t, elapsed, 15*time.Second, "%s: waited the default first-byte timeout", c.flag)
	}
}

// TestCLIDataFetchLimits: data fetch --help states each limit with its
// default and what they add up to against a server that never answers;
// a limit that is not positive is refused, naming the flags, before any
// request.
func TestCLIDataFetchLimits(t *testing.T) {
	out, err := runCLI(t, "data", "fetch", "--help")
	require.NoError(t, err)
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"--first-byte-timeout (15s)", "--manifest-timeout (30s)", "--idle-timeout (60s)", "--retries times (5)",
		"waiting 1s, 2s, 4s, 8s, 16s",
		"a server that accepts and never answers fails the fetch after about 2m1s (6 × 15s + 31s of waits)",
		"--first-byte-timeout value fail a try without a connection, response headers and first body byte this long after its start (retried) (default: 15s)",
		"--manifest-timeout value fail a try at manifest.json not complete this long after its start (retried) (default: 30s)",
		"(retried, resumed) (default: 60s)",
	} {
		assert.Contains(t, flat, want)
	}
	assert.NotContains(t, out, "--connect-timeout", "the old name is accepted, not listed")

	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer srv.Close()
	for _, flag := range []string{"--first-byte-timeout", "--manifest-timeout", "--idle-timeout", "--connect-timeout"} {
		_, err := runCLI(t, "data", "fetch", "--base-url", srv.URL+"/", "--root", t.TempDir(), flag, "0s")
		require.Error(t, err, flag)
		assert.Contains(t, err.Error(), "data fetch: --first-byte-timeout, --manifest-timeout and --idle-timeout must be positive, got ", flag)
	}
	assert.Equal(t, int32(0), requests.Load())
}

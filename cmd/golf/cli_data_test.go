package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

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

package data

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingServer answers every request 503 with Retry-After: 0 (so a retry
// does not wait) and counts the requests.
func failingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "0")
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestRetriesCount: Retries is the number of retries, so a request that
// always fails is sent Retries+1 times, and a "retry" line is logged
// before each retry that is made, never for one that is not.
func TestRetriesCount(t *testing.T) {
	for _, c := range []struct {
		retries  int
		requests int32
	}{{0, 1}, {1, 2}, {2, 3}} {
		srv, n := failingServer(t)
		var mu sync.Mutex
		var logs []string
		err := Fetch(context.Background(), FetchOptions{
			BaseURL: srv.URL + "/", LocalRoot: t.TempDir(), Client: srv.Client(),
			Retries: c.retries, RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond,
			Log: func(s string) { mu.Lock(); logs = append(logs, s); mu.Unlock() },
		})
		require.Error(t, err, "retries %d", c.retries)
		assert.Contains(t, err.Error(), "503 Service Unavailable", "retries %d", c.retries)
		assert.Equal(t, c.requests, n.Load(), "retries %d: requests sent", c.retries)
		retryLines := 0
		for _, l := range logs {
			if strings.HasPrefix(l, "retry ") {
				retryLines++
			}
		}
		assert.Equal(t, c.retries, retryLines, "retries %d: retry lines %q", c.retries, logs)
	}
}

// TestRetriesZeroValue: a FetchOptions that leaves Retries at 0 makes one
// attempt; NewFetchOptions asks for DefaultRetries.
func TestRetriesZeroValue(t *testing.T) {
	srv, n := failingServer(t)
	err := Fetch(context.Background(), FetchOptions{BaseURL: srv.URL + "/", LocalRoot: t.TempDir(), Client: srv.Client()})
	require.Error(t, err)
	assert.Equal(t, int32(1), n.Load(), "requests sent")
	assert.Equal(t, 5, NewFetchOptions().Retries)
}

// TestRetriesNegative: a negative count is refused before any request.
func TestRetriesNegative(t *testing.T) {
	srv, n := failingServer(t)
	err := Fetch(context.Background(), FetchOptions{BaseURL: srv.URL + "/", LocalRoot: t.TempDir(), Client: srv.Client(), Retries: -1})
	require.Error(t, err)
	assert.Equal(t, "retries must be 0 (no retry) or more, got -1", err.Error())
	assert.Equal(t, int32(0), n.Load(), "requests sent")
}

// TestRetriesConnectionError: a refused connection counts the same way,
// and the error says how many attempts were made only when there were
// several.
func TestRetriesConnectionError(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	base := dead.URL + "/"
	dead.Close()
	for _, c := range []struct {
		retries int
		after   string
	}{{0, ""}, {2, "(after 3 attempts)"}} {
		var logs []string
		err := Fetch(context.Background(), FetchOptions{
			BaseURL: base, LocalRoot: t.TempDir(),
			Retries: c.retries, RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond,
			Log: func(s string) { logs = append(logs, s) },
		})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "connection refused")
		if c.after == "" {
			assert.NotContains(t, err.Error(), "attempts")
		} else {
			assert.True(t, strings.HasSuffix(err.Error(), c.after), "%q", err.Error())
		}
		assert.Len(t, logs, c.retries, "one retry line per retry: %q", logs)
	}
}

package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Network defaults of Fetch.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultRetries        = 5
	DefaultRetryWaitMin   = 1 * time.Second
	DefaultRetryWaitMax   = 30 * time.Second
)

// IdleTimeoutError is the error of a request that received nothing (no
// response headers, no body bytes) for Idle.
type IdleTimeoutError struct{ Idle time.Duration }

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("no data received for %s (idle timeout)", e.Idle)
}

// Timeout marks the error as a timeout (net.Error).
func (e *IdleTimeoutError) Timeout() bool { return true }

// idleTransport fails a round trip, or the reading of its body, once
// nothing has arrived for idle: a watchdog timer, reset by every body
// read that returns bytes, cancels the request. Unlike http.Client.Timeout
// it never cuts a slow transfer that keeps making progress.
type idleTransport struct {
	base http.RoundTripper
	idle time.Duration
}

func (t *idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timeout := &IdleTimeoutError{Idle: t.idle}
	timer := time.AfterFunc(t.idle, func() { cancel(timeout) })
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		if context.Cause(ctx) == timeout {
			err = timeout
		}
		cancel(nil)
		return nil, err
	}
	resp.Body = &idleBody{body: resp.Body, timer: timer, idle: t.idle, ctx: ctx, cancel: cancel, timeout: timeout}
	return resp, nil
}

// idleBody is a response body under idleTransport's watchdog.
type idleBody struct {
	body    io.ReadCloser
	timer   *time.Timer
	idle    time.Duration
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timeout *IdleTimeoutError
	once    sync.Once
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil && err != io.EOF && context.Cause(b.ctx) == b.timeout {
		err = b.timeout
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.once.Do(func() {
		b.timer.Stop()
		b.cancel(nil)
	})
	return b.body.Close()
}

// httpClient builds Fetch's client: base (or a client whose dialer and
// TLS handshake give up after ConnectTimeout) under the idle watchdog,
// inside a retryablehttp client that retries connection errors, 429 and
// 5xx (except 501) Retries times with exponential backoff from
// RetryWaitMin to RetryWaitMax (honouring Retry-After on 429/503).
//
// Range resumes and retries agree: a retry re-sends the same request,
// Range header included, and the .part it resumes is untouched until a
// response is accepted. A transfer cut off after its response arrived is
// not retryablehttp's to retry (it returned the response); Fetch resumes
// it itself from the bytes kept in the .part.
func (o *FetchOptions) httpClient() *retryablehttp.Client {
	var hc http.Client
	if o.Client != nil {
		hc = *o.Client
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = o.ConnectTimeout
		// Sizes must be the stored bytes: no transparent decompression.
		tr.DisableCompression = true
		hc.Transport = tr
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &idleTransport{base: base, idle: o.IdleTimeout}
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &hc
	rc.Logger = nil
	rc.RetryMax = max(o.Retries, 0)
	rc.RetryWaitMin, rc.RetryWaitMax = o.RetryWaitMin, o.RetryWaitMax
	// CheckRetry runs after every attempt, the last one included: the
	// retry line is logged only when the client will in fact try again,
	// which the attempt count in the request's context tells.
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		retry, cerr := retryablehttp.DefaultRetryPolicy(ctx, resp, err)
		n, counted := ctx.Value(attemptsKey{}).(*int)
		if counted {
			*n++
		}
		if retry && o.Log != nil && counted && *n <= rc.RetryMax {
			why := ""
			if err != nil {
				why = unwrapURLError(err).Error()
			} else {
				why = resp.Status
			}
			o.Log(fmt.Sprintf("retry %s %s: %s", resp2method(resp, err), redact(resp, err), why))
		}
		return retry, cerr
	}
	// Give the last response back (its status makes the clearest error)
	// or the last error, unwrapped of net/url's `Get "URL":` prefix: the
	// caller names the URL once.
	rc.ErrorHandler = func(resp *http.Response, err error, tries int) (*http.Response, error) {
		if resp != nil {
			return resp, nil
		}
		if tries == 1 {
			return nil, unwrapURLError(err)
		}
		return nil, fmt.Errorf("%w (after %d attempts)", unwrapURLError(err), tries)
	}
	return rc
}

// attemptsKey is the context key of a request's attempt count (an *int
// that CheckRetry increments), set by withAttempts.
type attemptsKey struct{}

// withAttempts gives a request's context a fresh attempt count; every
// request made through httpClient's client must carry one.
func withAttempts(ctx context.Context) context.Context {
	return context.WithValue(ctx, attemptsKey{}, new(int))
}

// unwrapURLError is the cause inside a *url.Error.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// resp2method and redact name the request behind a retry for the log.
func resp2method(resp *http.Response, err error) string {
	if resp != nil && resp.Request != nil {
		return resp.Request.Method
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return strings.ToUpper(ue.Op) // net/url's "Get"
	}
	return "request"
}

func redact(resp *http.Response, err error) string {
	if resp != nil && resp.Request != nil {
		return resp.Request.URL.Redacted()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.URL
	}
	return ""
}

// backoff is the wait before retry attempt (0-based) of an interrupted
// transfer: retryablehttp's exponential backoff.
func (o *FetchOptions) backoff(attempt int) time.Duration {
	return retryablehttp.DefaultBackoff(o.RetryWaitMin, o.RetryWaitMax, attempt, nil)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

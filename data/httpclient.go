package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Network defaults of Fetch. Each limit bounds one attempt; a failed
// attempt is retried (Retries) after a backoff.
//
// FirstByteTimeout: a server that answers at all sends its headers and
// first bytes in well under a second, and 15 s still covers a slow DNS
// lookup and TLS handshake on a bad link; pip's socket timeout defaults to
// 15 s (with 5 retries) and huggingface_hub's, behind the reference
// downloader's hf_hub_download, to 10 s.
//
// ManifestTimeout: manifest.json is a few KB of JSON (tens with digests);
// 30 s is twice the first-byte limit, enough for it at 1 KB/s, and a
// manifest that takes longer is better tried again.
//
// IdleTimeout: a shard of hundreds of MB can pause under congestion or a
// CDN hiccup; 60 s without a byte tolerates that and still fails a dead
// transfer, which is then resumed from its .part.
const (
	DefaultFirstByteTimeout = 15 * time.Second
	DefaultManifestTimeout  = 30 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	DefaultRetries          = 5
	DefaultRetryWaitMin     = 1 * time.Second
	DefaultRetryWaitMax     = 30 * time.Second
)

// FirstByteTimeoutError is the error of a request (one attempt, one
// redirect) that had not received its first body byte Limit after it
// started: Awaiting is what was still missing ("connection", "response
// headers" or "body byte"). Under a Client whose transport does not
// report GotConn to net/http/httptrace, "response headers" reads
// "connection".
type FirstByteTimeoutError struct {
	Limit    time.Duration
	Awaiting string
}

func (e *FirstByteTimeoutError) Error() string {
	if e.Awaiting == awaitingBody {
		return fmt.Sprintf("response headers but no body byte within %s (first-byte timeout)", e.Limit)
	}
	return fmt.Sprintf("no %s within %s (first-byte timeout)", e.Awaiting, e.Limit)
}

// Timeout reports that the error is a timeout.
func (e *FirstByteTimeoutError) Timeout() bool { return true }

// What a FirstByteTimeoutError was still waiting for.
const (
	awaitingConnection = "connection"
	awaitingHeaders    = "response headers"
	awaitingBody       = "body byte"
)

// IdleTimeoutError is the error of a transfer whose body, after its first
// byte, received nothing for Idle.
type IdleTimeoutError struct{ Idle time.Duration }

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("no data received for %s (idle timeout)", e.Idle)
}

// Timeout reports that the error is a timeout.
func (e *IdleTimeoutError) Timeout() bool { return true }

// ManifestTimeoutError is the error of an attempt at manifest.json that
// was not complete, redirects included, within Limit.
type ManifestTimeoutError struct{ Limit time.Duration }

func (e *ManifestTimeoutError) Error() string {
	return fmt.Sprintf("not received in full within %s (manifest timeout)", e.Limit)
}

// Timeout reports that the error is a timeout.
func (e *ManifestTimeoutError) Timeout() bool { return true }

// UnansweredLimit is about the longest Fetch waits on a server that
// accepts connections (or not even that) and never answers: Retries+1
// attempts of FirstByteTimeout each and the RetryWaits between them. With
// the defaults, 6 × 15 s + (1+2+4+8+16) s = 2m1s. (A server that answers
// 429 or 503 with a long Retry-After is waited for as it asks.)
func (o FetchOptions) UnansweredLimit() time.Duration {
	o.fillDefaults()
	d := time.Duration(max(o.Retries, 0)+1) * o.FirstByteTimeout
	for _, w := range o.RetryWaits() {
		d += w
	}
	return d
}

// RetryWaits are the backoff waits before each of the Retries retries
// when the server names none (Retry-After): RetryWaitMin, doubling, up
// to RetryWaitMax.
func (o FetchOptions) RetryWaits() []time.Duration {
	o.fillDefaults()
	waits := make([]time.Duration, max(o.Retries, 0))
	for i := range waits {
		waits[i] = o.backoff(i)
	}
	return waits
}

// watchTransport puts every round trip under a watchdog: it fails unless
// a connection, the response headers and the first body byte have come
// within firstByte of its start, then whenever the body receives nothing
// for idle (a timer reset by every read that returns bytes; unlike
// http.Client.Timeout it never cuts a slow transfer that keeps making
// progress), and, for a request whose context carries a *totalLimit, when
// the attempt is not complete by the limit's deadline.
type watchTransport struct {
	base            http.RoundTripper
	firstByte, idle time.Duration
}

// totalLimit bounds each attempt of a request as a whole: the deadline is
// set at the first round trip of an attempt and kept by its redirects.
type totalLimit struct {
	limit    time.Duration
	deadline time.Time
}

type totalLimitKey struct{}

// withTotalLimit gives a request's context a total limit per attempt
// (none when limit is 0).
func withTotalLimit(ctx context.Context, limit time.Duration) context.Context {
	if limit <= 0 {
		return ctx
	}
	return context.WithValue(ctx, totalLimitKey{}, &totalLimit{limit: limit})
}

// Stages of a watched round trip.
const (
	stageConnecting = iota // dialing, TLS handshake
	stageConnected         // request sent, no response headers yet
	stageHeaders           // response headers, no body byte yet
	stageBody              // body bytes arriving: the idle timeout applies
)

// watch is one round trip's watchdog.
type watch struct {
	firstByte, idle time.Duration
	cancel          context.CancelCauseFunc

	mu    sync.Mutex
	stage int
	timer *time.Timer // first byte, then idle
	total *time.Timer // nil without a total limit
	cause error       // the limit that cancelled the round trip, if one did
}

func (w *watch) fire() {
	w.mu.Lock()
	var err error
	switch w.stage {
	case stageConnecting:
		err = &FirstByteTimeoutError{Limit: w.firstByte, Awaiting: awaitingConnection}
	case stageConnected:
		err = &FirstByteTimeoutError{Limit: w.firstByte, Awaiting: awaitingHeaders}
	case stageHeaders:
		err = &FirstByteTimeoutError{Limit: w.firstByte, Awaiting: awaitingBody}
	default:
		err = &IdleTimeoutError{Idle: w.idle}
	}
	w.expire(err)
}

// expire records err as the cause, unless another limit came first, and
// cancels the round trip; w.mu is held and released.
func (w *watch) expire(err error) {
	if w.cause == nil {
		w.cause = err
	}
	w.mu.Unlock()
	w.cancel(err)
}

// reached moves the watch to stage, once no limit has expired yet; a
// body byte restarts the timer as the idle timeout.
func (w *watch) reached(stage int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cause != nil || stage < w.stage {
		return
	}
	if stage == stageBody {
		if !w.timer.Stop() {
			return // it is firing: that limit stands
		}
		w.timer.Reset(w.idle)
	}
	w.stage = stage
}

// expired is the limit that cancelled the round trip, or nil.
func (w *watch) expired() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cause
}

func (w *watch) stop() {
	w.timer.Stop()
	if w.total != nil {
		w.total.Stop()
	}
	w.cancel(nil)
}

func (t *watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watch{firstByte: t.firstByte, idle: t.idle, cancel: cancel}
	w.mu.Lock()
	w.timer = time.AfterFunc(t.firstByte, w.fire)
	if lim, ok := req.Context().Value(totalLimitKey{}).(*totalLimit); ok {
		if req.Response == nil { // not a redirect: a new attempt
			lim.deadline = time.Now().Add(lim.limit)
		}
		limit := lim.limit
		w.total = time.AfterFunc(time.Until(lim.deadline), func() {
			w.mu.Lock()
			w.expire(&ManifestTimeoutError{Limit: limit})
		})
	}
	w.mu.Unlock()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { w.reached(stageConnected) },
	})
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		w.stop()
		if cause := w.expired(); cause != nil {
			err = cause
		}
		return nil, err
	}
	w.reached(stageHeaders)
	resp.Body = &watchedBody{body: resp.Body, w: w}
	return resp, nil
}

// watchedBody is a response body under its round trip's watch.
type watchedBody struct {
	body io.ReadCloser
	w    *watch
	once sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.w.reached(stageBody)
	}
	if err != nil && err != io.EOF {
		if cause := b.w.expired(); cause != nil {
			err = cause
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.once.Do(b.w.stop)
	return b.body.Close()
}

// httpClient builds Fetch's client: base (or a client whose dialer and
// TLS handshake give up a second after FirstByteTimeout, so that the
// watchdog's clearer error comes first) under watchTransport, inside a
// retryablehttp client that retries connection errors and timeouts
// before a response, 429 and 5xx (except 501) Retries times with
// exponential backoff from RetryWaitMin to RetryWaitMax (honouring
// Retry-After on 429/503).
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
		connect := o.FirstByteTimeout + time.Second
		tr.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = connect
		// Sizes must be the stored bytes: no transparent decompression.
		tr.DisableCompression = true
		hc.Transport = tr
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &watchTransport{base: base, firstByte: o.FirstByteTimeout, idle: o.IdleTimeout}
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

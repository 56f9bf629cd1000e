package dist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults of Options.
const (
	DefaultJoinTimeout = 5 * time.Minute
	DefaultHeartbeat   = 2 * time.Second
	DefaultPeerTimeout = 20 * time.Second
)

// Options tune a Group. Zero fields take the defaults.
type Options struct {
	// Timeout bounds the rendezvous (DefaultJoinTimeout).
	Timeout time.Duration
	// Heartbeat is how often a rank sends a heartbeat on each connection
	// (DefaultHeartbeat).
	Heartbeat time.Duration
	// PeerTimeout is how long a connection may stay silent before its peer
	// is lost (DefaultPeerTimeout); it should be several Heartbeats.
	PeerTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultJoinTimeout
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.PeerTimeout <= 0 {
		o.PeerTimeout = DefaultPeerTimeout
	}
	return o
}

// handshakeTimeout bounds reading a hello from a connection rank 0 accepted,
// so that a stray connection does not hold a slot.
const handshakeTimeout = 5 * time.Second

// abortTimeout bounds each write of Abort, Close's bye and a relay.
const abortTimeout = time.Second

// lingerTimeout is how long Close waits for a peer to close its side after
// the bye.
const lingerTimeout = 2 * time.Second

// FailureError is a rank's failure as Failed and a failed group's calls
// report it.
type FailureError struct {
	Rank    int    // the rank that failed or vanished
	Reason  string // its Abort's reason, or what became of its connection
	Aborted bool   // the rank called Abort; otherwise its connection was lost
	Relayed bool   // rank 0 saw it and told this rank
}

func (e *FailureError) Error() string {
	via := ""
	if e.Relayed {
		via = " (reported by rank 0)"
	}
	if e.Aborted {
		return fmt.Sprintf("dist: rank %d failed%s: %s", e.Rank, via, e.Reason)
	}
	return fmt.Sprintf("dist: lost rank %d%s: %s", e.Rank, via, e.Reason)
}

// ErrClosed is returned by a collective on a group that Close has closed.
var ErrClosed = errors.New("dist: the group is closed")

// Group is the rendezvous and the control channel among the ranks of a job.
// Its methods are safe to call from several goroutines; collectives run one
// at a time.
type Group struct {
	w   World
	opt Options

	peers []*peer // rank 0: by rank (nil at 0); others: peers[0] only

	mu      sync.Mutex
	err     error
	failing bool // fail has begun
	closed  bool
	failed  chan error
	broken  chan struct{} // closed on the first failure
	quit    chan struct{} // closed by Close

	collMu sync.Mutex
	seq    uint64

	wg sync.WaitGroup
}

type peer struct {
	rank  int
	conn  net.Conn
	wmu   sync.Mutex
	inbox chan coll
	bye   atomic.Bool
	gone  chan struct{} // closed when its reader has returned
}

func (p *peer) send(typ byte, body []byte, timeout time.Duration) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.conn.SetWriteDeadline(time.Now().Add(timeout))
	return writeFrame(p.conn, typ, body)
}

// Join connects w's rank to the others: rank 0 listens at
// MasterAddr:MasterPort, every other rank dials it (retrying until timeout)
// and sends a hello, and once all have arrived rank 0 sends each the
// payload. It returns the group and the payload every rank got (rank 0's
// payload; the argument is ignored elsewhere). A World of one rank gives a
// group without connections whose collectives return the rank's own
// values. A timeout ≤ 0 means DefaultJoinTimeout; ctx's cancellation ends
// the rendezvous too.
//
// Errors: on rank 0 "dist: rendezvous at ADDR:PORT: ranks 2, 3 of 4 did not
// arrive within 30s", on another rank "dist: rank 3 could not reach rank 0
// at ADDR:PORT within 30s: <last dial error>", a refusal with rank 0's
// reason, and a failure to listen naming the address.
func Join(ctx context.Context, w World, payload []byte, timeout time.Duration) (*Group, []byte, error) {
	return JoinWith(ctx, w, payload, Options{Timeout: timeout})
}

// JoinWith is Join with all of Options.
func JoinWith(ctx context.Context, w World, payload []byte, opt Options) (*Group, []byte, error) {
	opt = opt.withDefaults()
	if err := w.Validate(); err != nil {
		return nil, nil, err
	}
	g := &Group{w: w, opt: opt, failed: make(chan error, 1), broken: make(chan struct{}), quit: make(chan struct{})}
	if w.Size == 1 {
		return g, append([]byte(nil), payload...), nil
	}
	var got []byte
	var err error
	if w.Rank == 0 {
		got, err = g.join0(ctx, payload)
	} else {
		got, err = g.joinN(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	for _, p := range g.peers {
		if p == nil {
			continue
		}
		g.wg.Add(2)
		go g.read(p)
		go g.heartbeat(p)
	}
	return g, got, nil
}

func keepAlive() net.KeepAliveConfig {
	return net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 5 * time.Second, Count: 3}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func rankList(ranks []int) string {
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = strconv.Itoa(r)
	}
	if len(ranks) == 1 {
		return "rank " + s[0]
	}
	return "ranks " + strings.Join(s, ", ")
}

type arrival struct {
	conn net.Conn
	h    hello
}

func (g *Group) join0(ctx context.Context, payload []byte) ([]byte, error) {
	w, opt := g.w, g.opt
	addr := w.Addr()
	listen := net.JoinHostPort("", strconv.Itoa(w.MasterPort))
	if isLoopback(w.MasterAddr) {
		listen = addr
	}
	lc := net.ListenConfig{KeepAliveConfig: keepAlive()}
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("dist: rank 0 could not listen at %s for the rendezvous: %w", addr, err)
	}
	defer ln.Close()
	deadline := time.Now().Add(opt.Timeout)
	arrivals := make(chan arrival)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				hd := time.Now().Add(handshakeTimeout)
				if hd.After(deadline) {
					hd = deadline
				}
				c.SetDeadline(hd)
				m, err := readFrame(c)
				if err != nil || m.typ != msgHello {
					c.Close()
					return
				}
				h, err := decodeHello(m.body)
				if err != nil {
					c.Close()
					return
				}
				select {
				case arrivals <- arrival{c, h}:
				case <-stop:
					c.Close()
				}
			}()
		}
	}()
	joined := make([]net.Conn, w.Size)
	var notes []string
	count := 0
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	fail := func(err error) ([]byte, error) {
		for _, c := range joined {
			if c != nil {
				c.SetWriteDeadline(time.Now().Add(abortTimeout))
				writeFrame(c, msgRefuse, encodeString(err.Error()))
				c.Close()
			}
		}
		return nil, err
	}
	missing := func() string {
		var m []int
		for r := 1; r < w.Size; r++ {
			if joined[r] == nil {
				m = append(m, r)
			}
		}
		return fmt.Sprintf("%s of %d", rankList(m), w.Size)
	}
	refusals := func() string {
		if len(notes) == 0 {
			return ""
		}
		return " (" + strings.Join(notes, "; ") + ")"
	}
	for count < w.Size-1 {
		select {
		case a := <-arrivals:
			h := a.h
			var reason string
			switch {
			case h.version != ProtocolVersion:
				reason = fmt.Sprintf("protocol version %d, rank 0 speaks %d", h.version, ProtocolVersion)
			case h.job != w.JobID:
				reason = fmt.Sprintf("job id %q is not rank 0's job %q (another job on this port?)", h.job, w.JobID)
			case h.size != w.Size:
				reason = fmt.Sprintf("world size %d is not rank 0's %d", h.size, w.Size)
			case h.rank < 1 || h.rank >= w.Size:
				reason = fmt.Sprintf("rank %d is out of range 1..%d", h.rank, w.Size-1)
			case joined[h.rank] != nil:
				reason = fmt.Sprintf("rank %d has already joined from %s", h.rank, joined[h.rank].RemoteAddr())
			}
			if reason != "" {
				notes = append(notes, fmt.Sprintf("refused rank %d from %s: %s", h.rank, a.conn.RemoteAddr(), reason))
				a.conn.SetWriteDeadline(time.Now().Add(abortTimeout))
				writeFrame(a.conn, msgRefuse, encodeString(reason))
				a.conn.Close()
				continue
			}
			joined[h.rank] = a.conn
			count++
		case <-timer.C:
			return fail(fmt.Errorf("dist: rendezvous at %s: %s did not arrive within %v%s", addr, missing(), opt.Timeout, refusals()))
		case <-ctx.Done():
			return fail(fmt.Errorf("dist: rendezvous at %s cancelled while %s had not arrived%s: %w", addr, missing(), refusals(), ctx.Err()))
		}
	}
	ln.Close()
	g.peers = make([]*peer, w.Size)
	for r := 1; r < w.Size; r++ {
		c := joined[r]
		c.SetDeadline(time.Time{})
		g.peers[r] = newPeer(r, c)
	}
	for r := 1; r < w.Size; r++ {
		if err := g.peers[r].send(msgWelcome, payload, opt.PeerTimeout); err != nil {
			for _, p := range g.peers[1:] {
				p.conn.Close()
			}
			return nil, fmt.Errorf("dist: rendezvous at %s: sending rank %d the payload: %w", addr, r, err)
		}
	}
	return append([]byte(nil), payload...), nil
}

func newPeer(rank int, c net.Conn) *peer {
	return &peer{rank: rank, conn: c, inbox: make(chan coll, 4), gone: make(chan struct{})}
}

func (g *Group) joinN(ctx context.Context) ([]byte, error) {
	w, opt := g.w, g.opt
	addr := w.Addr()
	deadline := time.Now().Add(opt.Timeout)
	d := net.Dialer{KeepAliveConfig: keepAlive()}
	backoff := 50 * time.Millisecond
	lastErr := errors.New("no connection attempt finished")
	hi := hello{version: ProtocolVersion, rank: w.Rank, size: w.Size, job: w.JobID}.encode()
	for {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("dist: rank %d: rendezvous with rank 0 at %s cancelled: %w", w.Rank, addr, ctx.Err())
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			break
		}
		c, err := g.attempt(ctx, &d, addr, min(remaining, 5*time.Second), deadline, hi)
		if c != nil {
			return c.payload, nil
		}
		var refused refusedError
		if errors.As(err, &refused) {
			return nil, fmt.Errorf("dist: rank %d: rank 0 at %s refused it: %s", w.Rank, addr, string(refused))
		}
		var stuck stuckError
		if errors.As(err, &stuck) {
			return nil, fmt.Errorf("dist: rank %d reached rank 0 at %s but the rendezvous did not complete within %v", w.Rank, addr, opt.Timeout)
		}
		lastErr = err
		t := time.NewTimer(min(backoff, max(time.Until(deadline), 0)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
	return nil, fmt.Errorf("dist: rank %d could not reach rank 0 at %s within %v: %v", w.Rank, addr, opt.Timeout, lastErr)
}

type refusedError string

func (e refusedError) Error() string { return string(e) }

type stuckError struct{}

func (stuckError) Error() string { return "rendezvous incomplete" }

type welcome struct{ payload []byte }

// attempt dials rank 0 once and waits for its answer to the hello.
func (g *Group) attempt(ctx context.Context, d *net.Dialer, addr string, dialTimeout time.Duration, deadline time.Time, hi []byte) (*welcome, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	c, err := d.DialContext(dctx, "tcp", addr)
	cancel()
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	c.SetDeadline(deadline)
	if err := writeFrame(c, msgHello, hi); err != nil {
		c.Close()
		return nil, err
	}
	m, err := readFrame(c)
	if err != nil {
		c.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil && !time.Now().Before(deadline) {
			return nil, stuckError{}
		}
		return nil, fmt.Errorf("rank 0 closed the connection before the rendezvous completed (%v)", err)
	}
	switch m.typ {
	case msgWelcome:
		if !stop() {
			c.Close()
			return nil, ctx.Err()
		}
		c.SetDeadline(time.Time{})
		g.peers = []*peer{newPeer(0, c)}
		return &welcome{payload: m.body}, nil
	case msgRefuse:
		c.Close()
		reason, _ := decodeString(m.body)
		return nil, refusedError(reason)
	}
	c.Close()
	return nil, fmt.Errorf("rank 0 answered the hello with message type %d", m.typ)
}

// World is the World the group was joined with.
func (g *Group) World() World { return g.w }

// Failed delivers, once, the group's first failure, a *FailureError: a
// rank's Abort (this rank's included), a connection lost (on rank 0 the
// peer's, on other ranks rank 0's) or rank 0's report of another rank's.
// (Ranks that disagree about a collective give rank 0 a plain error naming
// both, which reaches the others as rank 0's failure.) Close does not
// count.
func (g *Group) Failed() <-chan error { return g.failed }

// Err is the group's first failure, or nil.
func (g *Group) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

func (g *Group) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// fail records the group's first failure; on rank 0, relay sends it to
// every other rank but the one it is about, before the failure is told
// here (a trainer may exit as soon as it hears of it).
func (g *Group) fail(err error, relay bool) {
	g.mu.Lock()
	if g.failing || g.closed {
		g.mu.Unlock()
		return
	}
	g.failing = true
	g.mu.Unlock()
	if relay && g.w.Rank == 0 {
		a := abort{origin: 0, reason: strings.TrimPrefix(err.Error(), "dist: ")}
		var fe *FailureError
		if errors.As(err, &fe) {
			a = abort{origin: fe.Rank, lost: !fe.Aborted, reason: fe.Reason}
		}
		g.broadcast(msgAbort, a.encode(), a.origin)
	}
	g.mu.Lock()
	g.err = err
	close(g.broken)
	g.failed <- err
	g.mu.Unlock()
}

// broadcast sends a message to every peer but skip, at once, waiting at
// most abortTimeout.
func (g *Group) broadcast(typ byte, body []byte, skip int) {
	var wg sync.WaitGroup
	for _, p := range g.peers {
		if p == nil || p.rank == skip || p.bye.Load() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.send(typ, body, abortTimeout)
		}()
	}
	wg.Wait()
}

func describe(err error, silent time.Duration) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("nothing heard from it for %v (host frozen, gone or unreachable)", silent)
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "its connection closed (process ended?)"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "its connection closed mid-message"
	}
	return "its connection failed: " + err.Error()
}

// read runs for each connection, dispatching what arrives on it.
func (g *Group) read(p *peer) {
	defer g.wg.Done()
	defer close(p.gone)
	for {
		p.conn.SetReadDeadline(time.Now().Add(g.opt.PeerTimeout))
		m, err := readFrame(p.conn)
		if err != nil {
			if p.bye.Load() || g.isClosed() {
				p.conn.Close()
				return
			}
			g.fail(&FailureError{Rank: p.rank, Reason: describe(err, g.opt.PeerTimeout)}, true)
			return
		}
		switch m.typ {
		case msgPing:
		case msgColl, msgResult:
			if (m.typ == msgColl) != (g.w.Rank == 0) {
				g.fail(&FailureError{Rank: p.rank, Reason: fmt.Sprintf("protocol error: unexpected message type %d", m.typ)}, true)
				return
			}
			c, err := decodeColl(m.body)
			if err != nil {
				g.fail(&FailureError{Rank: p.rank, Reason: "protocol error: " + err.Error()}, true)
				return
			}
			select {
			case p.inbox <- c:
			case <-g.quit:
				return
			case <-g.broken:
				return
			}
		case msgAbort:
			a, err := decodeAbort(m.body)
			if err != nil {
				g.fail(&FailureError{Rank: p.rank, Reason: "protocol error: " + err.Error()}, true)
				return
			}
			g.fail(&FailureError{Rank: a.origin, Reason: a.reason, Aborted: !a.lost, Relayed: a.origin != p.rank}, true)
		case msgBye:
			p.bye.Store(true)
			p.wmu.Lock()
			if tc, ok := p.conn.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			p.wmu.Unlock()
		default:
			g.fail(&FailureError{Rank: p.rank, Reason: fmt.Sprintf("protocol error: unknown message type %d", m.typ)}, true)
			return
		}
	}
}

func (g *Group) heartbeat(p *peer) {
	defer g.wg.Done()
	t := time.NewTicker(g.opt.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-g.quit:
			return
		case <-p.gone:
			return
		case <-t.C:
			if !p.bye.Load() {
				p.send(msgPing, nil, g.opt.PeerTimeout)
			}
		}
	}
}

// Abort tells every rank that this rank failed, for reason, best effort and
// within about a second; Failed and the group's calls on every rank then
// report it (on this rank too, where nothing failed first).
func (g *Group) Abort(reason string) {
	if g.isClosed() {
		return
	}
	g.broadcast(msgAbort, abort{origin: g.w.Rank, reason: reason}.encode(), -1)
	g.fail(&FailureError{Rank: g.w.Rank, Reason: reason, Aborted: true}, false)
}

// Close leaves the group in order: it says bye to its peers, so that they
// do not take this rank's going for a failure, and closes the connections.
// A collective already waiting returns ErrClosed.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.quit)
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range g.peers {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.wmu.Lock()
			p.conn.SetWriteDeadline(time.Now().Add(abortTimeout))
			writeFrame(p.conn, msgBye, nil)
			if tc, ok := p.conn.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			p.wmu.Unlock()
			t := time.NewTimer(lingerTimeout)
			select {
			case <-p.gone:
			case <-t.C:
			}
			t.Stop()
			p.conn.Close()
		}()
	}
	wg.Wait()
	g.wg.Wait()
	return nil
}

// Agree is the per-step agreement: every rank calls it once at each step
// boundary with its own answers, and every rank gets the same reduction,
// anyStop the OR of all stops and maxValue the MAX of all values (NaN if
// any is NaN). Ranks at different steps fail the group.
func (g *Group) Agree(step int, stop bool, value float64) (anyStop bool, maxValue float64, err error) {
	s := 0.0
	if stop {
		s = 1
	}
	v, err := g.AgreeMax(step, []float64{s, value})
	if err != nil {
		return false, 0, err
	}
	return v[0] != 0, v[1], nil
}

// AgreeMax is Agree for any number of answers: every rank gets the
// elementwise MAX of every rank's values (a flag passed as 0 or 1 comes
// back as the OR), in one round trip; ranks at different steps fail the
// group.
func (g *Group) AgreeMax(step int, values []float64) ([]float64, error) {
	return g.collective(collAgree, int64(step), values)
}

// AllReduceMax returns on every rank the elementwise maximum of every
// rank's values (NaN if any is NaN); every rank passes as many.
func (g *Group) AllReduceMax(values []float64) ([]float64, error) {
	return g.collective(collMax, 0, values)
}

// AllReduceSum returns on every rank the elementwise sum of every rank's
// values, added in rank order (((v0 + v1) + v2) + ...), so the same bits
// on every rank and every run.
func (g *Group) AllReduceSum(values []float64) ([]float64, error) {
	return g.collective(collSum, 0, values)
}

// SumFloat64 is AllReduceSum.
func (g *Group) SumFloat64(values []float64) ([]float64, error) { return g.AllReduceSum(values) }

// MaxFloat64 is AllReduceMax.
func (g *Group) MaxFloat64(values []float64) ([]float64, error) { return g.AllReduceMax(values) }

// Barrier returns once every rank has called it.
func (g *Group) Barrier() error {
	_, err := g.collective(collBarrier, 0, nil)
	return err
}

func (g *Group) state() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err
	}
	if g.closed {
		return ErrClosed
	}
	return nil
}

func combine(kind byte, acc, v []float64) {
	for i := range acc {
		switch kind {
		case collSum:
			acc[i] += v[i]
		default:
			acc[i] = math.Max(acc[i], v[i])
		}
	}
}

func describeColl(kind byte, tag int64, n int) string {
	if kind == collAgree {
		return fmt.Sprintf("Agree at step %d", tag)
	}
	if kind == collBarrier {
		return "Barrier"
	}
	return fmt.Sprintf("%s of %d values", collName(kind), n)
}

func (g *Group) collective(kind byte, tag int64, values []float64) ([]float64, error) {
	g.collMu.Lock()
	defer g.collMu.Unlock()
	if err := g.state(); err != nil {
		return nil, err
	}
	acc := append([]float64(nil), values...)
	if g.w.Size == 1 {
		return acc, nil
	}
	g.seq++
	c := coll{seq: g.seq, kind: kind, tag: tag, values: values}
	what := describeColl(kind, tag, len(values))
	if g.w.Rank != 0 {
		p := g.peers[0]
		if err := p.send(msgColl, c.encode(), g.opt.PeerTimeout); err != nil {
			if e := g.state(); e != nil {
				return nil, e
			}
			err = &FailureError{Rank: 0, Reason: "sending it " + what + ": " + err.Error()}
			g.fail(err, false)
			return nil, err
		}
		res, err := g.await(p, what)
		if err != nil {
			return nil, err
		}
		if res.seq != c.seq || res.kind != kind || len(res.values) != len(values) {
			err := fmt.Errorf("dist: rank 0 answered %s with %s (collective #%d, not #%d)",
				what, describeColl(res.kind, res.tag, len(res.values)), res.seq, c.seq)
			g.fail(err, false)
			return nil, err
		}
		return res.values, nil
	}
	for r := 1; r < g.w.Size; r++ {
		m, err := g.await(g.peers[r], what)
		if err != nil {
			return nil, err
		}
		if m.seq != c.seq || m.kind != kind || m.tag != tag || len(m.values) != len(values) {
			err := fmt.Errorf("dist: ranks disagree at collective #%d: rank 0 called %s, rank %d %s (collective #%d)",
				c.seq, what, r, describeColl(m.kind, m.tag, len(m.values)), m.seq)
			g.fail(err, true)
			return nil, err
		}
		combine(kind, acc, m.values)
	}
	res := coll{seq: c.seq, kind: kind, tag: tag, values: acc}.encode()
	for _, p := range g.peers[1:] {
		p.send(msgResult, res, g.opt.PeerTimeout)
	}
	return acc, nil
}

// await waits for p's message of the current collective.
func (g *Group) await(p *peer, what string) (coll, error) {
	select {
	case m := <-p.inbox:
		return m, nil
	case <-g.broken:
	case <-p.gone:
	case <-g.quit:
	}
	select {
	case m := <-p.inbox:
		return m, nil
	default:
	}
	if err := g.state(); err != nil {
		return coll{}, err
	}
	// p's reader ended without a failure: it said bye.
	err := &FailureError{Rank: p.rank, Reason: "it closed the group while rank " + strconv.Itoa(g.w.Rank) + " waited for its " + what}
	g.fail(err, true)
	return coll{}, err
}

package metal

import (
	"fmt"
)

// goRuntime is the part of a Runtime that lives in Go memory: the
// emulated runtime (runtime_emu.go, kernels run by internal/kemu/msl) and the dry
// runtime (nothing runs; dispatches are only costed). It models a GPU that
// is infinitely slow: a dispatch is validated as the darwin runtime
// validates it (encodeDispatch) and recorded in the open command buffer;
// the command buffer's dispatches run only when the host waits for it
// (Wait, Sync, the in-flight limit). So a host write into a buffer that
// queued work still reads, or a host read of a result before waiting for
// it, gives wrong numbers here exactly as it would on a GPU running behind.
type goRuntime struct {
	caps       Caps
	s          *stream
	maxThreads func(name string) int
	pipes      map[string]*goPipeline
	lookup     func(name string) (kernel any, err error)
	// fault, when set, fails attempt n (from 1) at creating a pipeline
	// with its error (EmuConfig.PipelineFault).
	fault func(name string, attempt int) error
	exec  func(kernel any, grid, group [3]int, bufs [][]byte) error // nil: run nothing
	alloc func(n int) []byte

	words   []uint64 // scratch for encodeDispatch's validation
	arena   []byte
	open    []recorded   // dispatches of the open command buffer
	queue   [][]recorded // committed command buffers not yet run, oldest first
	trace   []traced     // every dispatch, when tracing
	tracing bool

	// failNext makes the next command buffer to complete fail with this
	// NSError description, domain and code (tests of the error path).
	failNext *[3]any
	closed   bool
}

// recorded is one encoded dispatch of a goRuntime.
type recorded struct {
	p           *goPipeline
	grid, group [3]int
	bufs        [][]byte // the bound ranges and copies of the inline bytes
}

// traced is one dispatch as the predicted-time model sees it.
type traced struct {
	info   *kernelInfo
	cost   Cost
	known  bool   // cost from the kernel's formula (not bound bytes)
	serial uint64 // its command buffer
}

type goBuffer struct {
	b  []byte
	rt *goRuntime
}

func (b *goBuffer) Len() int      { return len(b.b) }
func (b *goBuffer) Bytes() []byte { return b.b }

type goPipeline struct {
	name       string
	kernel     any
	maxThreads int
	info       kernelInfo
}

func (p *goPipeline) Name() string    { return p.name }
func (p *goPipeline) MaxThreads() int { return p.maxThreads }

func newGoRuntime(c Caps) *goRuntime {
	return &goRuntime{
		caps:  c,
		s:     newStream(defaultPolicy(c.Name)),
		pipes: map[string]*goPipeline{},
		words: make([]uint64, dwLen),
		arena: make([]byte, dwArenaLen),
	}
}

func (r *goRuntime) check() error {
	if r.closed {
		return errClosed
	}
	return r.s.fatal
}

func (r *goRuntime) Caps() Caps { return r.caps }

func (r *goRuntime) NewBuffer(n int) (Buffer, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("metal: NewBuffer(%d): negative length", n)
	}
	return &goBuffer{b: r.alloc(n), rt: r}, nil
}

// Free does nothing: recorded dispatches keep their ranges alive, as
// command buffers retain their buffers on a GPU.
func (r *goRuntime) Free(b Buffer) {
	if gb, ok := b.(*goBuffer); !ok || gb.rt != r {
		panic("metal: Free of a buffer from another runtime")
	}
}

func (r *goRuntime) Pipeline(name string) (Pipeline, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if p, ok := r.pipes[name]; ok {
		return p, nil
	}
	k, err := r.lookup(name)
	if err != nil {
		return nil, err
	}
	retries, err := createPipeline(name, func(attempt int) error {
		if r.fault != nil {
			return r.fault(name, attempt)
		}
		return nil
	})
	r.s.stats.PipelineRetries += uint64(retries)
	if err != nil {
		return nil, err
	}
	mt := r.caps.MaxThreadsPerGroup
	if r.maxThreads != nil {
		if m := r.maxThreads(name); m > 0 {
			mt = min(m, mt)
		}
	}
	p := &goPipeline{name: name, kernel: k, maxThreads: mt, info: infoOf(name)}
	r.pipes[name] = p
	return p, nil
}

func (r *goRuntime) ref(b Buffer) (uintptr, int, error) {
	gb, ok := b.(*goBuffer)
	if !ok || gb.rt != r {
		return 0, 0, fmt.Errorf("a buffer from another runtime (%T)", b)
	}
	return 0, len(gb.b), nil
}

func (r *goRuntime) Dispatch(p Pipeline, grid, group [3]int, args []Arg, tgMem []int) error {
	if err := r.check(); err != nil {
		return err
	}
	gp, ok := p.(*goPipeline)
	if !ok || r.pipes[gp.name] != gp {
		return fmt.Errorf("metal: Dispatch of a pipeline from another runtime (%T)", p)
	}
	empty, err := encodeDispatch(r.words, r.arena, gp.name, gp.maxThreads, r.caps.ThreadgroupMemory, grid, group, args, tgMem, r.ref)
	if err != nil || empty {
		return err
	}
	c, known := dispatchCost(gp.info, args)
	l := r.s.policy.dispatchLoad(c, gp.info.family, gp.info.elem == "bfloat")
	plan := r.s.plan(l)
	r.run(plan.retire)
	if plan.commitFirst {
		r.commitOpen()
	}
	d := recorded{p: gp, grid: grid, group: group}
	if r.exec != nil {
		d.bufs = make([][]byte, len(args))
		for i, a := range args {
			if a.Buf != nil {
				d.bufs[i] = a.Buf.Bytes()[a.Offset:]
			} else {
				d.bufs[i] = append([]byte(nil), a.Bytes...)
			}
		}
	}
	r.open = append(r.open, d)
	if plan.commitAfter {
		r.commitOpen()
	}
	r.s.dispatched(plan, l)
	if r.tracing {
		r.trace = append(r.trace, traced{info: &gp.info, cost: c, known: known, serial: r.s.last})
	}
	return r.s.fatal
}

// commitOpen moves the open command buffer to the queue.
func (r *goRuntime) commitOpen() {
	if len(r.open) > 0 {
		r.queue = append(r.queue, r.open)
		r.open = nil
	}
}

// run completes the n oldest committed command buffers: runs their
// dispatches in order. A failure is fatal: the rest is discarded, as Metal
// discards work queued behind a failed command buffer.
func (r *goRuntime) run(n int) {
	if n == 0 {
		return
	}
	for _, cb := range r.queue[:n] {
		if r.s.fatal != nil {
			break
		}
		if r.failNext != nil {
			f := r.failNext
			r.failNext = nil
			r.s.fail(commandBufferError(f[0].(string), f[1].(string), f[2].(int)))
			break
		}
		if r.exec == nil {
			continue
		}
		for _, d := range cb {
			if err := r.exec(d.p.kernel, d.grid, d.group, d.bufs); err != nil {
				r.s.fail(fmt.Errorf("%w: %s: %v", errFaulted, d.p.name, err))
				break
			}
		}
	}
	clear(r.queue[:n])
	r.queue = r.queue[n:]
}

func (r *goRuntime) LastSerial() uint64 { return r.s.last }

// Completed is the newest completed serial: nothing completes here until
// the host waits for it.
func (r *goRuntime) Completed() uint64 { return r.s.done }

func (r *goRuntime) Wait(serial uint64) error {
	if err := r.check(); err != nil {
		return err
	}
	commit, retire := r.s.waitPlan(serial)
	if commit {
		r.commitOpen()
	}
	r.run(retire)
	r.s.waited(commit, retire)
	return r.s.fatal
}

func (r *goRuntime) Sync() error {
	if err := r.check(); err != nil {
		return err
	}
	commit, retire := r.s.syncPlan()
	if commit {
		r.commitOpen()
	}
	r.run(retire)
	r.s.synced(commit, retire)
	return r.s.fatal
}

func (r *goRuntime) Stats() Stats { return r.s.stats }

func (r *goRuntime) Close() error {
	if r.closed {
		return nil
	}
	err := r.Sync()
	r.closed = true
	return err
}

// injectFailure makes the next command buffer to complete fail as Metal
// reports a failure: an NSError's description, domain and code.
func (r *goRuntime) injectFailure(desc, domain string, code int) {
	r.failNext = &[3]any{desc, domain, code}
}

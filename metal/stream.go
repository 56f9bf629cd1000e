package metal

import (
	"errors"
	"fmt"
	"strings"
)

// The command stream's bookkeeping, shared by every Runtime so that the
// host behaves the same over the emulator as on a GPU: when a command
// buffer is committed, when the host waits, what is counted, and that a
// failed command buffer ends the runtime. The runtimes only carry out the
// plan (runtime_darwin.go's Objective-C shim commits and waits; the
// emulated runtime runs a command buffer's dispatches when it "completes").
//
// Command buffers are numbered by serial from 1. The open one (serial cur)
// takes dispatches; committing it makes it in flight; it completes in
// order. A dispatch is committed without waiting:
//
//   - before it is encoded, when adding it to the open command buffer
//     would exceed the policy's bound on dispatches, bytes or predicted GPU
//     time (so no buffer runs long enough for macOS to preempt it, see
//     docs/metal.md, "Command buffers": the bounds and the preemption
//     known as "Impacting Interactivity");
//   - after it is encoded, when the open buffer has reached a bound, so
//     the GPU starts on it at once.
//
// At most maxInFlight command buffers are committed and unfinished;
// committing one more first waits for the oldest ones until half remain
// (a partial wait: newer work stays queued and the GPU keeps running).

// Stats counts what a runtime did since it was opened.
type Stats struct {
	Dispatches     uint64 // dispatches encoded
	CommandBuffers uint64 // command buffers committed
	Syncs          uint64 // Sync calls
	// Drains counts host waits after which no committed work was left on
	// the GPU (a Sync, or a Wait for the newest work, with work
	// outstanding): the GPU idles until the host commits again. The
	// training loop's goal is at most one per step.
	Drains uint64
	// PartialWaits counts Waits for an older command buffer while newer
	// ones stay queued (a download of a result, a staging buffer still in
	// use): the host waits, the GPU keeps working.
	PartialWaits uint64
	// Throttles counts waits for the oldest command buffers when too many
	// are in flight: the host is ahead of the GPU, which keeps working.
	Throttles uint64
	// PipelineRetries counts pipelines that built only at the second
	// attempt (pipelineAttempts).
	PipelineRetries uint64
	// The largest committed command buffer: dispatches, bytes and
	// predicted GPU seconds on the planning chip (each bound separately).
	MaxBufferDispatches int
	MaxBufferBytes      float64
	MaxBufferSeconds    float64
	// MaxSharedBufferSeconds and MaxSharedBufferBytes are
	// MaxBufferSeconds and MaxBufferBytes over the buffers of more than one
	// dispatch: the ones the planner bounds (a dispatch longer, or moving
	// more, than the bound by itself gets a buffer of its own).
	MaxSharedBufferSeconds float64
	MaxSharedBufferBytes   float64
}

// Sub returns s − t for the counters (the maxima are s's).
func (s Stats) Sub(t Stats) Stats {
	s.Dispatches -= t.Dispatches
	s.CommandBuffers -= t.CommandBuffers
	s.Syncs -= t.Syncs
	s.PipelineRetries -= t.PipelineRetries
	s.Drains -= t.Drains
	s.PartialWaits -= t.PartialWaits
	s.Throttles -= t.Throttles
	return s
}

// commitPolicy bounds each command buffer.
type commitPolicy struct {
	maxDispatches int
	maxBytes      float64 // bytes moved by its dispatches (Cost.Bytes)
	maxSeconds    float64 // predicted GPU time on chip
	chip          Chip    // whose peaks predict the time
}

// Default command-buffer bounds. MLX commits every ~40 dispatches or when a
// buffer's inputs pass ~40 MB; our byte count includes outputs, hence 64
// MiB. 20 ms of predicted GPU time on the planning chip keeps a buffer far
// below the durations at which macOS preempts a buffer that monopolises
// the GPU, while one buffer still amortises its commit (tens of µs).
const (
	defaultMaxDispatches = 40
	defaultMaxBytes      = 64 << 20
	defaultMaxSeconds    = 0.020
	defaultMaxInFlight   = 16
)

// planningChip returns the chip whose peaks size the command buffers of
// a device: the device's own when the table knows it, else the slowest
// supported chip.
func planningChip(device string) Chip {
	if c, ok := ChipOf(device); ok {
		return c
	}
	return slowestChip
}

func defaultPolicy(device string) commitPolicy {
	return commitPolicy{defaultMaxDispatches, defaultMaxBytes, defaultMaxSeconds, planningChip(device)}
}

// load is what a command buffer holds.
type load struct {
	dispatches     int
	bytes, seconds float64
}

func (l load) plus(m load) load {
	return load{l.dispatches + m.dispatches, l.bytes + m.bytes, l.seconds + m.seconds}
}

// over reports whether l exceeds a bound; full whether it has reached one.
func (p *commitPolicy) over(l load) bool {
	return l.dispatches > p.maxDispatches || l.bytes > p.maxBytes || l.seconds > p.maxSeconds
}

func (p *commitPolicy) full(l load) bool {
	return l.dispatches >= p.maxDispatches || l.bytes >= p.maxBytes || l.seconds >= p.maxSeconds
}

// dispatchLoad is one dispatch's load: its bytes and predicted time on the
// planning chip by the model of the kernel's family f (nil outside the
// registry: modelFamily's), so that the buffers the planner bounds are
// the ones the prediction times.
func (p *commitPolicy) dispatchLoad(c Cost, f *Family, bf16 bool) load {
	return load{1, c.Bytes, p.chip.PredictFamily(c, modelFamily(f), bf16)}
}

// modelFamily is f, or for a kernel outside the registry (nil) the
// element-wise family, whose bandwidth fraction costs its bound bytes.
func modelFamily(f *Family) *Family {
	if f == nil {
		return famEltwise
	}
	return f
}

// dispatchPlan is what a runtime does around one dispatch, in order:
// wait for the retire oldest in-flight command buffers, commit the open
// one (commitFirst), encode the dispatch, commit (commitAfter).
type dispatchPlan struct {
	retire                   int
	commitFirst, commitAfter bool
}

// stream is the bookkeeping. Serials: cur is the open command buffer,
// committed the newest committed one (cur−1), done the newest completed.
type stream struct {
	policy      commitPolicy
	maxInFlight int
	open        load
	cur         uint64
	done        uint64
	last        uint64 // serial holding the most recent dispatch
	stats       Stats
	fatal       error
}

func newStream(p commitPolicy) *stream {
	return &stream{policy: p, maxInFlight: defaultMaxInFlight, cur: 1}
}

func (s *stream) committed() uint64 { return s.cur - 1 }
func (s *stream) inFlight() int     { return int(s.committed() - s.done) }

// plan decides the commits and waits around a dispatch of load l.
func (s *stream) plan(l load) dispatchPlan {
	var p dispatchPlan
	after := s.open.plus(l)
	if s.open.dispatches > 0 && s.policy.over(after) {
		p.commitFirst = true
		after = l
	}
	p.commitAfter = s.policy.full(after)
	commits := 0
	if p.commitFirst {
		commits++
	}
	if p.commitAfter {
		commits++
	}
	if commits > 0 && s.inFlight()+commits > s.maxInFlight {
		p.retire = s.inFlight() - s.maxInFlight/2
	}
	return p
}

// dispatched records a dispatch carried out by plan p.
func (s *stream) dispatched(p dispatchPlan, l load) {
	if p.retire > 0 {
		s.done += uint64(p.retire)
		s.stats.Throttles++
	}
	if p.commitFirst {
		s.commit()
	}
	s.open = s.open.plus(l)
	s.last = s.cur
	s.stats.Dispatches++
	if p.commitAfter {
		s.commit()
	}
}

// commit records the open command buffer's commit.
func (s *stream) commit() {
	if s.open.dispatches == 0 {
		return
	}
	st := &s.stats
	st.CommandBuffers++
	st.MaxBufferDispatches = max(st.MaxBufferDispatches, s.open.dispatches)
	st.MaxBufferBytes = max(st.MaxBufferBytes, s.open.bytes)
	st.MaxBufferSeconds = max(st.MaxBufferSeconds, s.open.seconds)
	if s.open.dispatches > 1 {
		st.MaxSharedBufferSeconds = max(st.MaxSharedBufferSeconds, s.open.seconds)
		st.MaxSharedBufferBytes = max(st.MaxSharedBufferBytes, s.open.bytes)
	}
	s.open = load{}
	s.cur++
}

// waitPlan returns what waiting for command buffer serial takes: whether
// to commit the open buffer, and how many in-flight buffers to wait for. A
// serial already complete (or holding no dispatch) needs nothing. A wait
// commits the open buffer first whenever it holds work, so the GPU has it
// to run while the host waits for an older one.
func (s *stream) waitPlan(serial uint64) (commit bool, retire int) {
	serial = min(serial, s.cur)
	if serial <= s.done || (serial == s.cur && s.open.dispatches == 0 && serial-1 <= s.done) {
		return false, 0
	}
	commit = s.open.dispatches > 0
	if serial == s.cur && !commit {
		serial-- // the open buffer holds nothing: its predecessor is the newest work
	}
	return commit, int(serial - s.done)
}

// waited records a wait carried out by waitPlan.
func (s *stream) waited(commit bool, retire int) {
	if commit {
		s.commit()
	}
	if retire == 0 {
		return
	}
	s.done += uint64(retire)
	if s.done == s.committed() {
		s.stats.Drains++
	} else {
		s.stats.PartialWaits++
	}
}

// syncPlan is the plan of a Sync: commit the open buffer, wait for all.
func (s *stream) syncPlan() (commit bool, retire int) {
	return s.waitPlan(s.cur)
}

// synced records a Sync carried out by syncPlan.
func (s *stream) synced(commit bool, retire int) {
	s.stats.Syncs++
	s.waited(commit, retire)
}

// completed records that every command buffer up to serial has completed
// (learnt by polling, without waiting).
func (s *stream) completed(serial uint64) {
	s.done = max(s.done, min(serial, s.committed()))
}

// fail makes err the runtime's fatal error, if it has none yet.
func (s *stream) fail(err error) {
	if s.fatal == nil {
		s.fatal = err
	}
}

// errFaulted wraps a command-buffer failure: the runtime is unusable
// afterwards.
var errFaulted = errors.New("metal: the runtime is unusable after a command-buffer failure (Metal discards the work queued behind a failed command buffer); start a new one")

// commandBufferError turns a failed command buffer's NSError (localized
// description, domain, code) into the runtime's fatal error. GPU time-outs
// and preemption ("Impacting Interactivity": macOS stops a command buffer
// that keeps the GPU from the display) and out-of-memory errors get a hint
// to lower the microbatch.
func commandBufferError(desc, domain string, code int) error {
	// MTLCommandBufferError codes: 2 Timeout, 3 PageFault, 8 OutOfMemory.
	const (
		codeTimeout     = 2
		codeOutOfMemory = 8
	)
	what := fmt.Sprintf("%s (%s code %d)", desc, domain, code)
	lower := strings.ToLower(desc)
	isMetal := domain == "MTLCommandBufferErrorDomain"
	switch {
	case strings.Contains(lower, "impacting interactivity") || strings.Contains(lower, "impactinginteractivity"):
		return fmt.Errorf("%w: a command buffer was preempted by macOS for Impacting Interactivity (it kept the GPU from the display too long): %s; "+
			"lower --max-microbatch-tokens (MAX_MICROBATCH_TOKENS) so each command buffer does less work", errFaulted, what)
	case isMetal && code == codeTimeout || strings.Contains(lower, "timeout") || strings.Contains(lower, "timed out"):
		return fmt.Errorf("%w: GPU time-out: %s; lower --max-microbatch-tokens (MAX_MICROBATCH_TOKENS) so each command buffer does less work", errFaulted, what)
	case isMetal && code == codeOutOfMemory:
		return fmt.Errorf("%w: the GPU ran out of memory: %s; lower --max-microbatch-tokens (MAX_MICROBATCH_TOKENS) or the model size", errFaulted, what)
	}
	return fmt.Errorf("%w: command buffer failed: %s", errFaulted, what)
}

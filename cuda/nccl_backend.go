//go:build cuda

package cuda

import (
	"errors"
	"fmt"

	"github.com/golf-ml/golf/backend"
)

// The Backend's NCCL communicator, for data-parallel training: one
// communicator per Backend, on its device and context, its collectives
// queued on a stream of its own, ordered with the Backend's by events.
// JoinComm, AllReduceSum, StartAllReduceSum, WaitAllReduce and LeaveComm
// are the Backend's own calls (not safe for concurrent use, like the rest
// of it); CommAbort and CommError may be called from any goroutine, a
// watchdog's included, while the Backend's goroutine is blocked in one of
// them or in a Sync waiting for a peer. Call LeaveComm before Close.

// ErrCommAborted is what the Backend's collectives return after CommAbort.
var ErrCommAborted = errors.New("cuda: the NCCL communicator was aborted")

// JoinComm makes this process rank rank of nranks in the communicator of
// id (ncclCommInitRank, blocking: it returns when every rank has joined),
// on the backend's device and context.
func (b *Backend) JoinComm(n *NCCL, id NCCLUniqueID, rank, nranks int) error {
	if n == nil {
		return errors.New("cuda: JoinComm: no NCCL")
	}
	if nranks < 1 || rank < 0 || rank >= nranks {
		return fmt.Errorf("cuda: JoinComm: rank %d of %d", rank, nranks)
	}
	s := &b.nccl
	s.mu.Lock()
	joined := s.comm != 0
	s.mu.Unlock()
	if joined {
		return errors.New("cuda: JoinComm: the backend has joined a communicator already (LeaveComm first)")
	}
	var comm NCCLComm
	var stream Stream
	var before, after Event
	err := b.ctx.Do(func(d Driver) error {
		var err error
		if stream, err = d.StreamCreate(StreamNonBlocking); err != nil {
			return err
		}
		if before, err = d.EventCreate(EventDisableTiming); err != nil {
			return err
		}
		if after, err = d.EventCreate(EventDisableTiming); err != nil {
			return err
		}
		comm, err = n.CommInitRank(nranks, id, rank)
		return err
	})
	if err != nil {
		return fmt.Errorf("cuda: rank %d of %d joining the NCCL communicator: %w", rank, nranks, err)
	}
	s.mu.Lock()
	s.lib, s.comm, s.rank, s.nranks, s.aborted = n, comm, rank, nranks, false
	s.stream, s.before, s.after = stream, before, after
	s.mu.Unlock()
	return nil
}

// ncclType is the NCCL data type of a tensor's dtype.
func ncclType(dt backend.DType) (NCCLDataType, error) {
	switch dt {
	case backend.F32:
		return NCCLFloat32, nil
	case backend.F16:
		return NCCLFloat16, nil
	case backend.BF16:
		return NCCLBfloat16, nil
	case backend.I32:
		return NCCLInt32, nil
	}
	return 0, fmt.Errorf("cuda: no NCCL data type for %v", dt)
}

// AllReduceSum sums t over every rank, in place, in t's dtype, after the
// work queued before it and before the work queued after it
// (StartAllReduceSum, then WaitAllReduce). The host does not wait (a
// Sync, Download or ReadScalar does).
func (b *Backend) AllReduceSum(t *backend.Tensor) error {
	if err := b.StartAllReduceSum(t); err != nil {
		return err
	}
	return b.WaitAllReduce()
}

// joined is the communicator, or why there is none.
func (b *Backend) joined(call string) (*NCCL, NCCLComm, *commState, error) {
	s := &b.nccl
	s.mu.Lock()
	n, comm, aborted := s.lib, s.comm, s.aborted
	s.mu.Unlock()
	switch {
	case aborted:
		return nil, 0, nil, ErrCommAborted
	case comm == 0:
		return nil, 0, nil, fmt.Errorf("cuda: %s: the backend has joined no communicator (JoinComm)", call)
	}
	return n, comm, s, nil
}

// StartAllReduceSum queues the sum of t over every rank, in place, in t's
// dtype, on the communicator's stream: it reads t once the work queued on
// the backend's stream before it is done, and the backend's later work
// does not wait for it, so the two overlap. Until WaitAllReduce, later
// work must neither read nor write t.
func (b *Backend) StartAllReduceSum(t *backend.Tensor) error {
	dt, err := ncclType(t.DType)
	if err != nil {
		return err
	}
	n, comm, s, err := b.joined("StartAllReduceSum")
	if err != nil {
		return err
	}
	p := ptr(t)
	b.gen++ // device memory changes: a host copy of t is stale
	return b.ctx.Do(func(d Driver) error {
		if err := d.EventRecord(s.before, b.stream); err != nil {
			return err
		}
		if err := d.StreamWaitEvent(s.stream, s.before); err != nil {
			return err
		}
		return n.AllReduce(p, p, uint64(t.Len()), dt, NCCLSum, comm, s.stream)
	})
}

// WaitAllReduce makes the work queued on the backend's stream after it
// wait for every sum started before it. The host does not wait.
func (b *Backend) WaitAllReduce() error {
	_, _, s, err := b.joined("WaitAllReduce")
	if err != nil {
		return err
	}
	return b.ctx.Do(func(d Driver) error {
		if err := d.EventRecord(s.after, s.stream); err != nil {
			return err
		}
		return d.StreamWaitEvent(b.stream, s.after)
	})
}

// CommAbort aborts the communicator (ncclCommAbort): its queued and
// running collectives end, calls blocked on it return, and it is freed;
// later collectives return ErrCommAborted. It does not go through the
// context's thread, which may be the one blocked, and may be called from
// any goroutine. Nothing to abort is no error.
func (b *Backend) CommAbort() error {
	s := &b.nccl
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.comm == 0 {
		return nil
	}
	comm := s.comm
	s.comm, s.aborted = 0, true
	return s.lib.CommAbort(comm)
}

// CommError is the communicator's asynchronous error
// (ncclCommGetAsyncError): nil while it is healthy or has none,
// ErrCommAborted after CommAbort, else an *NCCLError naming the rank. It
// does not wait, and may be called from any goroutine.
func (b *Backend) CommError() error {
	s := &b.nccl
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		return ErrCommAborted
	}
	if s.comm == 0 {
		return nil
	}
	r, err := s.lib.CommGetAsyncError(s.comm)
	if err != nil {
		return err
	}
	if r == NCCLSuccess || r == NCCLInProgress {
		return nil
	}
	return &NCCLError{Call: fmt.Sprintf("rank %d of %d: ncclCommGetAsyncError", s.rank, s.nranks), Code: r,
		Text: ncclErrorText(s.lib.GetErrorString(r), s.lib.LastError(s.comm))}
}

// LeaveComm leaves the communicator: its operations are flushed
// (ncclCommFinalize, which waits for the other ranks' matching ones) and
// it is freed (ncclCommDestroy). A CommAbort while the flush waits (a
// peer gone) ends it, and there is then nothing to free. After CommAbort,
// or without a communicator, there is nothing to do.
func (b *Backend) LeaveComm() error {
	s := &b.nccl
	s.mu.Lock()
	n, comm := s.lib, s.comm
	if comm == 0 {
		s.aborted = false
	}
	s.mu.Unlock()
	if comm == 0 {
		return nil
	}
	err := b.ctx.Do(func(Driver) error { return n.CommFinalize(comm) })
	s.mu.Lock()
	aborted := s.comm != comm
	s.comm, s.aborted = 0, false
	s.mu.Unlock()
	if aborted {
		return err
	}
	s.mu.Lock()
	stream, before, after := s.stream, s.before, s.after
	s.stream, s.before, s.after = 0, 0, 0
	s.mu.Unlock()
	return errors.Join(err, b.ctx.Do(func(d Driver) error {
		return errors.Join(n.CommDestroy(comm), d.StreamDestroy(stream), d.EventDestroy(before), d.EventDestroy(after))
	}))
}

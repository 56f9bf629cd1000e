//go:build cuda

package cudacpp

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
)

// TestStreamWaitEvent: work queued on a second stream after
// cuStreamWaitEvent sees the first stream's work before the event's
// record, and only that (a later write on the first stream is not waited
// for); without the wait the second stream reads memory the first has not
// written yet, as it would on a GPU where the first stream is behind (the
// stand-in runs a stream's work only when something waits for it).
func TestStreamWaitEvent(t *testing.T) {
	r := newRig(t)
	const n = 64
	x, y, z := r.alloc(n), r.alloc(n), r.alloc(n)
	require.NoError(t, r.sync())
	var other cuda.Stream
	var ev cuda.Event
	require.NoError(t, r.ctx.Do(func(d cuda.Driver) error {
		var err error
		if other, err = d.StreamCreate(cuda.StreamNonBlocking); err != nil {
			return err
		}
		if ev, err = d.EventCreate(cuda.EventDisableTiming); err != nil {
			return err
		}
		// r.stream: x = 0x11, record, x = 0x22. other: copy x to z
		// without a wait, then wait for the record, copy x to y.
		if err := d.MemsetD8Async(x, 0x11, n, r.stream); err != nil {
			return err
		}
		if err := d.MemcpyDtoDAsync(z, x, n, other); err != nil {
			return err
		}
		if err := d.EventRecord(ev, r.stream); err != nil {
			return err
		}
		if err := d.MemsetD8Async(x, 0x22, n, r.stream); err != nil {
			return err
		}
		if err := d.StreamWaitEvent(other, ev); err != nil {
			return err
		}
		if err := d.MemcpyDtoDAsync(y, x, n, other); err != nil {
			return err
		}
		return d.StreamSynchronize(other)
	}))
	t.Cleanup(func() {
		r.ctx.Do(func(d cuda.Driver) error { return d.StreamDestroy(other) })
	})
	// other has run: z and y hold what its copies read (r.read runs what
	// is left on r.stream, which writes neither).
	assert.Equal(t, bytes.Repeat([]byte{0}, n), r.read(z, n), "copied before the wait: the first stream had not run")
	assert.Equal(t, bytes.Repeat([]byte{0x11}, n), r.read(y, n), "copied after the wait: the work before the record, not after")
	assert.Equal(t, bytes.Repeat([]byte{0x22}, n), r.read(x, n), "the first stream's own later write")
	assert.Error(t, r.ctx.Do(func(d cuda.Driver) error { return d.StreamWaitEvent(other, 0) }), "not an event")
}

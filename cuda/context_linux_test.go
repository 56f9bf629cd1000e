package cuda

import (
	"errors"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threadDriver is a stand-in driver that records the OS thread of every
// call and which context is current on which thread, as the real driver
// keeps it. Methods it does not define panic (the embedded nil Driver).
type threadDriver struct {
	Driver
	mu       sync.Mutex
	current  map[int]CtxHandle // OS thread → current context
	calls    []string
	threads  map[int]bool
	major    int
	released bool
}

func (d *threadDriver) note(call string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	tid := syscall.Gettid()
	d.calls = append(d.calls, call)
	d.threads[tid] = true
	return tid
}

func (d *threadDriver) Init() error                     { d.note("Init"); return nil }
func (d *threadDriver) DriverVersion() (int, error)     { d.note("DriverVersion"); return 12040, nil }
func (d *threadDriver) DeviceCount() (int, error)       { d.note("DeviceCount"); return 1, nil }
func (d *threadDriver) DeviceGet(i int) (Device, error) { d.note("DeviceGet"); return Device(i), nil }
func (d *threadDriver) DeviceName(Device) (string, error) {
	d.note("DeviceName")
	return "Stand-in H100", nil
}
func (d *threadDriver) DeviceTotalMem(Device) (uint64, error) { return 80 << 30, nil }
func (d *threadDriver) DeviceAttribute(_ Device, a DeviceAttr) (int, error) {
	switch a {
	case AttrComputeCapabilityMajor:
		return d.major, nil
	case AttrMultiprocessorCount:
		return 132, nil
	}
	return 0, nil
}
func (d *threadDriver) PrimaryCtxRetain(Device) (CtxHandle, error) {
	d.note("PrimaryCtxRetain")
	return 0xc0, nil
}
func (d *threadDriver) PrimaryCtxRelease(Device) error {
	d.note("PrimaryCtxRelease")
	d.released = true
	return nil
}
func (d *threadDriver) CtxSetCurrent(c CtxHandle) error {
	tid := d.note("CtxSetCurrent")
	d.mu.Lock()
	d.current[tid] = c
	d.mu.Unlock()
	return nil
}
func (d *threadDriver) CtxSynchronize() error { d.note("CtxSynchronize"); return nil }

// MemAlloc fails unless the calling thread has the context current, as
// the real driver does (CUDA_ERROR_INVALID_CONTEXT).
func (d *threadDriver) MemAlloc(n uint64) (DevicePtr, error) {
	tid := d.note("MemAlloc")
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.current[tid] == 0 {
		return 0, &DriverError{Call: "cuMemAlloc", Code: 201, Name: "CUDA_ERROR_INVALID_CONTEXT"}
	}
	return DevicePtr(n), nil
}

func newThreadDriver(major int) *threadDriver {
	return &threadDriver{current: map[int]CtxHandle{}, threads: map[int]bool{}, major: major}
}

// Every call of a Context runs on one OS thread, where its context is
// current, however many goroutines call Do; the same calls made directly
// from a goroutine on another thread fail as they would with a real driver.
func TestContextRunsOnOneLockedThread(t *testing.T) {
	d := newThreadDriver(9)
	c, err := OpenContext(d, 0)
	require.NoError(t, err)
	assert.Equal(t, "Stand-in H100", c.Info.Name)
	assert.Equal(t, "sm_90", c.Info.Arch())
	assert.Equal(t, 132, c.Info.SMs)

	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Do(func(drv Driver) error {
				_, err := drv.MemAlloc(uint64(i + 1))
				return err
			})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	d.mu.Lock()
	assert.Len(t, d.threads, 1, "driver calls ran on %d threads", len(d.threads))
	d.mu.Unlock()

	// Off the context's thread the context is not current.
	done := make(chan error)
	go func() {
		_, err := d.MemAlloc(1)
		done <- err
	}()
	err = <-done
	var de *DriverError
	if assert.True(t, errors.As(err, &de), "%v", err) {
		assert.Equal(t, "CUDA_ERROR_INVALID_CONTEXT", de.Name)
	}

	require.NoError(t, c.Close())
	assert.True(t, d.released)
	assert.ErrorIs(t, c.Do(func(Driver) error { return nil }), ErrContextClosed)
	require.NoError(t, c.Close(), "a second Close is a no-op")
}

// A device older than sm_80 is refused before any context is made.
func TestContextRefusesOldDevice(t *testing.T) {
	d := newThreadDriver(7)
	_, err := OpenContext(d, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cuda: device 0 (Stand-in H100) is sm_70; golf needs sm_80 or newer")
	assert.NotContains(t, d.calls, "PrimaryCtxRetain")

	_, err = OpenContext(newThreadDriver(9), 3)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cuda: device 3: the driver sees 1 device(s)")
}

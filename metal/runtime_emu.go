//go:build cgo

package metal

import (
	"fmt"

	"github.com/golf-ml/golf/metal/emu"
)

// emuRuntime is the Runtime over the MSL-on-CPU emulator: buffers are Go
// memory, a dispatch runs to completion before Dispatch returns, and Sync
// reports the first dispatch error.
type emuRuntime struct {
	flavour Flavour
	pipes   map[string]*emuPipeline
	bufs    [][]byte // reused per dispatch
}

type emuBuffer struct{ b []byte }

func (e *emuBuffer) Len() int      { return len(e.b) }
func (e *emuBuffer) Bytes() []byte { return e.b }

type emuPipeline struct{ k *emu.Kernel }

func (p *emuPipeline) Name() string    { return p.k.Name() }
func (p *emuPipeline) MaxThreads() int { return emu.MaxThreadsPerThreadgroup }

// NewEmulatedRuntime returns a Runtime that runs the embedded shaders on the
// CPU with the kernels of flavour f, standing in for a device with bfloat
// support, 32 KB of threadgroup memory and 1,024 threads per threadgroup.
func NewEmulatedRuntime(f Flavour) Runtime {
	return &emuRuntime{flavour: f, pipes: map[string]*emuPipeline{}}
}

func (r *emuRuntime) Caps() Caps {
	return Caps{
		Name: "MSL emulator on the CPU", Flavour: r.flavour, BFloat: true,
		MaxThreadsPerGroup: emu.MaxThreadsPerThreadgroup, ThreadgroupMemory: 32 << 10,
		RecommendedWorkingSet: 8 << 30,
	}
}

// NewBuffer allocates 16-byte-aligned Go memory (a float4 or a simdgroup
// matrix load may need it).
func (r *emuRuntime) NewBuffer(n int) (Buffer, error) {
	words := make([]uint64, (n+15)/16*2)
	b := unsafeBytes(words)[:n]
	return &emuBuffer{b: b}, nil
}

func (r *emuRuntime) Free(Buffer) {}

func (r *emuRuntime) Pipeline(name string) (Pipeline, error) {
	if p, ok := r.pipes[name]; ok {
		return p, nil
	}
	k, err := emu.Lookup(name)
	if err != nil {
		return nil, err
	}
	p := &emuPipeline{k: k}
	r.pipes[name] = p
	return p, nil
}

func (r *emuRuntime) Dispatch(p Pipeline, grid, group [3]int, args []Arg, tgMem []int) error {
	for i, n := range tgMem {
		if n > 32<<10 {
			return fmt.Errorf("metal: %s: threadgroup memory %d is %d bytes, more than 32 KB", p.Name(), i, n)
		}
	}
	r.bufs = r.bufs[:0]
	for _, a := range args {
		if a.Buf != nil {
			r.bufs = append(r.bufs, a.Buf.Bytes()[a.Offset:])
		} else {
			r.bufs = append(r.bufs, a.Bytes)
		}
	}
	return p.(*emuPipeline).k.Dispatch(grid, group, r.bufs)
}

func (r *emuRuntime) Sync() error  { return nil }
func (r *emuRuntime) Close() error { return nil }

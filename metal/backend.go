package metal

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// Backend implements backend.Backend over a Runtime: tensors live in
// shared buffers, ops are kernels of the embedded library named by
// KernelName. One op family per file, with the same base names as the cpu
// backend and shaders/ (relu_sq.go ↔ shaders/relu_sq.metal).
//
// A Backend is not safe for concurrent use: one goroutine drives it, as one
// goroutine drives a training loop.
type Backend struct {
	rt    Runtime
	caps  Caps
	pipes map[pipeKey]Pipeline
	args  []Arg        // reused by every dispatch: no per-dispatch allocation
	argT  []*devTensor // the tensors bound by args, to record their last use
	err   error        // first dispatch error, returned by Sync

	// staging holds buffers that whole-tensor uploads renamed away while
	// queued work still used them, by byte length, until that work has
	// completed and they can take another upload (backend.go: Upload).
	staging map[int][]staged

	// scratchGrowths counts scratch buffers (reduction partials, the
	// Newton–Schulz iterates, rotary partials) replaced by larger ones.
	// Growing needs no wait (command buffers keep the old buffer alive);
	// after the first training step nothing grows.
	scratchGrowths int

	// a holds the argument structs of the dispatch being encoded, so
	// binding them (bytesArg) allocates nothing. It is its own allocation
	// free of Go pointers: cgo may then see pointers into it.
	a *argStructs

	qk *qkRopeState // qk_norm_rope.go: rotary tables and dgain partials

	ew ewScratch // elementwise.go: partial sums of the two-pass reductions

	ns *nsScratch // newton_schulz.go: the iterates, products and norm

	muon *muonPlan // muon.go: MuonUpdate's batches and its geff scratch

	att attentionState // attention.go: the δ scratch of the backward

	accScratch *backend.Tensor // accumulate.go: F32 [2], the term and the new sum
}

// argStructs has one field per argument struct of shaders/args.go.
type argStructs struct {
	eltwise    shaders.EltwiseArgs
	rmsnorm    shaders.RMSNormArgs
	scalar     shaders.ScalarArgs
	reduce     shaders.ReduceArgs
	rmsnormBwd shaders.RMSNormBwdArgs
	residMix   shaders.ResidMixArgs
	scaledAdd  shaders.ScaledAddArgs
	addNorm    shaders.AddNormArgs
	embedding  shaders.EmbeddingArgs
	gemm       shaders.GemmArgs
	rope       shaders.RopeArgs
	ropePair   shaders.RopePairArgs
	attention  shaders.AttentionArgs
	ce         shaders.CEArgs
	adam       shaders.AdamArgs
	momentum   shaders.MomentumArgs
	muonSumsq  shaders.MuonSumsqArgs
	muonAxpy   shaders.MuonAxpyArgs
	ns         shaders.NSArgs
}

// pipeKey identifies a kernel without building its name string.
type pipeKey struct {
	op, dir string
	dt      backend.DType
}

// devTensor is a tensor's storage: a shared buffer of n bytes (the buffer
// may be longer), and the serial of the command buffer that last used it
// (0: no dispatch has), which fences host access.
type devTensor struct {
	buf     Buffer
	n       int
	lastUse uint64
}

// staged is a buffer set aside by a renaming upload, with the serial of
// the last command buffer that used it.
type staged struct {
	buf     Buffer
	lastUse uint64
}

// maxStagedPerSize bounds the set-aside buffers of one length: beyond it,
// an upload waits for the oldest one's work. Token batches (two per chunk)
// need a few while the GPU runs a few chunks behind.
const maxStagedPerSize = 16

// supported lists the op families implemented over the Runtime; each
// family's file adds itself in an init function.
var supported = map[backend.Op]bool{}

// New returns the backend over rt. Pipelines are built on first use, and a
// kernel that cannot be built panics then; Open builds them all first.
func New(rt Runtime) *Backend {
	return &Backend{rt: rt, caps: rt.Caps(), pipes: map[pipeKey]Pipeline{}, args: make([]Arg, 0, 16),
		argT: make([]*devTensor, 0, 16), a: new(argStructs), staging: map[int][]staged{}}
}

// Open returns the backend over rt after building, at start-up, every
// pipeline it can dispatch: each kernel of the registry in the device's
// flavour and in every element type the device has (bfloat only with
// Caps.BFloat). A kernel that does not build, or whose pipeline allows
// fewer threads per threadgroup than its op dispatches (requiredThreads),
// is an error naming it, before any work.
func Open(rt Runtime) (*Backend, error) {
	b := New(rt)
	for _, k := range Kernels {
		for _, dt := range []backend.DType{backend.F32, backend.F16, backend.BF16} {
			if dt == backend.BF16 && !b.caps.BFloat {
				continue
			}
			name := KernelName(k.Op, k.Dir, b.caps.Flavour, elemName(dt))
			p, err := rt.Pipeline(name)
			if err != nil {
				return nil, fmt.Errorf("metal: building the pipeline of kernel %s: %w", name, err)
			}
			if need := requiredThreads(k, b.caps.Flavour); p.MaxThreads() < need {
				return nil, fmt.Errorf("metal: kernel %s runs at most %d threads per threadgroup on %s, its op dispatches %d",
					name, p.MaxThreads(), b.caps.Name, need)
			}
			b.pipes[pipeKey{k.Op, k.Dir, dt}] = p
		}
	}
	return b, nil
}

// Runtime is the runtime the backend dispatches to.
func (b *Backend) Runtime() Runtime { return b.rt }

func (b *Backend) Name() string { return "metal" }

func (b *Backend) Device() string {
	c := b.caps
	d := fmt.Sprintf("%s (%s kernels, bfloat:%v, working set %.1f GiB)",
		c.Name, c.Flavour, c.BFloat, float64(c.RecommendedWorkingSet)/(1<<30))
	if c.Probed != "" {
		d += "; " + c.Probed
	}
	return d
}

// Supports is true for implemented op families, in every dtype the device
// has (bf16 needs bfloat support).
func (b *Backend) Supports(op backend.Op, dt backend.DType) bool {
	if dt == backend.BF16 && !b.caps.BFloat {
		return false
	}
	return supported[op]
}

// elemName is the MSL element type of dt.
func elemName(dt backend.DType) string {
	switch dt {
	case backend.F32:
		return "float"
	case backend.F16:
		return "half"
	case backend.BF16:
		return "bfloat"
	}
	panic(fmt.Sprintf("metal: no kernel element type for %v", dt))
}

// pipe returns the cached pipeline of (op, dir, dt) in the device's flavour.
func (b *Backend) pipe(op, dir string, dt backend.DType) Pipeline {
	k := pipeKey{op, dir, dt}
	if p, ok := b.pipes[k]; ok {
		return p
	}
	checkRegistered(op, dir)
	name := KernelName(op, dir, b.caps.Flavour, elemName(dt))
	p, err := b.rt.Pipeline(name)
	if err != nil {
		panic(fmt.Sprintf("metal: kernel %s: %v", name, err))
	}
	b.pipes[k] = p
	return p
}

// begin starts the argument list of a dispatch.
func (b *Backend) begin() {
	b.args = b.args[:0]
	b.argT = b.argT[:0]
}

// arg binds the next [[buffer(i)]] to tensor t (at its offset).
func (b *Backend) arg(t *backend.Tensor) {
	d := t.Data.(*devTensor)
	b.args = append(b.args, Arg{Buf: d.buf, Offset: t.Offset * t.DType.Size()})
	b.argT = append(b.argT, d)
}

// bytesArg binds the next [[buffer(i)]] to the bytes of *v (an argument
// struct of shaders/args.go; v must point into b.a).
func bytesArg[T any](b *Backend, v *T) {
	b.args = append(b.args, Arg{Bytes: unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))})
}

// dispatch runs p over groups threadgroups of threads threads with the
// arguments bound since begin.
func (b *Backend) dispatch(p Pipeline, groups, threads [3]int) {
	if err := b.rt.Dispatch(p, groups, threads, b.args, nil); err != nil && b.err == nil {
		b.err = err
	}
	serial := b.rt.LastSerial()
	for _, d := range b.argT {
		d.lastUse = serial
	}
}

// dispatch1D covers n items with one thread each, in groups of up to 256.
func (b *Backend) dispatch1D(p Pipeline, n int) {
	t := min(256, p.MaxThreads())
	b.dispatch(p, [3]int{(n + t - 1) / t, 1, 1}, [3]int{t, 1, 1})
}

// New allocates a zero-filled tensor.
func (b *Backend) New(dt backend.DType, shape ...int) *backend.Tensor {
	t := &backend.Tensor{Shape: append([]int(nil), shape...), DType: dt}
	n := max(t.Len()*dt.Size(), 16)
	buf, err := b.rt.NewBuffer(n)
	if err != nil {
		panic(fmt.Sprintf("metal: allocating %v: %v", t, err))
	}
	clear(buf.Bytes())
	t.Data = &devTensor{buf: buf, n: t.Len() * dt.Size()}
	return t
}

// Free releases t's buffer.
func (b *Backend) Free(t *backend.Tensor) {
	if d, ok := t.Data.(*devTensor); ok && d.buf != nil {
		b.rt.Free(d.buf)
		d.buf = nil
	}
}

// wait waits for command buffer serial, keeping the first error for Sync.
func (b *Backend) wait(serial uint64) {
	if err := b.rt.Wait(serial); err != nil && b.err == nil {
		b.err = err
	}
}

// readable waits for the work that last used t's storage, then returns
// t's bytes in the shared buffer.
func (b *Backend) readable(t *backend.Tensor) []byte {
	d := t.Data.(*devTensor)
	if d.lastUse > b.rt.Completed() {
		b.wait(d.lastUse)
	}
	es := t.DType.Size()
	return d.buf.Bytes()[t.Offset*es : (t.Offset+t.Len())*es]
}

// writable returns t's bytes for the host to overwrite without disturbing
// queued work. Storage no queued work uses is written in place. Storage
// still in use is renamed when t covers all of it: t gets a set-aside
// buffer whose work has completed (or a new one) and the old buffer is set
// aside until its own work completes; so a token batch is uploaded while
// the GPU still reads the previous one, without waiting. A view of part of
// a storage in use waits for that use.
func (b *Backend) writable(t *backend.Tensor) []byte {
	d := t.Data.(*devTensor)
	es := t.DType.Size()
	if d.lastUse > b.rt.Completed() {
		if t.Offset == 0 && t.Len()*es == d.n {
			b.rename(d)
		} else {
			b.wait(d.lastUse)
		}
	}
	return d.buf.Bytes()[t.Offset*es : (t.Offset+t.Len())*es]
}

// rename gives d a buffer no queued work uses and sets its old one aside.
func (b *Backend) rename(d *devTensor) {
	n := d.buf.Len()
	list := b.staging[n]
	done := b.rt.Completed()
	pick := -1
	for i, s := range list {
		if s.lastUse <= done {
			pick = i
			break
		}
	}
	var fresh Buffer
	switch {
	case pick >= 0:
		fresh = list[pick].buf
	case len(list) < maxStagedPerSize:
		buf, err := b.rt.NewBuffer(n)
		if err != nil {
			// Out of memory for a staging buffer: wait instead.
			b.wait(d.lastUse)
			return
		}
		fresh = buf
	default:
		// Every set-aside buffer is still in use: wait for the oldest.
		pick = 0
		for i, s := range list {
			if s.lastUse < list[pick].lastUse {
				pick = i
			}
		}
		b.wait(list[pick].lastUse)
		fresh = list[pick].buf
	}
	if pick >= 0 {
		list = append(list[:pick], list[pick+1:]...)
	}
	b.staging[n] = append(list, staged{d.buf, d.lastUse})
	d.buf, d.lastUse = fresh, 0
}

// Upload copies src ([]float32 rounded to t.DType, or []int32) into t. It
// waits for the GPU only when t is part of a storage that queued work
// still uses (see writable).
func (b *Backend) Upload(t *backend.Tensor, src any) {
	dst := b.writable(t)
	switch s := src.(type) {
	case []float32:
		if len(s) != t.Len() {
			panic(fmt.Sprintf("metal: Upload %d values into %v", len(s), t))
		}
		for i, v := range s {
			switch t.DType {
			case backend.F32:
				binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
			case backend.F16:
				binary.LittleEndian.PutUint16(dst[2*i:], backend.F16Bits(v))
			case backend.BF16:
				binary.LittleEndian.PutUint16(dst[2*i:], backend.BF16Bits(v))
			default:
				panic(fmt.Sprintf("metal: Upload []float32 into %v", t))
			}
		}
	case []int32:
		if len(s) != t.Len() || t.DType != backend.I32 {
			panic(fmt.Sprintf("metal: Upload %d int32 into %v", len(s), t))
		}
		for i, v := range s {
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(v))
		}
	default:
		panic(fmt.Sprintf("metal: Upload %T", src))
	}
}

// Download waits for the work that last used t and returns t widened to
// float32.
func (b *Backend) Download(t *backend.Tensor) []float32 {
	src := b.readable(t)
	out := make([]float32, t.Len())
	for i := range out {
		switch t.DType {
		case backend.F32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		case backend.F16:
			out[i] = backend.F16Float(binary.LittleEndian.Uint16(src[2*i:]))
		case backend.BF16:
			out[i] = backend.BF16Float(binary.LittleEndian.Uint16(src[2*i:]))
		case backend.I32:
			out[i] = float32(int32(binary.LittleEndian.Uint32(src[4*i:])))
		}
	}
	return out
}

// Sync waits for all dispatched work and returns the first error: the
// first bad dispatch since the last Sync, or the runtime's fatal
// command-buffer failure (which every later Sync returns again).
func (b *Backend) Sync() error {
	err := b.rt.Sync()
	if b.err != nil {
		err, b.err = b.err, nil
	}
	return err
}

// Stats are the runtime's counts (dispatches, command buffers, host
// waits) since it was opened.
func (b *Backend) Stats() Stats { return b.rt.Stats() }

// HostCounts returns Stats' counters as plain numbers, for callers that
// cannot import this package (the training loop and golf bench print them).
func (b *Backend) HostCounts() (dispatches, commandBuffers, syncs, drains, partialWaits, throttles uint64) {
	s := b.rt.Stats()
	return s.Dispatches, s.CommandBuffers, s.Syncs, s.Drains, s.PartialWaits, s.Throttles
}

// ScratchGrowths counts scratch buffers replaced by larger ones so far.
func (b *Backend) ScratchGrowths() int { return b.scratchGrowths }

// checkSame panics unless every tensor has n elements.
func checkLen(op string, n int, ts ...*backend.Tensor) {
	for _, t := range ts {
		if t.Len() != n {
			panic(fmt.Sprintf("metal: %s: %v has %d elements, want %d", op, t, t.Len(), n))
		}
	}
}

// checkDType panics unless every tensor has dtype dt.
func checkDType(op string, dt backend.DType, ts ...*backend.Tensor) {
	for _, t := range ts {
		if t.DType != dt {
			panic(fmt.Sprintf("metal: %s: %v, want %v", op, t, dt))
		}
	}
}

var _ backend.Backend = (*Backend)(nil)

// RecommendedWorkingSet is the device's recommendedMaxWorkingSetSize: the
// trainer refuses a run whose memory plan exceeds it.
func (b *Backend) RecommendedWorkingSet() uint64 { return b.caps.RecommendedWorkingSet }

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
	args  []Arg // reused by every dispatch: no per-dispatch allocation
	err   error // first dispatch error, returned by Sync

	// a holds the argument structs of the dispatch being encoded, so
	// binding them (bytesArg) allocates nothing. It is its own allocation
	// free of Go pointers: cgo may then see pointers into it.
	a *argStructs

	qk *qkRopeState // qk_norm_rope.go: rotary tables and dgain partials

	ew ewScratch // elementwise.go: partial sums of the two-pass reductions

	ns *nsScratch // newton_schulz.go: the iterates, products and norm

	att attentionState // attention.go: the δ scratch of the backward
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
	embedding  shaders.EmbeddingArgs
	gemm       shaders.GemmArgs
	rope       shaders.RopeArgs
	attention  shaders.AttentionArgs
	ce         shaders.CEArgs
	adam       shaders.AdamArgs
	momentum   shaders.MomentumArgs
	ns         shaders.NSArgs
}

// pipeKey identifies a kernel without building its name string.
type pipeKey struct {
	op, dir string
	dt      backend.DType
}

// devTensor is a tensor's storage: a shared buffer.
type devTensor struct{ buf Buffer }

// supported lists the op families implemented over the Runtime; each
// family's file adds itself in an init function.
var supported = map[backend.Op]bool{}

// New returns the backend over rt.
func New(rt Runtime) *Backend {
	return &Backend{rt: rt, caps: rt.Caps(), pipes: map[pipeKey]Pipeline{}, args: make([]Arg, 0, 16), a: new(argStructs)}
}

// Runtime is the runtime the backend dispatches to.
func (b *Backend) Runtime() Runtime { return b.rt }

func (b *Backend) Name() string { return "metal" }

func (b *Backend) Device() string {
	c := b.caps
	return fmt.Sprintf("%s (%s kernels, bfloat:%v, working set %.1f GiB)",
		c.Name, c.Flavour, c.BFloat, float64(c.RecommendedWorkingSet)/(1<<30))
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
func (b *Backend) begin() { b.args = b.args[:0] }

// arg binds the next [[buffer(i)]] to tensor t (at its offset).
func (b *Backend) arg(t *backend.Tensor) {
	b.args = append(b.args, Arg{Buf: t.Data.(*devTensor).buf, Offset: t.Offset * t.DType.Size()})
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
	t.Data = &devTensor{buf: buf}
	return t
}

// Free releases t's buffer.
func (b *Backend) Free(t *backend.Tensor) {
	if d, ok := t.Data.(*devTensor); ok && d.buf != nil {
		b.rt.Free(d.buf)
		d.buf = nil
	}
}

// hostBytes syncs, then returns t's bytes in the shared buffer.
func (b *Backend) hostBytes(t *backend.Tensor) []byte {
	if err := b.rt.Sync(); err != nil && b.err == nil {
		b.err = err
	}
	es := t.DType.Size()
	return t.Data.(*devTensor).buf.Bytes()[t.Offset*es : (t.Offset+t.Len())*es]
}

// Upload copies src ([]float32 rounded to t.DType, or []int32) into t.
func (b *Backend) Upload(t *backend.Tensor, src any) {
	dst := b.hostBytes(t)
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

// Download syncs and returns t widened to float32.
func (b *Backend) Download(t *backend.Tensor) []float32 {
	src := b.hostBytes(t)
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

// Sync waits for all dispatched work and returns the first error.
func (b *Backend) Sync() error {
	err := b.rt.Sync()
	if b.err != nil {
		err, b.err = b.err, nil
	}
	return err
}

// unsupported panics for an op family not yet implemented over the
// Runtime; Supports reports it, so the conformance suite skips it.
func unsupported(op backend.Op) {
	panic(fmt.Sprintf("metal: op %s is not supported yet", op))
}

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

// Package cpu is the pure-Go backend: the numerical reference every other
// backend is checked against, and a fallback trainer.
//
// Storage: a tensor's Data is a backing slice, []float32 for F32, []uint16
// (the bits) for BF16 and F16, []int32 for I32; views made by Rows and
// Reshape share it and start Offset elements in. Every op loads its operands
// into float32, computes in float32 (row statistics and reductions in
// float64 where that costs nothing), and rounds once on store with
// round-to-nearest-even, as the backend contract says (in bf16 on AMX, the
// matrix products and attention sum on tiles in their own order: see
// attention_amx.go and package gemm). The exponentials of
// softmax and cross-entropy and the tanh of the softcap use float32
// polynomial approximations (Cephes expf, tanhf) within 3 ulp.
//
// Ops run synchronously, spread over the GOMAXPROCS participants of the
// worker pool of package parallel (no goroutine started per op, no
// allocation in the steady state: each op's loop body and scratch live in
// the Backend). Results do not depend on GOMAXPROCS: rows are independent,
// and every reduction across rows (parameter gradients, Reduce) sums fixed
// chunks of rows and combines the partial sums in a fixed order.
//
// Dimension legend: as in package backend (N rows, C width, T sequence
// length, H/Hkv heads, D head dim, V vocabulary, I/O linear in/out).
package cpu

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
	"github.com/golf-ml/golf/internal/vmath"
)

// Backend is the CPU implementation of backend.Backend. Its ops may be called
// from one goroutine at a time.
type Backend struct {
	mu      sync.Mutex
	scratch [6][]float32 // reused float32 panels for matrix products
	rope    map[ropeKey]*ropeTable
	mem     memCounter // tensor bytes (memstats.go)
	loops   loops      // per-participant scratch and the ops' loop bodies (pool.go)
	ones    []float32  // 1s, the gains of a nil gain tensor
}

var _ backend.Backend = (*Backend)(nil)

// New returns a CPU backend.
func New() *Backend { return &Backend{rope: map[ropeKey]*ropeTable{}} }

// Name is "cpu".
func (b *Backend) Name() string { return "cpu" }

// Device names the thread count and architecture.
func (b *Backend) Device() string {
	amx := ""
	if gemm.AMX() {
		amx = ", AMX for bf16 and for fp16 matrix products"
	}
	return fmt.Sprintf("cpu: %d threads, %s%s", runtime.GOMAXPROCS(0), runtime.GOARCH, amx)
}

// Supports is true for every op of the contract in every float dtype.
func (b *Backend) Supports(op backend.Op, dt backend.DType) bool {
	if !dt.IsFloat() {
		return false
	}
	for _, o := range backend.Ops {
		if o == op {
			return true
		}
	}
	return false
}

// New allocates a zero-filled tensor.
func (b *Backend) New(dt backend.DType, shape ...int) *backend.Tensor {
	t := &backend.Tensor{Shape: append([]int(nil), shape...), DType: dt}
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("cpu: New: negative dimension in %v", shape))
		}
	}
	n := t.Len()
	switch dt {
	case backend.F32:
		t.Data = make([]float32, n)
	case backend.BF16, backend.F16:
		t.Data = make([]uint16, n)
	case backend.I32:
		t.Data = make([]int32, n)
	default:
		panic(fmt.Sprintf("cpu: New: unknown dtype %v", dt))
	}
	b.mem.alloc(storageBytes(t.Data))
	return t
}

// Free drops t's storage; any later use of t panics.
func (b *Backend) Free(t *backend.Tensor) {
	if t.Offset != 0 {
		panic(fmt.Sprintf("cpu: Free of a view %v at offset %d", t, t.Offset))
	}
	b.mem.free(storageBytes(t.Data))
	t.Data = nil
}

// Upload copies src into t: []float32 for float tensors (rounded to t's
// dtype), []int32 for I32.
func (b *Backend) Upload(t *backend.Tensor, src any) {
	n := t.Len()
	switch s := src.(type) {
	case []float32:
		if !t.DType.IsFloat() {
			panic(fmt.Sprintf("cpu: Upload: []float32 into %v", t))
		}
		if len(s) != n {
			panic(fmt.Sprintf("cpu: Upload: %d elements into %v", len(s), t))
		}
		storeRange(t, 0, s)
	case []int32:
		if t.DType != backend.I32 {
			panic(fmt.Sprintf("cpu: Upload: []int32 into %v", t))
		}
		if len(s) != n {
			panic(fmt.Sprintf("cpu: Upload: %d elements into %v", len(s), t))
		}
		copy(i32s(t), s)
	default:
		panic(fmt.Sprintf("cpu: Upload: unsupported source %T into %v", src, t))
	}
}

// Download returns t's elements widened to float32.
func (b *Backend) Download(t *backend.Tensor) []float32 {
	out := make([]float32, t.Len())
	if t.DType == backend.I32 {
		for i, v := range i32s(t) {
			out[i] = float32(v)
		}
		return out
	}
	loadRange(t, 0, out)
	return out
}

// Sync returns nil: every op has finished when it returns.
func (b *Backend) Sync() error { return nil }

// --- storage access ------------------------------------------------------

// f32s is t's elements as a float32 slice (t must be F32).
func f32s(t *backend.Tensor) []float32 {
	d, ok := t.Data.([]float32)
	if !ok || t.DType != backend.F32 {
		panic(fmt.Sprintf("cpu: %v is not F32 storage (%T)", t, t.Data))
	}
	return d[t.Offset : t.Offset+t.Len()]
}

// u16s is t's elements as raw 16-bit patterns (t must be BF16 or F16).
func u16s(t *backend.Tensor) []uint16 {
	d, ok := t.Data.([]uint16)
	if !ok || (t.DType != backend.BF16 && t.DType != backend.F16) {
		panic(fmt.Sprintf("cpu: %v is not 16-bit storage (%T)", t, t.Data))
	}
	return d[t.Offset : t.Offset+t.Len()]
}

// i32s is t's elements as int32 (t must be I32).
func i32s(t *backend.Tensor) []int32 {
	d, ok := t.Data.([]int32)
	if !ok || t.DType != backend.I32 {
		panic(fmt.Sprintf("cpu: %v is not I32 storage (%T)", t, t.Data))
	}
	return d[t.Offset : t.Offset+t.Len()]
}

// loadRange widens elements [i, i+len(dst)) of float tensor t into dst.
func loadRange(t *backend.Tensor, i int, dst []float32) {
	switch t.DType {
	case backend.F32:
		copy(dst, f32s(t)[i:i+len(dst)])
	case backend.BF16:
		vmath.FromBF16(dst, u16s(t)[i:i+len(dst)])
	case backend.F16:
		vmath.FromF16(dst, u16s(t)[i:i+len(dst)])
	default:
		panic(fmt.Sprintf("cpu: load from non-float %v", t))
	}
}

// storeRange rounds src into elements [i, i+len(src)) of float tensor t.
func storeRange(t *backend.Tensor, i int, src []float32) {
	switch t.DType {
	case backend.F32:
		copy(f32s(t)[i:i+len(src)], src)
	case backend.BF16:
		vmath.ToBF16(u16s(t)[i:i+len(src)], src)
	case backend.F16:
		vmath.ToF16(u16s(t)[i:i+len(src)], src)
	default:
		panic(fmt.Sprintf("cpu: store to non-float %v", t))
	}
}

// view returns elements [i, i+n) of t as float32: t's own storage when t is
// F32 (no copy), else widened into buf (len ≥ n).
func view(t *backend.Tensor, i, n int, buf []float32) []float32 {
	if t.DType == backend.F32 {
		return f32s(t)[i : i+n]
	}
	buf = buf[:n]
	loadRange(t, i, buf)
	return buf
}

// dest returns where to compute elements [i, i+n) of t: t's own storage when
// t is F32, else buf (len ≥ n), to be rounded into t by flush.
func dest(t *backend.Tensor, i, n int, buf []float32) []float32 {
	if t.DType == backend.F32 {
		return f32s(t)[i : i+n]
	}
	return buf[:n]
}

// flush stores vals, obtained from dest(t, i, ...), into t (a no-op for F32).
func flush(t *backend.Tensor, i int, vals []float32) {
	if t.DType != backend.F32 {
		storeRange(t, i, vals)
	}
}

// panel returns scratch panel k with at least n elements, reused across
// calls (b.mu must be held).
func (b *Backend) panel(k, n int) []float32 {
	if cap(b.scratch[k]) < n {
		b.scratch[k] = make([]float32, n)
	}
	return b.scratch[k][:n]
}

// --- checks --------------------------------------------------------------

// fail panics with the op's name.
func fail(op, format string, args ...any) {
	panic(fmt.Sprintf("cpu: "+op+": "+format, args...))
}

// wantShape checks that t has exactly the given shape.
func wantShape(op, name string, t *backend.Tensor, shape ...int) {
	if t == nil {
		fail(op, "%s is nil", name)
	}
	ok := len(t.Shape) == len(shape)
	for i := 0; ok && i < len(shape); i++ {
		ok = t.Shape[i] == shape[i]
	}
	if !ok {
		// A copy, so that shape (variadic, on the caller's stack) does not
		// escape: the check runs on every op call.
		fail(op, "%s %v, want %v", name, t.Shape, slices.Clone(shape))
	}
}

// wantRank checks t's rank and returns its shape.
func wantRank(op, name string, t *backend.Tensor, rank int) []int {
	if t == nil {
		fail(op, "%s is nil", name)
	}
	if len(t.Shape) != rank {
		fail(op, "%s %v, want rank %d", name, t.Shape, rank)
	}
	return t.Shape
}

// wantSame checks that a and b have the same shape.
func wantSame(op, an string, a *backend.Tensor, bn string, b *backend.Tensor) {
	if a == nil || b == nil {
		fail(op, "%s or %s is nil", an, bn)
	}
	wantShape(op, bn, b, a.Shape...)
}

// wantLen checks that a and b have the same number of elements.
func wantLen(op, an string, a *backend.Tensor, bn string, b *backend.Tensor) {
	if a == nil || b == nil {
		fail(op, "%s or %s is nil", an, bn)
	}
	if a.Len() != b.Len() {
		fail(op, "%s %v vs %s %v", an, a.Shape, bn, b.Shape)
	}
}

// wantF32 checks that every given tensor is F32.
func wantF32(op string, names []string, ts ...*backend.Tensor) {
	for i, t := range ts {
		if t != nil && t.DType != backend.F32 {
			fail(op, "%s is %v, want fp32", names[i], t.DType)
		}
	}
}

// wantFloat checks that every given tensor is a float dtype.
func wantFloat(op string, names []string, ts ...*backend.Tensor) {
	for i, t := range ts {
		if t != nil && !t.DType.IsFloat() {
			fail(op, "%s is %v, want a float dtype", names[i], t.DType)
		}
	}
}

// wantCD checks that the given compute-dtype tensors are float and share a
// dtype, and returns it.
func wantCD(op string, names []string, ts ...*backend.Tensor) backend.DType {
	var dt backend.DType
	first := ""
	for i, t := range ts {
		if t == nil {
			continue
		}
		if !t.DType.IsFloat() {
			fail(op, "%s is %v, want a float dtype", names[i], t.DType)
		}
		if first == "" {
			dt, first = t.DType, names[i]
		} else if t.DType != dt {
			fail(op, "%s is %v but %s is %v", names[i], t.DType, first, dt)
		}
	}
	return dt
}

// wantIDs checks that ids is I32 and holds ids in [0, limit), and returns them.
func wantIDs(op, name string, ids *backend.Tensor, limit int) []int32 {
	if ids == nil || ids.DType != backend.I32 {
		fail(op, "%s must be i32, got %v", name, ids)
	}
	v := i32s(ids)
	for n, id := range v {
		if id < 0 || int(id) >= limit {
			fail(op, "%s[%d] = %d out of range [0, %d)", name, n, id, limit)
		}
	}
	return v
}

// rsqrt64 is 1/sqrt(x) in float64, rounded to float32.
func rsqrt64(x float64) float32 { return float32(1 / math.Sqrt(x)) }

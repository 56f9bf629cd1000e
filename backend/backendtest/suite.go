package backendtest

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"testing"

	"github.com/golf-ml/golf/backend"
)

// RunAll runs the conformance suite on b: every op of backend.Ops, in every
// dtype it is defined for, over every case of that op. A pair b does not
// support is reported as a skipped subtest "not supported".
func RunAll(t *testing.T, b backend.Backend) {
	t.Helper()
	t.Logf("backend %s on %s", b.Name(), b.Device())
	for _, op := range backend.Ops {
		t.Run(string(op), func(t *testing.T) {
			for _, dt := range OpDTypes(op) {
				t.Run(dt.String(), func(t *testing.T) { runOpDType(t, b, op, dt) })
			}
		})
	}
}

// runOpDType runs every case of op in dt, or reports the pair as skipped
// when b does not support it.
func runOpDType(t *testing.T, b backend.Backend, op backend.Op, dt backend.DType) {
	if !b.Supports(op, dt) {
		t.Skipf("not supported: %s %s on %s", op, dt, b.Name())
	}
	for _, c := range casesOf(op) {
		t.Run(c.name(), func(t *testing.T) { runCase(t, b, op, dt, c) })
	}
}

// Run is RunAll.
func Run(t *testing.T, b backend.Backend) {
	t.Helper()
	RunAll(t, b)
}

// OpDTypes lists the dtypes op is defined for: the optimizer ops and Scale
// take F32 only; every other op takes each float dtype as its CD.
func OpDTypes(op backend.Op) []backend.DType {
	switch op {
	case backend.OpScale, backend.OpAdam, backend.OpMuon, backend.OpNewtonSchulz:
		return []backend.DType{backend.F32}
	}
	return backend.FloatDTypes
}

// casesOf selects the cases of op from the table in cases.go.
func casesOf(op backend.Op) []opCase {
	var cs []opCase
	for _, c := range suiteCases {
		if c.op() == op {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		panic(fmt.Sprintf("backendtest: no cases for op %s", op))
	}
	return cs
}

// opCase is one test case of one op (a shape and the variant it exercises).
type opCase interface {
	op() backend.Op
	name() string
	run(h *harness)
}

// runCase runs c with fresh inputs seeded by op, dtype and case name (so a
// failure reproduces on every backend), then checks that inputs were left
// unmodified and that nothing outside the outputs' views was written.
func runCase(t testing.TB, b backend.Backend, op backend.Op, dt backend.DType, c opCase) {
	key := fmt.Sprintf("%s/%s/%s", op, dt, c.name())
	hash := fnv.New64a()
	hash.Write([]byte(key))
	h := &harness{
		t:       t,
		b:       b,
		dt:      dt,
		rng:     rand.New(rand.NewPCG(hash.Sum64(), 0x9e3779b97f4a7c15)),
		tracked: map[*backend.Tensor]*tracked{},
	}
	defer h.free()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v\n%s", key, r, debug.Stack())
		}
	}()
	c.run(h)
	if err := b.Sync(); err != nil {
		t.Errorf("%s: Sync: %v", key, err)
	}
	h.checkUntouched()
}

// harness creates a case's tensors, remembers what was uploaded, and checks
// outputs against the oracle.
type harness struct {
	t   testing.TB
	b   backend.Backend
	dt  backend.DType // the CD of the case (F32 for optimizer ops)
	rng *rand.Rand
	// views makes every tensor the case creates a Rows view into a larger
	// allocation with padding rows before and after it, so a backend that
	// ignores Offset or writes outside its rows is caught.
	views   bool
	tracked map[*backend.Tensor]*tracked
	order   []*tracked
}

// tracked is one allocation and what the harness knows of its contents.
type tracked struct {
	name   string
	parent *backend.Tensor // the allocation (== view when not a view)
	view   *backend.Tensor // the tensor handed to the op
	lo, hi int             // view's element range within parent
	host   []float32       // parent's contents as uploaded
	input  bool            // must be unmodified after the op
}

// padRows is the number of rows around a view.
const padRows = 2

// alloc creates a tensor of dt and shape whose view elements hold vals
// (already representable in dt) and padding holds random values.
func (h *harness) alloc(name string, dt backend.DType, vals []float32, input bool, shape []int) *backend.Tensor {
	h.t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	if len(vals) != n {
		panic(fmt.Sprintf("backendtest: %s: %d values for shape %v", name, len(vals), shape))
	}
	tr := &tracked{name: name, input: input}
	if h.views && len(shape) > 0 {
		pshape := append([]int{shape[0] + 2*padRows}, shape[1:]...)
		tr.parent = h.b.New(dt, pshape...)
		tr.view = tr.parent.Rows(padRows, shape[0])
		rowLen := n / max(shape[0], 1)
		tr.lo, tr.hi = padRows*rowLen, padRows*rowLen+n
		tr.host = make([]float32, tr.parent.Len())
		for i := range tr.host {
			if dt == backend.I32 {
				tr.host[i] = float32(h.rng.IntN(7))
			} else {
				tr.host[i] = float32(roundTo(dt, h.rng.NormFloat64()))
			}
		}
	} else {
		tr.parent = h.b.New(dt, shape...)
		tr.view = tr.parent
		tr.lo, tr.hi = 0, n
		tr.host = make([]float32, n)
	}
	copy(tr.host[tr.lo:tr.hi], vals)
	if dt == backend.I32 {
		ids := make([]int32, len(tr.host))
		for i, v := range tr.host {
			ids[i] = int32(v)
		}
		h.b.Upload(tr.parent, ids)
	} else {
		h.b.Upload(tr.parent, append([]float32(nil), tr.host...))
	}
	h.tracked[tr.view] = tr
	h.order = append(h.order, tr)
	// Upload of values representable in dt must be exact, and Download
	// must give them back.
	Close(h.t, name+" after Upload", h.b.Download(tr.parent), widen(tr.host), dt, Tol{Exact: true})
	return tr.view
}

// input uploads vals rounded to dt as an input tensor and returns it with
// the rounded values the oracle must use.
func (h *harness) input(name string, dt backend.DType, vals []float64, shape ...int) (*backend.Tensor, []float64) {
	h.t.Helper()
	r := rounded(dt, vals)
	return h.alloc(name, dt, narrow(r), true, shape), r
}

// accum uploads vals rounded to dt into a tensor the op adds into or
// updates in place, and returns it with the rounded initial values.
func (h *harness) accum(name string, dt backend.DType, vals []float64, shape ...int) (*backend.Tensor, []float64) {
	h.t.Helper()
	r := rounded(dt, vals)
	return h.alloc(name, dt, narrow(r), false, shape), r
}

// output creates an overwritten output, poisoned with NaN so an element the
// op never writes fails its check.
func (h *harness) output(name string, dt backend.DType, shape ...int) *backend.Tensor {
	h.t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	poison := make([]float32, n)
	for i := range poison {
		poison[i] = float32(math.NaN())
	}
	return h.alloc(name, dt, poison, false, shape)
}

// ids uploads token ids as an I32 input.
func (h *harness) ids(name string, ids []int) *backend.Tensor {
	h.t.Helper()
	v := make([]float32, len(ids))
	for i, id := range ids {
		v[i] = float32(id)
	}
	return h.alloc(name, backend.I32, v, true, []int{len(ids)})
}

// download returns the elements of t (a tensor made by the harness).
func (h *harness) download(t *backend.Tensor) []float32 {
	tr := h.tracked[t]
	if tr == nil {
		panic("backendtest: download of an untracked tensor")
	}
	return h.b.Download(tr.parent)[tr.lo:tr.hi]
}

// check compares t's elements with want under tol, in t's dtype.
func (h *harness) check(what string, t *backend.Tensor, want []float64, tol Tol) bool {
	h.t.Helper()
	tr := h.tracked[t]
	return Close(h.t, fmt.Sprintf("%s %s%v", what, tr.name, t.Shape), h.download(t), want, t.DType, tol)
}

// checkUntouched verifies that inputs hold exactly what was uploaded and
// that the padding around every view is intact.
func (h *harness) checkUntouched() {
	h.t.Helper()
	for _, tr := range h.order {
		got := h.b.Download(tr.parent)
		if tr.input {
			Close(h.t, "input "+tr.name+" modified", got, widen(tr.host), tr.parent.DType, Tol{Exact: true})
			continue
		}
		if tr.lo > 0 {
			Close(h.t, "padding before "+tr.name+" written", got[:tr.lo], widen(tr.host[:tr.lo]), tr.parent.DType, Tol{Exact: true})
			Close(h.t, "padding after "+tr.name+" written", got[tr.hi:], widen(tr.host[tr.hi:]), tr.parent.DType, Tol{Exact: true})
		}
	}
}

func (h *harness) free() {
	for _, tr := range h.order {
		h.b.Free(tr.parent)
	}
	h.order = nil
	clear(h.tracked)
}

// --- random inputs ------------------------------------------------------------

// normal returns n samples of N(0, sigma²).
func (h *harness) normal(n int, sigma float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = sigma * h.rng.NormFloat64()
	}
	return v
}

// uniform returns n samples of U[lo, hi).
func (h *harness) uniform(n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*h.rng.Float64()
	}
	return v
}

// rowScaled returns N rows of C normal samples, each row scaled by a random
// power of two in [2^-4, 2^4], so per-row ops see rows of unlike size.
func (h *harness) rowScaled(N, C int) []float64 {
	v := h.normal(N*C, 1)
	for n := 0; n < N; n++ {
		s := math.Ldexp(1, h.rng.IntN(9)-4)
		for c := 0; c < C; c++ {
			v[n*C+c] *= s
		}
	}
	return v
}

// randIDs returns n ids in [0, v), the first and last id always present
// when n ≥ 2.
func (h *harness) randIDs(n, v int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = h.rng.IntN(v)
	}
	if n >= 2 {
		ids[0], ids[n-1] = v-1, 0
	}
	return ids
}

// --- small helpers ------------------------------------------------------------

func rounded(dt backend.DType, vals []float64) []float64 {
	r := make([]float64, len(vals))
	for i, v := range vals {
		r[i] = roundTo(dt, v)
	}
	return r
}

func narrow(v []float64) []float32 {
	r := make([]float32, len(v))
	for i, x := range v {
		r[i] = float32(x)
	}
	return r
}

func widen(v []float32) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = float64(x)
	}
	return r
}

func abs(v []float64) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = math.Abs(x)
	}
	return r
}

func clone(v []float64) []float64 { return append([]float64(nil), v...) }

package backendtest

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"strings"
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
// unmodified and that nothing outside the outputs' views was written. In
// BF16 and F16 it first runs c's float32 twin (see runHarness), and every
// output in dt must then be that twin's result rounded once (roundedOnce).
func runCase(t testing.TB, b backend.Backend, op backend.Op, dt backend.DType, c opCase) {
	key := fmt.Sprintf("%s/%s/%s", op, dt, c.name())
	var twin []twinOutput
	if dt != backend.F32 {
		if !b.Supports(op, backend.F32) {
			t.Errorf("%s: %s supports %s in %s but not in F32, so its rounding cannot be checked", key, b.Name(), op, dt)
			return
		}
		var ok bool
		if twin, ok = runHarness(t, b, op, dt, c, true, nil); !ok {
			return
		}
	}
	runHarness(t, b, op, dt, c, false, twin)
}

// runHarness runs c once. With twinMode, every tensor the case makes in dt
// is made in F32 instead, holding the same (dt-rounded) values, and the
// outputs are recorded rather than checked; otherwise the outputs are
// checked against the oracle and, given twin, against the recorded ones.
// It returns the recorded outputs and whether the run completed.
func runHarness(t testing.TB, b backend.Backend, op backend.Op, dt backend.DType, c opCase, twinMode bool, twin []twinOutput) (recorded []twinOutput, ok bool) {
	seed := fmt.Sprintf("%s/%s/%s", op, dt, c.name()) // the same inputs in both runs
	key := seed
	if twinMode {
		key += " (float32 twin)"
	}
	hash := fnv.New64a()
	hash.Write([]byte(seed))
	h := &harness{
		t:        t,
		b:        b,
		dt:       dt,
		rng:      rand.New(rand.NewPCG(hash.Sum64(), 0x9e3779b97f4a7c15)),
		tracked:  map[*backend.Tensor]*tracked{},
		twinMode: twinMode,
		twin:     twin,
	}
	defer h.free()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v\n%s", key, r, debug.Stack())
			ok = false
		}
	}()
	c.run(h)
	if err := b.Sync(); err != nil {
		t.Errorf("%s: Sync: %v", key, err)
		return nil, false
	}
	h.checkUntouched()
	if !twinMode && twin != nil && h.twinPos != len(twin) {
		t.Errorf("%s: %d outputs checked, the float32 twin recorded %d", key, h.twinPos, len(twin))
	}
	return h.recorded, true
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

	// twinMode makes the tensors of dtype dt in F32 and records outputs
	// (see runHarness); twin is what such a run recorded, consumed in
	// order by check, twinPos the next one.
	twinMode bool
	recorded []twinOutput
	twin     []twinOutput
	twinPos  int
}

// twinOutput is one output of a float32 twin run: the check's label and the
// float32 values the op computed.
type twinOutput struct {
	label string
	vals  []float32
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
	store := dt // the tensor's dtype; the values are representable in dt
	if h.twinMode && dt == h.dt {
		store = backend.F32
	}
	if h.views && len(shape) > 0 {
		pshape := append([]int{shape[0] + 2*padRows}, shape[1:]...)
		tr.parent = h.b.New(store, pshape...)
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
		tr.parent = h.b.New(store, shape...)
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
	Close(h.t, name+" after Upload", h.b.Download(tr.parent), widen(tr.host), store, Tol{Exact: true})
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

// check compares t's elements with want under tol, in t's dtype, and an
// output in BF16 or F16 with its float32 twin's rounded once (see
// roundedOnce). In a twin run it records t's elements instead.
func (h *harness) check(what string, t *backend.Tensor, want []float64, tol Tol) bool {
	h.t.Helper()
	tr := h.tracked[t]
	label := fmt.Sprintf("%s %s%v", what, tr.name, t.Shape)
	got := h.download(t)
	if h.twinMode {
		h.recorded = append(h.recorded, twinOutput{label, got})
		return true
	}
	ok := Close(h.t, label, got, want, t.DType, tol)
	if h.twin == nil {
		return ok
	}
	if h.twinPos >= len(h.twin) || h.twin[h.twinPos].label != label {
		panic(fmt.Sprintf("backendtest: check %q has no float32 twin in the same place", label))
	}
	f := h.twin[h.twinPos].vals
	h.twinPos++
	if t.DType == backend.F32 {
		return ok
	}
	var window []float64
	if r, is := h.b.(ReorderedSums); is && r.ReorderedSums(t.DType) {
		window = make([]float64, len(want))
		k := math.Sqrt(float64(max(tol.K, 1)))
		for i := range want {
			mag := math.Abs(want[i])
			if tol.Mag != nil {
				mag = tol.Mag[i]
			}
			window[i] = lambda * k * u32 * mag
		}
	}
	return roundedOnce(h.t, label, got, f, t.DType, window) && ok
}

// ReorderedSums is implemented by a backend whose products in some dtype
// sum in another order than its float32 kernels do (matrix units: AMX
// tiles, tensor cores), so that its float32 twin's result f and the sum it
// rounds differ by float32's rounding error, not by nothing. Where
// ReorderedSums(dt) is true the rounded-once check accepts, for an output
// in dt, the rounding of any value within the case's float32 error window
// around f (λ·sqrt(K)·2⁻²⁴·mag, the tolerance's float32 term): a neighbour
// of f's rounding only where f lies that close to a boundary between two
// values of dt. A truncating or twice-rounding kernel is still off at
// about half of all elements, far from any boundary, and fails.
type ReorderedSums interface {
	ReorderedSums(dt backend.DType) bool
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

// roundedOnce reports (with t.Errorf) whether every got[i], an output
// stored in dt (BF16 or F16), is f[i] rounded to nearest even, where f[i]
// is the float32 result of the same op on the same inputs in float32
// tensors: the contract's "computes in float32 and rounds once, on store".
// An output rounded twice, truncated, or computed in a narrower type fails
// even when it is within an ulp of the oracle.
//
// One case is let through: f[i] exactly halfway between two values of dt.
// The contract allows accumulating "in float32 or better"; a kernel whose
// value before the store is wider than float32 rounds it once to dt, and
// once to float32 in its F32 twin, and at such a tie the two roundings may
// part (f[i] is then that value rounded to float32, and either neighbour
// may be its rounding to dt). Away from ties no wider value rounds to
// f[i] and to another dt value than f[i] does, so the check is exact.
//
// window (nil: none) widens the check for a backend that sums in another
// order (ReorderedSums): got[i] may also be the rounding of any value in
// [f[i] − window[i], f[i] + window[i]] (rounding is monotonic, so those are
// the dt values from the rounding of one end to that of the other).
func roundedOnce(t testing.TB, name string, got, f []float32, dt backend.DType, window []float64) bool {
	t.Helper()
	if len(got) != len(f) {
		t.Errorf("%s: got %d elements, the float32 twin %d", name, len(got), len(f))
		return false
	}
	var bad []int
	ties, reordered := 0, 0
	for i := range got {
		g, r := float64(got[i]), roundTo(dt, float64(f[i]))
		if equalValues(g, r, true) {
			continue
		}
		if x := float64(f[i]); tie(dt, x) &&
			(g == roundTo(dt, math.Nextafter(x, math.Inf(-1))) || g == roundTo(dt, math.Nextafter(x, math.Inf(1)))) {
			ties++
			continue
		}
		if x := float64(f[i]); window != nil && roundTo(dt, x-window[i]) <= g && g <= roundTo(dt, x+window[i]) {
			reordered++
			continue
		}
		bad = append(bad, i)
	}
	if len(bad) == 0 {
		return true
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %d of %d elements are not the float32 result rounded once to %v (%d more at ties, %d within the reordered sums' window)\n",
		name, len(bad), len(got), dt, ties, reordered)
	for j, i := range bad {
		if j == 8 {
			fmt.Fprintf(&sb, "\t... %d more\n", len(bad)-8)
			break
		}
		r := roundTo(dt, float64(f[i]))
		fmt.Fprintf(&sb, "\t[%d] got %.9g, float32 result %.9g rounds to %.9g (%+.3g ulps of %v)\n",
			i, got[i], f[i], r, (float64(got[i])-r)/ulp(dt, r), dt)
	}
	t.Error(sb.String())
	return false
}

// tie reports whether x lies exactly halfway between two finite values of dt.
func tie(dt backend.DType, x float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false
	}
	q := ulp(dt, x)
	return math.Mod(math.Abs(x), q) == q/2
}

// ulp is the spacing of dt's values at x (the subnormal quantum below the
// normal range).
func ulp(dt backend.DType, x float64) float64 {
	mant, emin := 24, -126
	switch dt {
	case backend.BF16:
		mant = 8
	case backend.F16:
		mant, emin = 11, -14
	}
	_, e := math.Frexp(x)
	return math.Ldexp(1, max(e-1, emin)-(mant-1))
}

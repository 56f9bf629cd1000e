package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/parallel"
	"github.com/golf-ml/golf/internal/vmath"
)

// ceShapes checks logits (N, V) against targets (N) and returns N, V and
// the targets.
func ceShapes(op string, logits, targets *backend.Tensor) (N, V int, tg []int32) {
	s := wantRank(op, "logits", logits, 2)
	N, V = s[0], s[1]
	wantShape(op, "targets", targets, N)
	return N, V, wantIDs(op, "targets", targets, V)
}

// ceLoop is the body of SoftcapCEForward and SoftcapCEBackward over rows.
// A row takes one pass over its logits (vmath.SoftcapExp: the softcap,
// the exponentials and their sum, read straight from F32 or BF16 storage)
// and, backward, one over the row's e and g in scratch (vmath.CEGrad,
// written straight into F32 or BF16 storage). 16-bit logits shifted by
// the cap take their e and e·g from tables of all 65536 patterns instead
// (ceTables): the same bits, a lookup an element.
type ceLoop struct {
	b               *Backend
	backward        bool // dlogits (and loss too where loss is not nil)
	V               int
	cap, scale      float32
	logits, dlogits *backend.Tensor
	tg              []int32
	loss            []float32
	tab             *ceTables // the tables of this call's logits, or nil
	xf, df          []float32 // the logits' and dlogits' F32 storage, or nil
	xh, dh          []uint16  // their BF16 or F16 storage, or nil
	tabs            ceTables  // kept from call to call
}

// ceTables are SoftcapExp's e and float32(e·g) for every pattern of 16-bit
// logits of dtype dt at cap c, shifted by c.
type ceTables struct {
	dt      backend.DType
	c       float32
	te, teg []float32
}

// tables returns the tables for this call's logits, building them if
// they are not those kept (b.mu held), or nil where the rows are computed:
// F32 logits, a cap that does not shift by itself, or too few logits to
// pay for a build (65536 elements, about as many as one call of that
// size computes).
func (l *ceLoop) tables(N int) *ceTables {
	dt, c := l.logits.DType, l.cap
	if dt != backend.BF16 && dt != backend.F16 {
		return nil
	}
	if _, ok := vmath.SoftcapShift(c); !ok {
		return nil
	}
	t := &l.tabs
	if t.te != nil && t.dt == dt && t.c == c {
		return t
	}
	if N*l.V < vmath.CETableLen {
		return nil
	}
	all := make([]uint16, vmath.CETableLen)
	for i := range all {
		all[i] = uint16(i)
	}
	te, g := make([]float32, vmath.CETableLen), make([]float32, vmath.CETableLen)
	if dt == backend.BF16 {
		vmath.SoftcapExpBF16(te, g, all, c, c)
	} else {
		x := make([]float32, vmath.CETableLen)
		vmath.FromF16(x, all)
		vmath.SoftcapExp(te, g, x, c, c)
	}
	for i := range g {
		g[i] *= te[i]
	}
	*t = ceTables{dt: dt, c: c, te: te, teg: g}
	return t
}

func (l *ceLoop) Run(w, lo, hi int) {
	b, V, c := l.b, l.V, l.cap
	e := b.buf(w, 1, V)
	var g []float32
	if l.backward {
		g = b.buf(w, 2, V)
	}
	// Forward, the losses of ceLogBatch rows at a time: their logs run
	// back to back, where their latencies overlap.
	var sums [ceLogBatch]float64
	var shifts, zts [ceLogBatch]float32
	for n := lo; n < hi; n++ {
		t := int(l.tg[n])
		var s float32
		var sum float64
		var et float32
		if l.tab != nil {
			s = c
			x := l.xh[n*V : (n+1)*V]
			sum = vmath.SoftcapExpTable(nil, x, l.tab.te)
			et = l.tab.te[x[t]]
		} else {
			s = l.shift(w, n)
			sum = l.softcapExp(w, n, e, g, s)
			et = e[t]
		}
		// The target's logit, read once the row is in cache and before
		// grad may write over it.
		zt, gt := vmath.SoftcapZ(l.logit(n*V+t), c)
		if l.loss != nil {
			k := (n - lo) % ceLogBatch
			sums[k], shifts[k], zts[k] = sum, s, zt
			if k == ceLogBatch-1 || n == hi-1 {
				for j := range k + 1 {
					l.loss[n-k+j] = float32(float64(shifts[j]) + math.Log(sums[j]) - float64(zts[j]))
				}
			}
		}
		if !l.backward {
			continue
		}
		l.grad(w, n, e, g, float32(1/sum))
		// The target's p − 1 in float64: it cancels as p nears 1.
		l.store(n*V+t, float32(float64(l.scale)*(float64(et)/sum-1))*gt)
	}
}

// shift returns row n's exponent shift: the cap where vmath.SoftcapShift
// allows it, else the row's largest softcapped logit.
func (l *ceLoop) shift(w, n int) float32 {
	if s, ok := vmath.SoftcapShift(l.cap); ok {
		return s
	}
	b, V := l.b, l.V
	x := view(l.logits, n*V, V, b.buf(w, 0, V))
	return vmath.Softcap(b.buf(w, 3, V), b.buf(w, 4, V), x, l.cap)
}

// softcapExp runs vmath.SoftcapExp over row n of the logits into e and g
// (g nil forward) and returns Σ e.
func (l *ceLoop) softcapExp(w, n int, e, g []float32, s float32) float64 {
	V := l.V
	switch l.logits.DType {
	case backend.F32:
		return vmath.SoftcapExp(e, g, l.xf[n*V:(n+1)*V], l.cap, s)
	case backend.BF16:
		return vmath.SoftcapExpBF16(e, g, l.xh[n*V:(n+1)*V], l.cap, s)
	}
	x := view(l.logits, n*V, V, l.b.buf(w, 0, V))
	return vmath.SoftcapExp(e, g, x, l.cap, s)
}

// grad writes row n of dlogits with q = 1/Σ e, from e and g or through
// the tables (every class; the caller then stores the target's). With
// the tables it reads the row's logits as it goes, so it runs after the
// target's logit was read.
func (l *ceLoop) grad(w, n int, e, g []float32, q float32) {
	V := l.V
	switch {
	case l.tab != nil && l.dlogits.DType == backend.F32:
		vmath.CEGradTable(l.df[n*V:(n+1)*V], l.xh[n*V:(n+1)*V], l.tab.teg, q, l.scale)
	case l.tab != nil && l.dlogits.DType == backend.BF16:
		vmath.CEGradTableBF16(l.dh[n*V:(n+1)*V], l.xh[n*V:(n+1)*V], l.tab.teg, q, l.scale)
	case l.tab != nil && l.dlogits.DType == backend.F16:
		vmath.CEGradTableF16(l.dh[n*V:(n+1)*V], l.xh[n*V:(n+1)*V], l.tab.teg, q, l.scale)
	case l.dlogits.DType == backend.F32:
		vmath.CEGrad(l.df[n*V:(n+1)*V], e, g, q, l.scale)
	case l.dlogits.DType == backend.BF16:
		vmath.CEGradBF16(l.dh[n*V:(n+1)*V], e, g, q, l.scale)
	default:
		d := l.b.buf(w, 0, V)
		vmath.CEGrad(d, e, g, q, l.scale)
		storeRange(l.dlogits, n*V, d)
	}
}

// logit is element i of the logits as float32.
func (l *ceLoop) logit(i int) float32 {
	switch l.logits.DType {
	case backend.F32:
		return l.xf[i]
	case backend.BF16:
		return math.Float32frombits(uint32(l.xh[i]) << 16)
	}
	var x [1]float32
	loadRange(l.logits, i, x[:])
	return x[0]
}

// ceLogBatch is how many rows' losses the forward pass finishes together.
const ceLogBatch = 8

// storage sets the loop's views of the logits' and dlogits' storage.
func (l *ceLoop) storage() {
	switch l.logits.DType {
	case backend.F32:
		l.xf = f32s(l.logits)
	case backend.BF16, backend.F16:
		l.xh = u16s(l.logits)
	}
	if l.dlogits == nil {
		return
	}
	switch l.dlogits.DType {
	case backend.F32:
		l.df = f32s(l.dlogits)
	case backend.BF16, backend.F16:
		l.dh = u16s(l.dlogits)
	}
}

// store rounds v into element i of dlogits.
func (l *ceLoop) store(i int, v float32) {
	storeRange(l.dlogits, i, []float32{v})
}

// runCE runs the cross-entropy loop over N rows (b.mu held).
func (b *Backend) runCE(N int, l ceLoop) {
	b.begin()
	c := &b.loops.ce
	l.tabs = c.tabs
	*c = l
	c.b = b
	c.storage()
	c.tab = c.tables(N)
	parallel.For(N, 4, c)
	*c = ceLoop{tabs: c.tabs}
}

// SoftcapCEForward: per row, z = cap·tanh(logits/cap) in float32, then
//
//	loss[n] = logsumexp(z[n,:]) − z[n,targets[n]]
//	loss F32 (N), logits CD (N, V), targets I32 (N)
//
// In float32 unless noted, with z = vmath.SoftcapZ(logits, cap) and the
// shift s = cap for 0 < cap ≤ vmath.SoftcapShiftMax (|z| ≤ cap, so
// no exponential overflows or leaves the normal range), else the row's
// largest cap·Tanh32(logits/cap) (vmath.Softcap; within a few ulp of max z):
//
//	S = Σ_v vmath.ExpCE(z[n,v] − s)           (float64, vmath.SoftcapExp's order)
//	loss[n] = float32(s + log S − z[n,targets[n]])  (float64)
func (b *Backend) SoftcapCEForward(loss, logits, targets *backend.Tensor, cap float32) {
	const op = "SoftcapCEForward"
	wantCD(op, []string{"logits"}, logits)
	wantF32(op, []string{"loss"}, loss)
	N, V, tg := ceShapes(op, logits, targets)
	wantShape(op, "loss", loss, N)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runCE(N, ceLoop{V: V, cap: cap, logits: logits, tg: tg, loss: f32s(loss)})
}

// SoftcapCEBackward, with p = softmax(z):
//
//	dlogits[n,v] = scale·(p[n,v] − [v = targets[n]])·(1 − tanh²(logits[n,v]/cap))
//	dlogits CD (N, V), overwritten; logits CD (N, V), targets I32 (N)
//
// scale is dLoss/dloss[n]. With e = ExpCE(z − s), S and the shift s as in
// SoftcapCEForward, g the 1 − tanh² of vmath.SoftcapZ and q = float32(1/S),
// each product rounded to float32:
//
//	dlogits[n,v] = ((e·g)·q)·scale                v ≠ targets[n]
//	dlogits[n,t] = float32(scale·(e/S − 1))·g     (the first product in float64)
//
// dlogits may share storage with logits.
func (b *Backend) SoftcapCEBackward(dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	const op = "SoftcapCEBackward"
	wantCD(op, []string{"dlogits", "logits"}, dlogits, logits)
	N, V, tg := ceShapes(op, logits, targets)
	wantShape(op, "dlogits", dlogits, N, V)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runCE(N, ceLoop{backward: true, V: V, cap: cap, scale: scale, logits: logits, dlogits: dlogits, tg: tg})
}

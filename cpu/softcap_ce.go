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

// softcapRow writes th = tanh(logits/cap) and z = cap·th (float32) and
// e = exp(z − max z), and returns max z and Σ e (summed in float64).
func softcapRow(th, z, e, logits []float32, cap float32) (m float32, sum float64) {
	m = vmath.Softcap(th, z, logits, cap)
	return m, vmath.ExpSub(e, z, m)
}

// ceLoop is the body of SoftcapCEForward and SoftcapCEBackward over rows.
type ceLoop struct {
	b               *Backend
	backward        bool
	V               int
	cap, scale      float32
	logits, dlogits *backend.Tensor
	tg              []int32
	loss            []float32
}

func (l *ceLoop) Run(w, lo, hi int) {
	b, V := l.b, l.V
	th, z := b.buf(w, 1, V), b.buf(w, 2, V)
	for n := lo; n < hi; n++ {
		row := view(l.logits, n*V, V, b.buf(w, 0, V))
		if !l.backward {
			m, sum := softcapRow(th, z, b.buf(w, 3, V), row, l.cap)
			l.loss[n] = float32(float64(m) + math.Log(sum) - float64(z[l.tg[n]]))
			continue
		}
		// The row's logits are read into th and z before os (possibly the
		// same storage when F32) is written.
		os := dest(l.dlogits, n*V, V, b.buf(w, 3, V))
		m, sum := softcapRow(th, z, os, row, l.cap)
		lse := float64(m) + math.Log(sum)
		vmath.SoftcapGrad(os, z, th, lse, l.scale)
		t := l.tg[n]
		p := vmath.Exp32(float32(float64(z[t])-lse)) - 1
		os[t] = float32(l.scale*p) * (1 - float32(th[t]*th[t]))
		flush(l.dlogits, n*V, os)
	}
}

// runCE runs the cross-entropy loop over N rows (b.mu held).
func (b *Backend) runCE(N int, l ceLoop) {
	b.begin()
	c := &b.loops.ce
	*c = l
	c.b = b
	parallel.For(N, 4, c)
	*c = ceLoop{}
}

// SoftcapCEForward: per row, z = cap·tanh(logits/cap) in float32, then
//
//	loss[n] = logsumexp(z[n,:]) − z[n,targets[n]]
//	loss F32 (N), logits CD (N, V), targets I32 (N)
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
// scale is dLoss/dloss[n].
func (b *Backend) SoftcapCEBackward(dlogits, logits, targets *backend.Tensor, cap, scale float32) {
	const op = "SoftcapCEBackward"
	wantCD(op, []string{"dlogits", "logits"}, dlogits, logits)
	N, V, tg := ceShapes(op, logits, targets)
	wantShape(op, "dlogits", dlogits, N, V)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runCE(N, ceLoop{backward: true, V: V, cap: cap, scale: scale, logits: logits, dlogits: dlogits, tg: tg})
}

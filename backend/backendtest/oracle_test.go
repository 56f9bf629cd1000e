package backendtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// These tests prove the oracle: every backward against central finite
// differences of its forward (L = Σ dout·forward(inputs)), and the other
// ops against properties with known answers.

func randn(r *rand.Rand, n int, sigma float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = sigma * r.NormFloat64()
	}
	return v
}

// scaled returns k·v (the tests' own, not the oracle's scale).
func scaled(v []float64, k float64) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = k * x
	}
	return r
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// checkGrad compares grad with central differences of loss at every element
// of x (which loss reads).
func checkGrad(t *testing.T, name string, x, grad []float64, loss func() float64) {
	t.Helper()
	const step = 1e-5
	bad := 0
	for i := range x {
		orig := x[i]
		x[i] = orig + step
		lp := loss()
		x[i] = orig - step
		lm := loss()
		x[i] = orig
		fd := (lp - lm) / (2 * step)
		if math.Abs(fd-grad[i]) > 1e-6*(1+math.Abs(grad[i])) {
			if bad < 5 {
				assert.Failf(t, "backward disagrees with the finite difference", "%s[%d]: backward %.10g, finite difference %.10g", name, i, grad[i], fd)
			}
			bad++
		}
	}
	assert.Zero(t, bad, "%s: elements (of %d) that disagree", name, len(x))
}

func TestOracleEmbeddingGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	N, V, C := 9, 4, 5
	ids := []int{3, 0, 1, 3, 3, 2, 0, 1, 3}
	w, dout := randn(r, V*C, 1), randn(r, N*C, 1)
	out := make([]float64, N*C)
	loss := func() float64 { embeddingForward(out, ids, w, C); return dot(dout, out) }
	dw := make([]float64, V*C)
	embeddingBackward(dw, ids, dout, C)
	checkGrad(t, "dw", w, dw, loss)
}

func TestOracleRMSNormGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, C := range []int{1, 2, 7, 33} {
		N := 3
		x, dout, dres := randn(r, N*C, 1), randn(r, N*C, 1), randn(r, N*C, 1)
		out, rstd := make([]float64, N*C), make([]float64, N)
		loss := func() float64 { rmsNormForward(out, rstd, x, N, C); return dot(dout, out) }
		loss()
		dx := make([]float64, N*C)
		rmsNormBackward(dx, dout, x, rstd, nil, N, C)
		checkGrad(t, "dx", x, dx, loss)
		loss() // restore out and rstd at x
		// dres adds through unchanged.
		dx2 := make([]float64, N*C)
		rmsNormBackward(dx2, dout, x, rstd, dres, N, C)
		for i := range dx2 {
			dx2[i] -= dres[i]
		}
		require.InDeltaSlice(t, dx, dx2, 1e-12, "C=%d: dres not added", C)
		// Each output row has mean square ms/(ms+eps).
		for n := 0; n < N; n++ {
			var ms, mo float64
			for c := 0; c < C; c++ {
				ms += x[n*C+c] * x[n*C+c] / float64(C)
				mo += out[n*C+c] * out[n*C+c] / float64(C)
			}
			assert.InDelta(t, ms/(ms+rmsNormEps), mo, 1e-12, "C=%d row %d: mean square", C, n)
		}
	}
}

func TestOracleResidMixGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	N, C := 4, 6
	x, x0, mix, dout := randn(r, N*C, 1), randn(r, N*C, 1), randn(r, 2*C, 1), randn(r, N*C, 1)
	out := make([]float64, N*C)
	loss := func() float64 { residMixForward(out, x, x0, mix, N, C); return dot(dout, out) }
	dx, dx0, dmix := make([]float64, N*C), make([]float64, N*C), make([]float64, 2*C)
	residMixBackward(dx, dx0, dmix, dout, x, x0, mix, N, C)
	checkGrad(t, "dx", x, dx, loss)
	checkGrad(t, "dx0", x0, dx0, loss)
	checkGrad(t, "dmix", mix, dmix, loss)
}

func TestOracleLinearGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	N, O, I := 5, 3, 7
	x, w, dout := randn(r, N*I, 1), randn(r, O*I, 1), randn(r, N*O, 1)
	out := make([]float64, N*O)
	loss := func() float64 { linearForward(out, x, w, N, O, I); return dot(dout, out) }
	dx, dw := make([]float64, N*I), make([]float64, O*I)
	linearBackward(dx, dw, dout, x, w, N, O, I, false)
	checkGrad(t, "dx", x, dx, loss)
	checkGrad(t, "dw", w, dw, loss)
	// accumulate adds into dx; dw always adds.
	dx2, dw2 := clone(dx), clone(dw)
	linearBackward(dx2, dw2, dout, x, w, N, O, I, true)
	assert.InDeltaSlice(t, scaled(dx, 2), dx2, 1e-12, "accumulate: dx")
	assert.InDeltaSlice(t, scaled(dw, 2), dw2, 1e-12, "dw after two calls")
}

func TestOracleQKNormRopeGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, withGain := range []bool{true, false} {
		B, T, Hx, D := 2, 5, 3, 8
		N := B * T
		x, dout := randn(r, N*Hx*D, 1), randn(r, N*Hx*D, 1)
		var gain []float64
		if withGain {
			gain = randn(r, Hx, 1)
		}
		out, rstd := make([]float64, N*Hx*D), make([]float64, N*Hx)
		loss := func() float64 {
			qkNormRopeForward(out, rstd, x, gain, N, Hx, D, T, 100)
			return dot(dout, out)
		}
		loss()
		dx := make([]float64, N*Hx*D)
		var dgain []float64
		if withGain {
			dgain = make([]float64, Hx)
		}
		qkNormRopeBackward(dx, dgain, dout, x, rstd, gain, N, Hx, D, T, 100)
		checkGrad(t, "dx", x, dx, loss)
		if withGain {
			checkGrad(t, "dgain", gain, dgain, loss)
		}
	}
}

func TestOracleRopeProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	N, Hx, D, T := 6, 2, 8, 3
	x := randn(r, N*Hx*D, 1)
	gain := []float64{2, -0.5}
	out, rstd := make([]float64, N*Hx*D), make([]float64, N*Hx)
	qkNormRopeForward(out, rstd, x, gain, N, Hx, D, T, 10000)
	for n := 0; n < N; n++ {
		for h := 0; h < Hx; h++ {
			row := (n*Hx + h) * D
			var nu, no float64
			for d := 0; d < D; d++ {
				u := x[row+d] * rstd[n*Hx+h]
				nu += u * u
				no += out[row+d] * out[row+d]
				// Position 0 (every T rows) is not rotated.
				if n%T == 0 {
					require.InDelta(t, gain[h]*u, out[row+d], 1e-12, "row %d head %d: position 0 rotated", n, h)
				}
			}
			// A rotation keeps the norm: ‖out‖ = |g|·‖u‖.
			assert.InDelta(t, math.Abs(gain[h])*math.Sqrt(nu), math.Sqrt(no), 1e-12, "row %d head %d: norm", n, h)
		}
	}
	// Position 1, pair 0 rotates by exactly 1 radian (θ_0 = 1).
	row := 1 * Hx * D
	u0, u4 := x[row]*rstd[Hx], x[row+4]*rstd[Hx]
	assert.InDelta(t, gain[0]*(u0*math.Cos(1)-u4*math.Sin(1)), out[row], 1e-12, "position 1: out[0]")
}

func TestOracleAttentionGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ B, T, H, Hkv, D int }{{2, 4, 4, 2, 3}, {1, 5, 2, 1, 4}, {3, 1, 1, 1, 2}} {
		N := c.B * c.T
		q, k, v := randn(r, N*c.H*c.D, 1), randn(r, N*c.Hkv*c.D, 1), randn(r, N*c.Hkv*c.D, 1)
		dout := randn(r, N*c.H*c.D, 1)
		out, lse := make([]float64, N*c.H*c.D), make([]float64, N*c.H)
		loss := func() float64 {
			attentionForward(out, lse, q, k, v, N, c.H, c.Hkv, c.D, c.T)
			return dot(dout, out)
		}
		loss()
		dq, dk, dv := make([]float64, len(q)), make([]float64, len(k)), make([]float64, len(v))
		attentionBackward(dq, dk, dv, dout, q, k, v, out, lse, N, c.H, c.Hkv, c.D, c.T)
		checkGrad(t, "dq", q, dq, loss)
		checkGrad(t, "dk", k, dk, loss)
		checkGrad(t, "dv", v, dv, loss)
	}
}

func TestOracleAttentionProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	N, T, H, Hkv, D := 6, 3, 2, 1, 4
	q := make([]float64, N*H*D) // zero queries: uniform weights over the prefix
	k, v := randn(r, N*Hkv*D, 1), randn(r, N*Hkv*D, 1)
	out, lse := make([]float64, N*H*D), make([]float64, N*H)
	attentionForward(out, lse, q, k, v, N, H, Hkv, D, T)
	for tt := 0; tt < N; tt++ {
		first := tt - tt%T
		cnt := float64(tt - first + 1)
		for h := 0; h < H; h++ {
			assert.InDelta(t, math.Log(cnt), lse[tt*H+h], 1e-12, "t=%d: lse, log of the prefix length", tt)
			for d := 0; d < D; d++ {
				var mean float64
				for u := first; u <= tt; u++ {
					mean += v[u*D+d] / cnt
				}
				assert.InDelta(t, mean, out[(tt*H+h)*D+d], 1e-12, "t=%d h=%d d=%d: out, the prefix mean", tt, h, d)
			}
		}
	}
}

func TestOracleScaledAddGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	N, C := 3, 5
	x, y, s, dout := randn(r, N*C, 1), randn(r, N*C, 1), randn(r, C, 1), randn(r, N*C, 1)
	out := make([]float64, N*C)
	loss := func() float64 { scaledAddForward(out, x, y, s, N, C); return dot(dout, out) }
	dy, ds := make([]float64, N*C), make([]float64, C)
	scaledAddBackward(dy, ds, dout, y, s, N, C)
	checkGrad(t, "dy", y, dy, loss)
	checkGrad(t, "ds", s, ds, loss)
	checkGrad(t, "dx", x, dout, loss)
}

func TestOracleReluSqGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	x, dout := randn(r, 40, 1), randn(r, 40, 1)
	out := make([]float64, 40)
	loss := func() float64 { reluSqForward(out, x); return dot(dout, out) }
	dx := make([]float64, 40)
	reluSqBackward(dx, dout, x)
	checkGrad(t, "dx", x, dx, loss)
}

func TestOracleSoftcapCEGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	N, V, scale := 4, 7, 0.3
	for _, capv := range []float64{30, 2} {
		logits := randn(r, N*V, 3)
		targets := []int{0, 6, 3, 3}
		loss := make([]float64, N)
		total := func() float64 {
			softcapCEForward(loss, logits, targets, N, V, capv)
			var s float64
			for _, l := range loss {
				s += scale * l
			}
			return s
		}
		dl := make([]float64, N*V)
		softcapCEBackward(dl, logits, targets, N, V, capv, scale)
		checkGrad(t, "dlogits", logits, dl, total)
	}
	// Equal logits: every row's loss is log V.
	logits := make([]float64, 2*5)
	loss := make([]float64, 2)
	softcapCEForward(loss, logits, []int{1, 4}, 2, 5, 30)
	assert.InDeltaSlice(t, []float64{math.Log(5), math.Log(5)}, loss, 1e-12, "loss of equal logits")
}

func TestOracleAdam(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	const lr, b1, b2, eps = 0.05, 0.9, 0.95, 1e-8
	// With a constant gradient from zero state, bias correction makes
	// m̂ = g and v̂ = g² at every step, so each step moves p by lr·g/(|g|+eps).
	g := randn(r, 9, 0.1)
	p0 := randn(r, 9, 1)
	p, m, v := clone(p0), make([]float64, 9), make([]float64, 9)
	for step := 1; step <= 4; step++ {
		adamStep(p, g, m, v, lr, b1, b2, eps, step)
		want := make([]float64, len(p))
		for i := range p {
			want[i] = p0[i] - float64(step)*lr*g[i]/(math.Abs(g[i])+eps)
		}
		require.InDeltaSlice(t, want, p, 1e-12, "step %d", step)
	}
}

func TestOracleMuonMomentum(t *testing.T) {
	g := []float64{1, -2, 0.5}
	buf, geff := make([]float64, 3), make([]float64, 3)
	const mu = 0.9
	muonMomentum(buf, geff, g, mu)
	muonMomentum(buf, geff, g, mu)
	for i, gi := range g {
		wantBuf := (1 + mu) * gi
		assert.InDelta(t, wantBuf, buf[i], 1e-15, "buf[%d]", i)
		assert.InDelta(t, gi+mu*wantBuf, geff[i], 1e-15, "geff[%d]", i)
	}
}

// TestOracleNewtonSchulz: for g = α·Q with orthonormal rows, every singular
// value of X is the same, so the iteration reduces to the scalar quintic
// σ ← aσ + bσ³ + cσ⁵ and the output is σ_steps·Q. Tall inputs must give the
// transpose of the wide result.
func TestOracleNewtonSchulz(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, sh := range []struct{ R, C int }{{3, 7}, {5, 5}, {1, 4}} {
		R, C := sh.R, sh.C
		q := randn(r, R*C, 1)
		for i := 0; i < R; i++ { // Gram–Schmidt on the rows
			for j := 0; j < i; j++ {
				d := dot(q[i*C:(i+1)*C], q[j*C:(j+1)*C])
				for k := 0; k < C; k++ {
					q[i*C+k] -= d * q[j*C+k]
				}
			}
			n := math.Sqrt(dot(q[i*C:(i+1)*C], q[i*C:(i+1)*C]))
			for k := 0; k < C; k++ {
				q[i*C+k] /= n
			}
		}
		const alpha = 0.3
		g := scaled(q, alpha)
		for _, steps := range []int{0, 1, 5} {
			sigma := alpha / (alpha*math.Sqrt(float64(R)) + nsEps)
			for range steps {
				sigma = nsA*sigma + nsB*math.Pow(sigma, 3) + nsC*math.Pow(sigma, 5)
			}
			out := make([]float64, R*C)
			newtonSchulz(out, g, R, C, steps)
			require.InDeltaSlice(t, scaled(q, sigma), out, 1e-12, "%dx%d steps %d", R, C, steps)
			// The transposed input gives the transposed output.
			gt, outT := make([]float64, R*C), make([]float64, R*C)
			for i := 0; i < R; i++ {
				for j := 0; j < C; j++ {
					gt[j*R+i] = g[i*C+j]
				}
			}
			newtonSchulz(outT, gt, C, R, steps)
			back := make([]float64, R*C)
			for i := 0; i < R; i++ {
				for j := 0; j < C; j++ {
					back[i*C+j] = outT[j*R+i]
				}
			}
			require.InDeltaSlice(t, out, back, 1e-12, "%dx%d steps %d: the tall result transposed", R, C, steps)
		}
	}
}

func TestOracleElementwise(t *testing.T) {
	x := []float64{1, math.NaN(), math.Inf(-1), -2, 0}
	dst := []float64{10}
	reduce(dst, x, backend.ReduceNonFinite)
	assert.Equal(t, 12.0, dst[0], "10 + the count of non-finite values")
	dst = []float64{1}
	reduce(dst, []float64{1, -2, 3}, backend.ReduceSum)
	reduce(dst, []float64{1, -2, 3}, backend.ReduceSumSquares)
	assert.Equal(t, 1.0+2+14, dst[0], "1 + sum + sum of squares")
	a := []float64{1, 2}
	axpy(a, []float64{3, -1}, 2)
	scale(a, 0.5)
	assert.Equal(t, []float64{3.5, 0}, a, "axpy then scale")
}

// TestRoundTo checks the oracle's rounding against the backend package's
// (an independent bit-level implementation) on every 16-bit pattern
// widened, on halfway points between neighbours, and on random floats.
func TestRoundTo(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, dt := range []backend.DType{backend.BF16, backend.F16} {
		check := func(f float32) {
			got, want := roundTo(dt, float64(f)), float64(backend.Round(dt, f))
			require.True(t, equalValues(got, want, true), "%v: roundTo(%g) = %g, backend.Round = %g", dt, f, got, want)
		}
		for b := 0; b < 1<<16; b++ {
			var f float32
			if dt == backend.BF16 {
				f = backend.BF16Float(uint16(b))
			} else {
				f = backend.F16Float(uint16(b))
			}
			check(f)
			// The midpoint to the next pattern is a tie.
			if !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) {
				var g float32
				if dt == backend.BF16 {
					g = backend.BF16Float(uint16(b + 1))
				} else {
					g = backend.F16Float(uint16(b + 1))
				}
				if mid := float32((float64(f) + float64(g)) / 2); !math.IsInf(float64(g), 0) && !math.IsNaN(float64(g)) {
					check(mid)
				}
			}
		}
		for range 200000 {
			check(math.Float32frombits(r.Uint32()))
		}
	}
	for range 1000 {
		x := r.NormFloat64()
		require.Equal(t, float64(float32(x)), roundTo(backend.F32, x), "F32: roundTo(%g)", x)
	}
}

// TestMagnitudesBound: every Σ|terms| a case uses must be at least the
// magnitude of the value it bounds.
func TestMagnitudesBound(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	atLeast := func(name string, mag, val []float64) {
		t.Helper()
		for i := range val {
			require.GreaterOrEqual(t, mag[i], math.Abs(val[i])*(1-1e-12), "%s[%d]: magnitude below |value|", name, i)
		}
	}
	N, C := 4, 9
	x, dout, dres := randn(r, N*C, 1), randn(r, N*C, 1), randn(r, N*C, 1)
	out, rstd, dx := make([]float64, N*C), make([]float64, N), make([]float64, N*C)
	rmsNormForward(out, rstd, x, N, C)
	rmsNormBackward(dx, dout, x, rstd, dres, N, C)
	atLeast("rmsnorm dx", rmsNormBackwardMag(dout, x, rstd, dres, N, C), dx)

	B, T, Hx, D := 2, 5, 3, 8
	N = B * T
	x, dout = randn(r, N*Hx*D, 1), randn(r, N*Hx*D, 1)
	gain := randn(r, Hx, 1)
	qo, qr, qdx, qdg := make([]float64, N*Hx*D), make([]float64, N*Hx), make([]float64, N*Hx*D), make([]float64, Hx)
	qkNormRopeForward(qo, qr, x, gain, N, Hx, D, T, 10000)
	qkNormRopeBackward(qdx, qdg, dout, x, qr, gain, N, Hx, D, T, 10000)
	mo, mdx, mdg := qkNormRopeMags(dout, x, qr, gain, N, Hx, D, T, 10000)
	atLeast("qk out", mo, qo)
	atLeast("qk dx", mdx, qdx)
	atLeast("qk dgain", mdg, qdg)

	H, Hkv := 4, 2
	q, k, v := randn(r, N*H*D, 1.5), randn(r, N*Hkv*D, 1), randn(r, N*Hkv*D, 1)
	dout = randn(r, N*H*D, 1)
	ao, al := make([]float64, N*H*D), make([]float64, N*H)
	attentionForward(ao, al, q, k, v, N, H, Hkv, D, T)
	dq, dk, dv := make([]float64, N*H*D), make([]float64, N*Hkv*D), make([]float64, N*Hkv*D)
	attentionBackward(dq, dk, dv, dout, q, k, v, ao, al, N, H, Hkv, D, T)
	m := attentionMags(q, k, v, dout, ao, al, N, H, Hkv, D, T)
	atLeast("attention out", m.out, ao)
	atLeast("attention lse", m.lse, al)
	atLeast("attention dq", m.dq, dq)
	atLeast("attention dk", m.dk, dk)
	atLeast("attention dv", m.dv, dv)

	V := 11
	logits := randn(r, N*V, 20)
	targets := make([]int, N)
	for i := range targets {
		targets[i] = r.IntN(V)
	}
	loss, dl := make([]float64, N), make([]float64, N*V)
	softcapCEForward(loss, logits, targets, N, V, 5)
	softcapCEBackward(dl, logits, targets, N, V, 5, -3)
	ml, md := softcapCEMags(logits, targets, N, V, 5, -3)
	atLeast("ce loss", ml, loss)
	atLeast("ce dlogits", md, dl)

	for _, sh := range [][3]int{{5, 9, 5}, {9, 5, 5}, {6, 6, 1}, {4, 4, 0}} {
		g := randn(r, sh[0]*sh[1], 0.02)
		ns := make([]float64, len(g))
		newtonSchulz(ns, g, sh[0], sh[1], sh[2])
		atLeast("newton-schulz", newtonSchulzMag(g, sh[0], sh[1], sh[2]), ns)
	}
}

package backendtest

// Float64 reference implementations of every op of the contract, written
// from the doc comments in backend/backend.go with plain loops and no code
// shared with any backend. Tensors are flat row-major []float64 with their
// dimensions passed alongside; token ids are []int. The dimension legend is
// the contract's (N rows, C width, H/Hkv heads, D head dim, V vocab, I/O
// linear input/output width, T = seqLen).
//
// Accumulating outputs (parameter gradients, Reduce's dst) are added into,
// exactly as the contract says; overwritten outputs are assigned.

import (
	"math"

	"github.com/golf-ml/golf/backend"
)

// The oracle's constants, written from train_gpt_mlx.py (rms_norm's eps;
// zeropower_newtonschulz5's a, b, c and eps) rather than taken from package
// backend, so that a wrong constant there fails the suite instead of
// agreeing with itself.
const (
	rmsNormEps    = 1e-6
	nsA, nsB, nsC = 3.4445, -4.7750, 2.0315
	nsEps         = 1e-7
)

// roundTo rounds x to dt with round-to-nearest-even, independently of the
// backend package: scale x so that one unit is the ulp of its binade (the
// subnormal quantum below the normal range), round to an even integer,
// scale back; a result above the largest finite value overflows to Inf.
func roundTo(dt backend.DType, x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	var mant, emin int // significand bits (with the implicit one), min normal exponent
	var maxFinite float64
	switch dt {
	case backend.F32:
		mant, emin, maxFinite = 24, -126, math.MaxFloat32
	case backend.BF16:
		mant, emin, maxFinite = 8, -126, 0x1.fep127
	case backend.F16:
		mant, emin, maxFinite = 11, -14, 65504
	default:
		panic("backendtest: roundTo a non-float dtype")
	}
	_, e := math.Frexp(x) // |x| in [2^(e-1), 2^e)
	quantum := math.Ldexp(1, max(e-1, emin)-(mant-1))
	r := math.RoundToEven(x/quantum) * quantum
	if math.Abs(r) > maxFinite {
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

// --- elementwise and reductions -------------------------------------------

// cast: dst = round_dt(src).
func cast(dst, src []float64, dt backend.DType) {
	for i, x := range src {
		dst[i] = roundTo(dt, x)
	}
}

// scale: x *= s.
func scale(x []float64, s float64) {
	for i := range x {
		x[i] *= s
	}
}

// axpy: dst += alpha·x.
func axpy(dst, x []float64, alpha float64) {
	for i := range x {
		dst[i] += alpha * x[i]
	}
}

// reduce adds Σx, Σx² or the number of non-finite elements into dst[0].
func reduce(dst, x []float64, kind backend.ReduceKind) {
	var s float64
	for _, v := range x {
		switch kind {
		case backend.ReduceSum:
			s += v
		case backend.ReduceSumSquares:
			s += v * v
		case backend.ReduceNonFinite:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				s++
			}
		}
	}
	dst[0] += s
}

// --- embedding --------------------------------------------------------------

// embeddingForward: out[n,:] = w[ids[n],:].  out (N,C), w (V,C)
func embeddingForward(out []float64, ids []int, w []float64, C int) {
	for n, id := range ids {
		copy(out[n*C:(n+1)*C], w[id*C:(id+1)*C])
	}
}

// embeddingBackward: dw[ids[n],:] += dout[n,:].  dw (V,C), dout (N,C)
func embeddingBackward(dw []float64, ids []int, dout []float64, C int) {
	for n, id := range ids {
		for c := 0; c < C; c++ {
			dw[id*C+c] += dout[n*C+c]
		}
	}
}

// --- rmsnorm ----------------------------------------------------------------

// rmsNormForward:
//
//	rstd[n] = 1/sqrt(mean_c x[n,c]² + eps);  out[n,c] = x[n,c]·rstd[n]
func rmsNormForward(out, rstd, x []float64, N, C int) {
	for n := 0; n < N; n++ {
		row := x[n*C : (n+1)*C]
		var ss float64
		for _, v := range row {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(C)+rmsNormEps)
		rstd[n] = r
		for c, v := range row {
			out[n*C+c] = v * r
		}
	}
}

// rmsNormBackward, with x̂ = x·rstd (rstd as given):
//
//	dx = dres + rstd·(dout − x̂·mean_c(dout·x̂));  dres nil means 0
func rmsNormBackward(dx, dout, x, rstd, dres []float64, N, C int) {
	for n := 0; n < N; n++ {
		r := rstd[n]
		var m float64
		for c := 0; c < C; c++ {
			m += dout[n*C+c] * x[n*C+c] * r
		}
		m /= float64(C)
		for c := 0; c < C; c++ {
			i := n*C + c
			v := r * (dout[i] - x[i]*r*m)
			if dres != nil {
				v += dres[i]
			}
			dx[i] = v
		}
	}
}

// --- resid mix --------------------------------------------------------------

// residMixForward: out[n,c] = mix[0,c]·x[n,c] + mix[1,c]·x0[n,c].
func residMixForward(out, x, x0, mix []float64, N, C int) {
	for n := 0; n < N; n++ {
		for c := 0; c < C; c++ {
			i := n*C + c
			out[i] = mix[c]*x[i] + mix[C+c]*x0[i]
		}
	}
}

// residMixBackward:
//
//	dx = mix[0]·dout;  dx0 += mix[1]·dout;  dmix[0] += Σn dout·x;  dmix[1] += Σn dout·x0
func residMixBackward(dx, dx0, dmix, dout, x, x0, mix []float64, N, C int) {
	for n := 0; n < N; n++ {
		for c := 0; c < C; c++ {
			i := n*C + c
			dx[i] = mix[c] * dout[i]
			dx0[i] += mix[C+c] * dout[i]
			dmix[c] += dout[i] * x[i]
			dmix[C+c] += dout[i] * x0[i]
		}
	}
}

// --- linear -----------------------------------------------------------------

// linearForward: out[n,o] = Σi x[n,i]·w[o,i].  out (N,O), x (N,I), w (O,I)
func linearForward(out, x, w []float64, N, O, I int) {
	for n := 0; n < N; n++ {
		for o := 0; o < O; o++ {
			var s float64
			for i := 0; i < I; i++ {
				s += x[n*I+i] * w[o*I+i]
			}
			out[n*O+o] = s
		}
	}
}

// linearBackward:
//
//	dx = dout·w (+ dx when accumulate);  dw += doutᵀ·x;  either may be nil
func linearBackward(dx, dw, dout, x, w []float64, N, O, I int, accumulate bool) {
	if dx != nil {
		for n := 0; n < N; n++ {
			for i := 0; i < I; i++ {
				var s float64
				for o := 0; o < O; o++ {
					s += dout[n*O+o] * w[o*I+i]
				}
				if accumulate {
					s += dx[n*I+i]
				}
				dx[n*I+i] = s
			}
		}
	}
	if dw != nil {
		for o := 0; o < O; o++ {
			for i := 0; i < I; i++ {
				var s float64
				for n := 0; n < N; n++ {
					s += dout[n*O+o] * x[n*I+i]
				}
				dw[o*I+i] += s
			}
		}
	}
}

// --- qk norm + rope + gain ----------------------------------------------------

// ropeAngle is p·θ_i with θ_i = base^(−2i/D), for row n (position n mod seqLen).
func ropeAngle(n, i, D, seqLen int, base float64) float64 {
	p := float64(n % seqLen)
	return p * math.Pow(base, -2*float64(i)/float64(D))
}

// qkNormRopeForward, per row n and head h of x (N,Hx,D):
//
//	rstd = 1/sqrt(mean_d x² + eps);  u = x·rstd
//	out[i]     = g·(u[i]·cos − u[i+D/2]·sin)
//	out[i+D/2] = g·(u[i]·sin + u[i+D/2]·cos)
//
// gain nil means g = 1.
func qkNormRopeForward(out, rstd, x, gain []float64, N, Hx, D, seqLen int, base float64) {
	half := D / 2
	for n := 0; n < N; n++ {
		for h := 0; h < Hx; h++ {
			row := (n*Hx + h) * D
			var ss float64
			for d := 0; d < D; d++ {
				ss += x[row+d] * x[row+d]
			}
			r := 1 / math.Sqrt(ss/float64(D)+rmsNormEps)
			rstd[n*Hx+h] = r
			g := 1.0
			if gain != nil {
				g = gain[h]
			}
			for i := 0; i < half; i++ {
				a := ropeAngle(n, i, D, seqLen, base)
				cos, sin := math.Cos(a), math.Sin(a)
				u1, u2 := x[row+i]*r, x[row+i+half]*r
				out[row+i] = g * (u1*cos - u2*sin)
				out[row+i+half] = g * (u1*sin + u2*cos)
			}
		}
	}
}

// qkNormRopeBackward: with u = x·rstd (rstd as given) and R the rotation,
//
//	du = g·Rᵀ·dout;  dx = rstd·(du − u·mean_d(du·u));  dgain[h] += Σ dout·(R·u)
//
// dgain is nil when gain is nil.
func qkNormRopeBackward(dx, dgain, dout, x, rstd, gain []float64, N, Hx, D, seqLen int, base float64) {
	half := D / 2
	du := make([]float64, D)
	for n := 0; n < N; n++ {
		for h := 0; h < Hx; h++ {
			row := (n*Hx + h) * D
			r := rstd[n*Hx+h]
			g := 1.0
			if gain != nil {
				g = gain[h]
			}
			var dg float64
			for i := 0; i < half; i++ {
				a := ropeAngle(n, i, D, seqLen, base)
				cos, sin := math.Cos(a), math.Sin(a)
				d1, d2 := dout[row+i], dout[row+i+half]
				u1, u2 := x[row+i]*r, x[row+i+half]*r
				du[i] = g * (d1*cos + d2*sin)
				du[i+half] = g * (-d1*sin + d2*cos)
				dg += d1*(u1*cos-u2*sin) + d2*(u1*sin+u2*cos)
			}
			if dgain != nil {
				dgain[h] += dg
			}
			var m float64
			for d := 0; d < D; d++ {
				m += du[d] * x[row+d] * r
			}
			m /= float64(D)
			for d := 0; d < D; d++ {
				dx[row+d] = r * (du[d] - x[row+d]*r*m)
			}
		}
	}
}

// --- attention ----------------------------------------------------------------

// attentionScores fills s[u] = scale·q[t,h]·k[u,hk] for u ≤ t of the
// sequence holding row t and returns the first row of that sequence.
func attentionScores(s, q, k []float64, t, h, H, Hkv, D, seqLen int) (first int) {
	first = t - t%seqLen
	hk := h / (H / Hkv)
	sc := 1 / math.Sqrt(float64(D))
	for u := first; u <= t; u++ {
		var dot float64
		for d := 0; d < D; d++ {
			dot += q[(t*H+h)*D+d] * k[(u*Hkv+hk)*D+d]
		}
		s[u-first] = sc * dot
	}
	return first
}

// attentionForward: causal GQA attention, full score rows in float64:
//
//	lse[t,h] = log Σu exp(s[t,u]);  out[t,h] = Σu exp(s[t,u]−lse)·v[u,hk]
func attentionForward(out, lse, q, k, v []float64, N, H, Hkv, D, seqLen int) {
	s := make([]float64, seqLen)
	for t := 0; t < N; t++ {
		for h := 0; h < H; h++ {
			first := attentionScores(s, q, k, t, h, H, Hkv, D, seqLen)
			hk := h / (H / Hkv)
			m := math.Inf(-1)
			for u := first; u <= t; u++ {
				m = max(m, s[u-first])
			}
			var z float64
			for u := first; u <= t; u++ {
				z += math.Exp(s[u-first] - m)
			}
			l := m + math.Log(z)
			lse[t*H+h] = l
			for d := 0; d < D; d++ {
				var o float64
				for u := first; u <= t; u++ {
					o += math.Exp(s[u-first]-l) * v[(u*Hkv+hk)*D+d]
				}
				out[(t*H+h)*D+d] = o
			}
		}
	}
}

// attentionBackward, with P = exp(s − lse) (lse and out as given) and
// δ[t,h] = Σd dout·out:
//
//	dv[u] = Σt P·dout[t];  dS = P·(dout·v[u] − δ)
//	dq[t] = scale·Σu dS·k[u];  dk[u] = scale·Σt dS·q[t]
//
// dk and dv sum over the query heads of each group. All three are overwritten.
func attentionBackward(dq, dk, dv, dout, q, k, v, out, lse []float64, N, H, Hkv, D, seqLen int) {
	clear(dq)
	clear(dk)
	clear(dv)
	sc := 1 / math.Sqrt(float64(D))
	s := make([]float64, seqLen)
	for t := 0; t < N; t++ {
		for h := 0; h < H; h++ {
			first := attentionScores(s, q, k, t, h, H, Hkv, D, seqLen)
			hk := h / (H / Hkv)
			qi := (t*H + h) * D
			var delta float64
			for d := 0; d < D; d++ {
				delta += dout[qi+d] * out[qi+d]
			}
			for u := first; u <= t; u++ {
				ki := (u*Hkv + hk) * D
				p := math.Exp(s[u-first] - lse[t*H+h])
				var dp float64
				for d := 0; d < D; d++ {
					dv[ki+d] += p * dout[qi+d]
					dp += dout[qi+d] * v[ki+d]
				}
				ds := p * (dp - delta)
				for d := 0; d < D; d++ {
					dq[qi+d] += sc * ds * k[ki+d]
					dk[ki+d] += sc * ds * q[qi+d]
				}
			}
		}
	}
}

// --- scaled add ---------------------------------------------------------------

// scaledAddForward: out[n,c] = x[n,c] + s[c]·y[n,c]; s nil means 1.
func scaledAddForward(out, x, y, s []float64, N, C int) {
	for n := 0; n < N; n++ {
		for c := 0; c < C; c++ {
			i := n*C + c
			sc := 1.0
			if s != nil {
				sc = s[c]
			}
			out[i] = x[i] + sc*y[i]
		}
	}
}

// scaledAddBackward: dy = s⊙dout (nil to skip); ds[c] += Σn dout·y (nil to skip).
func scaledAddBackward(dy, ds, dout, y, s []float64, N, C int) {
	for n := 0; n < N; n++ {
		for c := 0; c < C; c++ {
			i := n*C + c
			if dy != nil {
				sc := 1.0
				if s != nil {
					sc = s[c]
				}
				dy[i] = sc * dout[i]
			}
			if ds != nil {
				ds[c] += dout[i] * y[i]
			}
		}
	}
}

// --- relu² --------------------------------------------------------------------

// reluSqForward: out = max(x,0)².
func reluSqForward(out, x []float64) {
	for i, v := range x {
		r := max(v, 0)
		out[i] = r * r
	}
}

// reluSqBackward: dx = 2·max(x,0)·dout.
func reluSqBackward(dx, dout, x []float64) {
	for i, v := range x {
		dx[i] = 2 * max(v, 0) * dout[i]
	}
}

// --- softcapped cross-entropy -------------------------------------------------

// softcapRow fills z = cap·tanh(logits/cap) for one row and returns logsumexp(z).
func softcapRow(z, logits []float64, cap float64) float64 {
	m := math.Inf(-1)
	for v, l := range logits {
		z[v] = cap * math.Tanh(l/cap)
		m = max(m, z[v])
	}
	var sum float64
	for _, zv := range z {
		sum += math.Exp(zv - m)
	}
	return m + math.Log(sum)
}

// softcapCEForward: loss[n] = logsumexp(z[n,:]) − z[n,targets[n]].  logits (N,V)
func softcapCEForward(loss, logits []float64, targets []int, N, V int, cap float64) {
	z := make([]float64, V)
	for n := 0; n < N; n++ {
		l := softcapRow(z, logits[n*V:(n+1)*V], cap)
		loss[n] = l - z[targets[n]]
	}
}

// softcapCEBackward: dlogits = scale·(softmax(z) − onehot(target))·(1 − tanh²(logits/cap)).
func softcapCEBackward(dlogits, logits []float64, targets []int, N, V int, cap, scale float64) {
	z := make([]float64, V)
	for n := 0; n < N; n++ {
		l := softcapRow(z, logits[n*V:(n+1)*V], cap)
		for v := 0; v < V; v++ {
			p := math.Exp(z[v] - l)
			if v == targets[n] {
				p--
			}
			th := math.Tanh(logits[n*V+v] / cap)
			dlogits[n*V+v] = scale * p * (1 - th*th)
		}
	}
}

// --- optimizers ---------------------------------------------------------------

// adamStep: Adam with bias correction, in place on p, m, v:
//
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	p −= lr·(m/(1−β1^t)) / (sqrt(v/(1−β2^t)) + eps)
func adamStep(p, g, m, v []float64, lr, beta1, beta2, eps float64, step int) {
	c1 := 1 - math.Pow(beta1, float64(step))
	c2 := 1 - math.Pow(beta2, float64(step))
	for i := range p {
		m[i] = beta1*m[i] + (1-beta1)*g[i]
		v[i] = beta2*v[i] + (1-beta2)*g[i]*g[i]
		p[i] -= lr * (m[i] / c1) / (math.Sqrt(v[i]/c2) + eps)
	}
}

// muonMomentum: buf = μ·buf + g; geff = g + μ·buf (Nesterov).
func muonMomentum(buf, geff, g []float64, mu float64) {
	for i := range g {
		buf[i] = mu*buf[i] + g[i]
		geff[i] = g[i] + mu*buf[i]
	}
}

// newtonSchulz: the quintic Newton–Schulz orthogonalisation of g (R,C):
//
//	X = g/(‖g‖_F + nsEps); if R > C work on Xᵀ
//	repeat steps: A = X·Xᵀ; B = nsB·A + nsC·A·A; X = nsA·X + B·X
func newtonSchulz(out, g []float64, R, C, steps int) {
	var norm float64
	for _, v := range g {
		norm += v * v
	}
	norm = math.Sqrt(norm) + nsEps
	r, c := R, C // X is (r,c) with r ≤ c
	if R > C {
		r, c = C, R
	}
	x := make([]float64, r*c)
	for i := 0; i < R; i++ {
		for j := 0; j < C; j++ {
			if R > C {
				x[j*c+i] = g[i*C+j] / norm
			} else {
				x[i*c+j] = g[i*C+j] / norm
			}
		}
	}
	a := make([]float64, r*r)
	bm := make([]float64, r*r)
	nx := make([]float64, r*c)
	for range steps {
		matMulT(a, x, x, r, r, c)  // A = X·Xᵀ
		matMulT(bm, a, a, r, r, r) // A·A (A symmetric, so A·Aᵀ)
		for i := range bm {
			bm[i] = nsB*a[i] + nsC*bm[i]
		}
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				var s float64
				for k := 0; k < r; k++ {
					s += bm[i*r+k] * x[k*c+j]
				}
				nx[i*c+j] = nsA*x[i*c+j] + s
			}
		}
		x, nx = nx, x
	}
	for i := 0; i < R; i++ {
		for j := 0; j < C; j++ {
			if R > C {
				out[i*C+j] = x[j*c+i]
			} else {
				out[i*C+j] = x[i*c+j]
			}
		}
	}
}

// matMulT: dst (m,n) = a (m,k) · bᵀ, b (n,k).
func matMulT(dst, a, b []float64, m, n, k int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				s += a[i*k+p] * b[j*k+p]
			}
			dst[i*n+j] = s
		}
	}
}

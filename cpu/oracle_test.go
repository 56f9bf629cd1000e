package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// Float64 reference implementations of the contract, written as plainly as
// possible, and the helpers the tests share.

func oRMSNorm(x []float64, N, C int) (out, rstd []float64) {
	out, rstd = make([]float64, N*C), make([]float64, N)
	for n := range N {
		var ss float64
		for c := range C {
			ss += x[n*C+c] * x[n*C+c]
		}
		rstd[n] = 1 / math.Sqrt(ss/float64(C)+backend.RMSNormEps)
		for c := range C {
			out[n*C+c] = x[n*C+c] * rstd[n]
		}
	}
	return out, rstd
}

func oResidMix(x, x0, mix []float64, N, C int) []float64 {
	out := make([]float64, N*C)
	for n := range N {
		for c := range C {
			out[n*C+c] = mix[c]*x[n*C+c] + mix[C+c]*x0[n*C+c]
		}
	}
	return out
}

func oLinear(x, w []float64, N, I, O int) []float64 {
	out := make([]float64, N*O)
	for n := range N {
		for o := range O {
			var s float64
			for i := range I {
				s += x[n*I+i] * w[o*I+i]
			}
			out[n*O+o] = s
		}
	}
	return out
}

// oQKNormRope: gain nil means ones.
func oQKNormRope(x, gain []float64, N, H, D, T int, base float64) (out, rstd []float64) {
	u, rstd := oRMSNorm(x, N*H, D)
	out = make([]float64, N*H*D)
	half := D / 2
	for n := range N {
		p := float64(n % T)
		for h := range H {
			g := 1.0
			if gain != nil {
				g = gain[h]
			}
			row := u[(n*H+h)*D:]
			o := out[(n*H+h)*D:]
			for i := range half {
				th := p * math.Pow(base, -2*float64(i)/float64(D))
				cs, sn := math.Cos(th), math.Sin(th)
				o[i] = g * (row[i]*cs - row[i+half]*sn)
				o[i+half] = g * (row[i]*sn + row[i+half]*cs)
			}
		}
	}
	return out, rstd
}

func oAttention(q, k, v []float64, N, H, Hkv, D, T int) (out, lse []float64) {
	out, lse = make([]float64, N*H*D), make([]float64, N*H)
	scale := 1 / math.Sqrt(float64(D))
	for n := range N {
		s0 := n / T * T
		for h := range H {
			hk := h / (H / Hkv)
			s := make([]float64, n-s0+1)
			m := math.Inf(-1)
			for u := s0; u <= n; u++ {
				var d float64
				for j := range D {
					d += q[(n*H+h)*D+j] * k[(u*Hkv+hk)*D+j]
				}
				s[u-s0] = scale * d
				m = math.Max(m, s[u-s0])
			}
			var z float64
			for _, sv := range s {
				z += math.Exp(sv - m)
			}
			lse[n*H+h] = m + math.Log(z)
			for u := s0; u <= n; u++ {
				p := math.Exp(s[u-s0] - lse[n*H+h])
				for j := range D {
					out[(n*H+h)*D+j] += p * v[(u*Hkv+hk)*D+j]
				}
			}
		}
	}
	return out, lse
}

func oScaledAdd(x, y, s []float64, N, C int) []float64 {
	out := make([]float64, N*C)
	for i := range out {
		sc := 1.0
		if s != nil {
			sc = s[i%C]
		}
		out[i] = x[i] + sc*y[i]
	}
	return out
}

func oReluSq(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		v = math.Max(v, 0)
		out[i] = v * v
	}
	return out
}

func oSoftcapCE(logits []float64, tg []int32, N, V int, cap float64) []float64 {
	loss := make([]float64, N)
	for n := range N {
		z := make([]float64, V)
		m := math.Inf(-1)
		for v := range V {
			z[v] = cap * math.Tanh(logits[n*V+v]/cap)
			m = math.Max(m, z[v])
		}
		var s float64
		for _, zv := range z {
			s += math.Exp(zv - m)
		}
		loss[n] = m + math.Log(s) - z[tg[n]]
	}
	return loss
}

func oNewtonSchulz(g []float64, R, C, steps int) []float64 {
	var ss float64
	for _, v := range g {
		ss += v * v
	}
	norm := math.Sqrt(ss) + backend.NSEps
	r, c := R, C
	if R > C {
		r, c = C, R
	}
	x := make([]float64, r*c)
	for i := range R {
		for j := range C {
			if R > C {
				x[j*c+i] = g[i*C+j] / norm
			} else {
				x[i*c+j] = g[i*C+j] / norm
			}
		}
	}
	mul := func(a, b []float64, m, k, n int, transB bool) []float64 {
		out := make([]float64, m*n)
		for i := range m {
			for j := range n {
				var s float64
				for p := range k {
					if transB {
						s += a[i*k+p] * b[j*k+p]
					} else {
						s += a[i*k+p] * b[p*n+j]
					}
				}
				out[i*n+j] = s
			}
		}
		return out
	}
	for range steps {
		A := mul(x, x, r, c, r, true)
		AA := mul(A, A, r, r, r, false)
		B := make([]float64, r*r)
		for i := range B {
			B[i] = backend.NSB*A[i] + backend.NSC*AA[i]
		}
		BX := mul(B, x, r, r, c, false)
		for i := range x {
			x[i] = backend.NSA*x[i] + BX[i]
		}
	}
	out := make([]float64, R*C)
	for i := range R {
		for j := range C {
			if R > C {
				out[i*C+j] = x[j*c+i]
			} else {
				out[i*C+j] = x[i*c+j]
			}
		}
	}
	return out
}

// numGrad is the central-difference gradient of f with respect to p (f reads
// p), in float64.
func numGrad(p []float64, f func() float64) []float64 {
	g := make([]float64, len(p))
	for i, v := range p {
		h := 1e-6 * math.Max(1, math.Abs(v))
		p[i] = v + h
		fp := f()
		p[i] = v - h
		fm := f()
		p[i] = v
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

// dot is Σ a·b.
func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// randVals returns n normal values times scale.
func randVals(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

// randIDs returns n ids in [0, limit).
func randIDs(r *rand.Rand, n, limit int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(r.IntN(limit))
	}
	return v
}

// rounded returns v rounded to dt.
func rounded(dt backend.DType, v []float32) []float32 {
	out := append([]float32(nil), v...)
	backend.RoundSlice(dt, out)
	return out
}

// f64 widens v (nil stays nil).
func f64(v []float32) []float64 {
	if v == nil {
		return nil
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// upload makes a tensor of dt holding vals.
func upload(b *Backend, dt backend.DType, vals []float32, shape ...int) *backend.Tensor {
	t := b.New(dt, shape...)
	b.Upload(t, vals)
	return t
}

// uploadIDs makes an I32 tensor.
func uploadIDs(b *Backend, ids []int32) *backend.Tensor {
	t := b.New(backend.I32, len(ids))
	b.Upload(t, ids)
	return t
}

// poisoned makes a tensor of dt filled with NaN, so an element an op forgets
// to write shows up.
func poisoned(b *Backend, dt backend.DType, shape ...int) *backend.Tensor {
	t := b.New(dt, shape...)
	v := make([]float32, t.Len())
	for i := range v {
		v[i] = float32(math.NaN())
	}
	b.Upload(t, v)
	return t
}

// checkClose fails unless |got − want| ≤ atol + rtol·|want| everywhere,
// reporting the worst element (the first NaN, if got has one). An infinite
// want must be matched exactly, and a NaN want is an oracle bug.
func checkClose(t *testing.T, name string, got []float32, want []float64, rtol, atol float64) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: element count", name)
	worst, wi := -1.0, -1
	for i := range got {
		g, w := float64(got[i]), want[i]
		if math.IsNaN(w) {
			require.Failf(t, "NaN oracle", "%s: want[%d] is NaN", name, i)
		}
		if math.IsNaN(g) {
			worst, wi = math.NaN(), i
			break
		}
		d, lim := math.Abs(g-w), atol+rtol*math.Abs(w)
		if math.IsInf(w, 0) {
			d, lim = 0, 0
			if g != w {
				d = math.Inf(1)
			}
		}
		if d > lim {
			if r := d / lim; r > worst {
				worst, wi = r, i
			}
		}
	}
	if wi < 0 {
		return
	}
	tol := atol + rtol*math.Abs(want[wi])
	if math.IsInf(want[wi], 0) {
		tol = 0
	}
	assert.InDeltaf(t, want[wi], float64(got[wi]), tol, "%s: element %d of %d = %g, want %g (|err| %.3g, %.3gx tolerance)",
		name, wi, len(got), got[wi], want[wi], math.Abs(float64(got[wi])-want[wi]), worst)
}

// checkGrad compares an analytic gradient with a numerical one, with a
// tolerance relative to the gradient's largest element.
func checkGrad(t *testing.T, name string, got []float32, want []float64) {
	t.Helper()
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	require.NotZero(t, scale, "%s: numerical gradient is identically zero; the test checks nothing", name)
	checkClose(t, name, got, want, 1e-4, 1e-5*scale)
}

// sameBits fails unless got and want are bitwise equal, reporting the first
// differing element.
func sameBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: element count", name)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			assert.Equalf(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s: element %d = %v (%#08x), want %v (%#08x)",
				name, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			return
		}
	}
}

func shapeName(dims ...int) string { return fmt.Sprint(dims) }

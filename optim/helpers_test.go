package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// The Newton–Schulz constants of the oracles, written from
// train_gpt_mlx.py's zeropower_newtonschulz5 (a, b, c = 3.4445, -4.7750,
// 2.0315; eps = 1e-7) rather than taken from package backend, so that a
// wrong coefficient in the code fails these tests instead of agreeing with
// itself.
const (
	nsA, nsB, nsC = 3.4445, -4.7750, 2.0315
	nsEps         = 1e-7
)

// newParam uploads w and g (nil g: zeros) as an F32 parameter of shape.
func newParam(b backend.Backend, name string, w, g []float32, shape ...int) *model.Param {
	p := &model.Param{Name: name, W: b.New(backend.F32, shape...), G: b.New(backend.F32, shape...)}
	b.Upload(p.W, w)
	if g != nil {
		b.Upload(p.G, g)
	}
	return p
}

// randn returns n standard normal float32 values times std.
func randn(rng *rand.Rand, n int, std float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.NormFloat64() * std)
	}
	return out
}

func f64s(xs []float32) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// assertClose fails when any |got−want| > atol + rtol·|want|, reporting the
// worst element and the first few offenders.
func assertClose(t *testing.T, what string, got []float32, want []float64, atol, rtol float64) {
	t.Helper()
	require.Len(t, got, len(want), what)
	worst, worstI := 0.0, -1
	var bad []string
	for i := range want {
		err := math.Abs(float64(got[i]) - want[i])
		tol := atol + rtol*math.Abs(want[i])
		if !(err <= tol) { // NaN fails
			if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("[%d] got %.9g want %.9g", i, got[i], want[i]))
			}
			if math.IsNaN(err) || err/tol > worst {
				worst, worstI = err/tol, i
			}
		}
	}
	if worstI >= 0 {
		assert.Failf(t, "values beyond the tolerance", "%s: worst error %.3g× tolerance at [%d] (got %.9g, want %.9g); first: %v",
			what, worst, worstI, got[worstI], want[worstI], bad)
	}
}

// --- float64 linear algebra for the oracles (row-major r×c slices) ---------

func matmul(a []float64, ar, ac int, b []float64, bc int) []float64 { // (ar, bc)
	out := make([]float64, ar*bc)
	for i := 0; i < ar; i++ {
		for k := 0; k < ac; k++ {
			aik := a[i*ac+k]
			for j := 0; j < bc; j++ {
				out[i*bc+j] += aik * b[k*bc+j]
			}
		}
	}
	return out
}

func transpose(a []float64, r, c int) []float64 { // (c, r)
	out := make([]float64, r*c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = a[i*c+j]
		}
	}
	return out
}

func frob(a []float64) float64 {
	s := 0.0
	for _, v := range a {
		s += v * v
	}
	return math.Sqrt(s)
}

// nsOracle is zeropower_newtonschulz5 in float64.
func nsOracle(g []float64, r, c, steps int) []float64 {
	n := frob(g)
	x := make([]float64, len(g))
	for i, v := range g {
		x[i] = v / (n + nsEps)
	}
	rows, cols := r, c
	if r > c {
		x, rows, cols = transpose(x, r, c), c, r
	}
	for range steps {
		a := matmul(x, rows, cols, transpose(x, rows, cols), rows) // (rows, rows)
		aa := matmul(a, rows, rows, a, rows)
		bm := make([]float64, len(a))
		for i := range a {
			bm[i] = nsB*a[i] + nsC*aa[i]
		}
		bx := matmul(bm, rows, rows, x, cols)
		for i := range x {
			x[i] = nsA*x[i] + bx[i]
		}
	}
	if r > c {
		x = transpose(x, c, r)
	}
	return x
}

// jacobiEigen diagonalises the symmetric n×n matrix a (cyclic Jacobi):
// a = V·diag(λ)·Vᵀ. V's columns are the eigenvectors.
func jacobiEigen(a []float64, n int) (lambda, v []float64) {
	m := append([]float64(nil), a...)
	v = make([]float64, n*n)
	for i := range n {
		v[i*n+i] = 1
	}
	for sweep := 0; sweep < 100; sweep++ {
		off, diag := 0.0, 0.0
		for i := range n {
			diag += m[i*n+i] * m[i*n+i]
			for j := range n {
				if i != j {
					off += m[i*n+j] * m[i*n+j]
				}
			}
		}
		if off <= 1e-30*diag {
			break
		}
		for p := 0; p < n-1; p++ {
			for q := p + 1; q < n; q++ {
				apq := m[p*n+q]
				if apq == 0 {
					continue
				}
				theta := (m[q*n+q] - m[p*n+p]) / (2 * apq)
				tt := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				cs := 1 / math.Sqrt(tt*tt+1)
				sn := tt * cs
				for k := range n { // columns p, q of m
					mkp, mkq := m[k*n+p], m[k*n+q]
					m[k*n+p] = cs*mkp - sn*mkq
					m[k*n+q] = sn*mkp + cs*mkq
				}
				for k := range n { // rows p, q of m
					mpk, mqk := m[p*n+k], m[q*n+k]
					m[p*n+k] = cs*mpk - sn*mqk
					m[q*n+k] = sn*mpk + cs*mqk
				}
				for k := range n {
					vkp, vkq := v[k*n+p], v[k*n+q]
					v[k*n+p] = cs*vkp - sn*vkq
					v[k*n+q] = sn*vkp + cs*vkq
				}
			}
		}
	}
	lambda = make([]float64, n)
	for i := range n {
		lambda[i] = m[i*n+i]
	}
	return lambda, v
}

// singularValues of the r×c matrix x, ascending, from the eigenvalues of
// the smaller Gram matrix.
func singularValues(x []float64, r, c int) []float64 {
	var gram []float64
	var n int
	if r >= c {
		gram, n = matmul(transpose(x, r, c), c, r, x, c), c
	} else {
		gram, n = matmul(x, r, c, transpose(x, r, c), r), r
	}
	lam, _ := jacobiEigen(gram, n)
	s := make([]float64, n)
	for i, l := range lam {
		s[i] = math.Sqrt(max(l, 0))
	}
	sort.Float64s(s)
	return s
}

// polar is the orthogonal polar factor U·Vᵀ of the full-rank r×c matrix g.
func polar(g []float64, r, c int) []float64 {
	if r < c {
		return transpose(polar(transpose(g, r, c), c, r), c, r)
	}
	lam, v := jacobiEigen(matmul(transpose(g, r, c), c, r, g, c), c) // GᵀG = V·Λ·Vᵀ
	// (GᵀG)^(−1/2) = V·Λ^(−1/2)·Vᵀ
	inv := make([]float64, c*c)
	for i := range c {
		for j := range c {
			s := 0.0
			for k := range c {
				s += v[i*c+k] * v[j*c+k] / math.Sqrt(lam[k])
			}
			inv[i*c+j] = s
		}
	}
	return matmul(g, r, c, inv, c)
}

// randomOrthogonal returns an n×k matrix (k ≤ n) with orthonormal columns
// (modified Gram–Schmidt on a Gaussian matrix).
func randomOrthogonal(rng *rand.Rand, n, k int) []float64 {
	q := make([]float64, n*k)
	for i := range q {
		q[i] = rng.NormFloat64()
	}
	for j := range k {
		for p := range j {
			d := 0.0
			for i := range n {
				d += q[i*k+j] * q[i*k+p]
			}
			for i := range n {
				q[i*k+j] -= d * q[i*k+p]
			}
		}
		nrm := 0.0
		for i := range n {
			nrm += q[i*k+j] * q[i*k+j]
		}
		nrm = math.Sqrt(nrm)
		for i := range n {
			q[i*k+j] /= nrm
		}
	}
	return q
}

// withSpectrum returns U·diag(s)·Vᵀ for random U (r×k), V (c×k), k = min(r,c).
func withSpectrum(rng *rand.Rand, r, c int, s []float64) []float64 {
	k := min(r, c)
	u, v := randomOrthogonal(rng, r, k), randomOrthogonal(rng, c, k)
	us := make([]float64, r*k)
	for i := range r {
		for j := range k {
			us[i*k+j] = u[i*k+j] * s[j]
		}
	}
	return matmul(us, r, k, transpose(v, c, k), c)
}

package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/racebuild"
)

// testSizes are the awkward sizes every dimension is swept over: 1, 2, 3,
// tile sizes ±1 and powers of two ±1.
var testSizes = []int{1, 2, 3, 5, 7, 15, 16, 17, 31, 33, 63, 65, 127, 129, 257}

var testScalars = []float32{0, 1, -0.5, 2}

// gemmCase is one Sgemm call: shapes, strides and scalars.
type gemmCase struct {
	transA, transB bool
	m, n, k        int
	lda, ldb, ldc  int
	alpha, beta    float32
}

func (tc gemmCase) String() string {
	return fmt.Sprintf("tA=%v tB=%v m=%d n=%d k=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g",
		tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.lda, tc.ldb, tc.ldc, tc.alpha, tc.beta)
}

// operands returns random A, B, C for tc. C's elements outside the m×n
// result (the row padding up to ldc) hold a sentinel; with beta == 0 the
// result elements hold NaN.
func (tc gemmCase) operands(rng *rand.Rand) (a, b, c []float32) {
	aRows, bRows := tc.m, tc.k
	if tc.transA {
		aRows = tc.k
	}
	if tc.transB {
		bRows = tc.n
	}
	a = randMatrix(rng, aRows, tc.lda)
	b = randMatrix(rng, bRows, tc.ldb)
	c = make([]float32, tc.m*tc.ldc)
	for i := range c {
		switch {
		case i%tc.ldc >= tc.n:
			c[i] = sentinel
		case tc.beta == 0:
			c[i] = float32(math.NaN())
		default:
			c[i] = rng.Float32()*2 - 1
		}
	}
	return a, b, c
}

const sentinel = float32(-12345.5)

func randMatrix(rng *rand.Rand, rows, ld int) []float32 {
	x := make([]float32, rows*ld)
	for i := range x {
		x[i] = rng.Float32()*2 - 1
	}
	return x
}

// reference returns the float64 product alpha·op(A)·op(B) + beta·C and, per
// element, the float32 rounding-error bound
//
//	2·(k + 2·⌈k/KC⌉ + 4)·2⁻²⁴·(|alpha|·Σ_p |a_ip||b_pj| + |beta·c_ij|)
//
// (the textbook γ_k bound for a k-term dot product, plus the two roundings
// of the alpha and beta update once per K block, with a factor 2 of slack).
func (tc gemmCase) reference(a, b, c []float32) (want, bound []float64) {
	want = make([]float64, tc.m*tc.n)
	bound = make([]float64, tc.m*tc.n)
	u := math.Ldexp(1, -24)
	blocks := float64(ceilDiv(tc.k, blocking.KC))
	for i := range tc.m {
		for j := range tc.n {
			var s, sa float64
			for p := range tc.k {
				var av, bv float64
				if tc.transA {
					av = float64(a[p*tc.lda+i])
				} else {
					av = float64(a[i*tc.lda+p])
				}
				if tc.transB {
					bv = float64(b[j*tc.ldb+p])
				} else {
					bv = float64(b[p*tc.ldb+j])
				}
				s += av * bv
				sa += math.Abs(av * bv)
			}
			w := float64(tc.alpha) * s
			mag := math.Abs(float64(tc.alpha)) * sa
			if tc.beta != 0 {
				bc := float64(tc.beta) * float64(c[i*tc.ldc+j])
				w += bc
				mag += math.Abs(bc)
			}
			want[i*tc.n+j] = w
			bound[i*tc.n+j] = 2 * (float64(tc.k) + 2*blocks + 4) * u * mag
		}
	}
	return want, bound
}

// check runs tc through Sgemm and compares with the float64 reference; it
// also checks that A and B are unchanged and the padding of C is untouched.
func check(t *testing.T, rng *rand.Rand, tc gemmCase) {
	t.Helper()
	a, b, c := tc.operands(rng)
	want, bound := tc.reference(a, b, c)
	a0 := append([]float32(nil), a...)
	b0 := append([]float32(nil), b...)
	Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, tc.beta, c, tc.ldc)
	requireSameBits(t, a0, a, fmt.Sprintf("%v: A after Sgemm", tc))
	requireSameBits(t, b0, b, fmt.Sprintf("%v: B after Sgemm", tc))
	requireWithinBound(t, tc, c, want, bound)
}

// requireWithinBound stops the test unless every element of the m×n
// result in c is within bound of want (NaN fails) and the padding of C
// still holds the sentinel. It reports the worst element, how many are
// out of bounds and the first few of them.
func requireWithinBound(t *testing.T, tc gemmCase, c []float32, want, bound []float64) {
	t.Helper()
	var first []string
	nbad, worst, worstRatio := 0, -1, 0.0
	for i := range tc.m {
		for j := range tc.ldc {
			got := c[i*tc.ldc+j]
			if j >= tc.n {
				require.Equal(t, sentinel, got, "%v: C[%d][%d] (padding) written", tc, i, j)
				continue
			}
			w, bd := want[i*tc.n+j], bound[i*tc.n+j]
			e := math.Abs(float64(got) - w)
			if e <= bd {
				continue
			}
			// Out of bounds (NaN included): keep the worst, a NaN first.
			nbad++
			if len(first) < 4 {
				first = append(first, fmt.Sprintf("C[%d][%d] = %g, want %g (err %.3g > bound %.3g)", i, j, got, w, e, bd))
			}
			r := e / bd
			if math.IsNaN(r) {
				r = math.Inf(1)
			}
			if worst < 0 || r > worstRatio {
				worst, worstRatio = i*tc.ldc+j, r
			}
		}
	}
	if nbad > 0 {
		i, j := worst/tc.ldc, worst%tc.ldc
		require.InDelta(t, want[i*tc.n+j], float64(c[worst]), bound[i*tc.n+j],
			"%v: C[%d][%d], the worst of %d elements outside the float32 error bound (err/bound %.3g); first: %s",
			tc, i, j, nbad, worstRatio, strings.Join(first, "; "))
	}
}

// assertSameBits fails unless got holds want's float32 bit patterns (NaNs
// and signed zeros included), reporting the first element that differs.
func assertSameBits(t *testing.T, want, got []float32, what string) bool {
	t.Helper()
	if !assert.Equal(t, len(want), len(got), "%s: length", what) {
		return false
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return assert.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]),
				"%s: element %d = %g, want %g", what, i, got[i], want[i])
		}
	}
	return true
}

// requireSameBits is assertSameBits, stopping the test on a difference.
func requireSameBits(t *testing.T, want, got []float32, what string) {
	t.Helper()
	if !assertSameBits(t, want, got, what) {
		t.FailNow()
	}
}

// kernels returns the micro-kernels to test on this machine: the assembly
// ones the CPU runs, and always the portable one.
func kernels() []microKernel {
	return append(asmKernels(), goKernel)
}

// withKernel runs f with Sgemm using micro-kernel k.
func withKernel(k microKernel, f func()) {
	saved := kern
	kern = k
	defer func() { kern = saved }()
	f()
}

// sampledCases sweeps each of m, n, k over testSizes, the other two drawn
// from testSizes, for every transpose pair; strides get random padding and
// alpha, beta are drawn from testScalars.
func sampledCases(rng *rand.Rand) []gemmCase {
	var cases []gemmCase
	pick := func() int { return testSizes[rng.IntN(len(testSizes))] }
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for dim := range 3 {
				for _, s := range testSizes {
					d := [3]int{pick(), pick(), pick()}
					d[dim] = s
					cases = append(cases, newCase(rng, tA, tB, d[0], d[1], d[2],
						testScalars[rng.IntN(4)], testScalars[rng.IntN(4)]))
				}
			}
		}
	}
	return cases
}

func newCase(rng *rand.Rand, tA, tB bool, m, n, k int, alpha, beta float32) gemmCase {
	pad := func() int { return []int{0, 1, 3, 8}[rng.IntN(4)] }
	tc := gemmCase{transA: tA, transB: tB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	tc.lda, tc.ldb, tc.ldc = k+pad(), n+pad(), n+pad()
	if tA {
		tc.lda = m + pad()
	}
	if tB {
		tc.ldb = k + pad()
	}
	return tc
}

func TestSgemmSampledShapes(t *testing.T) {
	for _, k := range kernels() {
		name := k.name
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			withKernel(k, func() {
				for _, tc := range sampledCases(rng) {
					check(t, rng, tc)
				}
			})
		})
	}
}

// TestSgemmScalars covers every (alpha, beta) pair, with beta == 0 over a
// NaN-filled C, on shapes with edge tiles in both directions.
func TestSgemmScalars(t *testing.T) {
	for _, k := range kernels() {
		name := k.name
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			withKernel(k, func() {
				for _, alpha := range testScalars {
					for _, beta := range testScalars {
						for _, tA := range []bool{false, true} {
							for _, tB := range []bool{false, true} {
								check(t, rng, newCase(rng, tA, tB, 13, 37, 300, alpha, beta))
								check(t, rng, newCase(rng, tA, tB, 1, 1, 1, alpha, beta))
							}
						}
					}
				}
			})
		})
	}
}

// TestSgemmSmallBlocks shrinks the cache blocks so that small products
// cross many MC, KC and NC block boundaries, in serial and parallel runs.
func TestSgemmSmallBlocks(t *testing.T) {
	saved := blocking
	defer func() { blocking = saved }()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range kernels() {
		name := k.name
		blocking.MC, blocking.KC, blocking.NC = 2*k.mr, 7, 3*k.nr
		withKernel(k, func() {
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					for _, d := range [][3]int{{1, 1, 1}, {13, 100, 22}, {77, 49, 8}, {130, 200, 64}, {5, 300, 71}} {
						tc := newCase(rng, tA, tB, d[0], d[1], d[2], testScalars[rng.IntN(4)], testScalars[rng.IntN(4)])
						t.Run(name+"/"+tc.String(), func(t *testing.T) { check(t, rng, tc) })
					}
				}
			}
		})
	}
}

// TestSgemmDegenerate covers k == 0 and alpha == 0 (C = beta·C without
// reading A or B, which here hold NaN) and empty outputs.
func TestSgemmDegenerate(t *testing.T) {
	nan := float32(math.NaN())
	for _, beta := range testScalars {
		for _, tc := range []struct {
			k     int
			alpha float32
		}{{0, 1}, {4, 0}} {
			a := make([]float32, 16)
			for i := range a {
				a[i] = nan
			}
			c := []float32{1, -2, 3, nan, 4, 5, 6, nan}
			if beta != 0 {
				c[3], c[7] = 7, 8
			}
			want := make([]float32, len(c))
			for i := range c {
				if beta != 0 {
					want[i] = beta * c[i]
				}
			}
			Sgemm(false, false, 2, 4, tc.k, tc.alpha, a, max(tc.k, 1), a, 4, beta, c, 4)
			assert.Equal(t, want, c, "k=%d alpha=%g beta=%g: C", tc.k, tc.alpha, beta)
		}
	}
	Sgemm(false, false, 0, 3, 2, 1, nil, 2, make([]float32, 6), 3, 0, nil, 3)
	Sgemm(false, false, 3, 0, 2, 1, make([]float32, 6), 2, nil, 1, 0, nil, 1)
}

// panicValue runs f and returns what it panicked with (nil if it returned).
func panicValue(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestBadArguments checks that malformed calls of Sgemm and Bgemm panic
// with a message that names the argument.
func TestBadArguments(t *testing.T) {
	f32, cbuf := make([]float32, 64), make([]float32, 64)
	u16 := make([]uint16, 64)
	// call runs Sgemm or Bgemm with a and b of la and lb elements and c of lc.
	type call func(tA, tB bool, m, n, k, lda, ldb, ldc, la, lb, lc int)
	products := map[string]call{
		"Sgemm": func(tA, tB bool, m, n, k, lda, ldb, ldc, la, lb, lc int) {
			Sgemm(tA, tB, m, n, k, 1, f32[:la], lda, f32[:lb], ldb, 0, cbuf[:lc], ldc)
		},
		"Bgemm": func(tA, tB bool, m, n, k, lda, ldb, ldc, la, lb, lc int) {
			Bgemm(tA, tB, m, n, k, 1, u16[:la], lda, u16[:lb], ldb, 0, cbuf[:lc], ldc)
		},
	}
	for pname, f := range products {
		for _, tc := range []struct {
			name string
			call func()
			want string
		}{
			{"lda", func() { f(false, false, 4, 4, 4, 3, 4, 4, 64, 64, 64) }, "lda"},
			{"ldb transB", func() { f(false, true, 4, 4, 5, 5, 4, 4, 64, 64, 64) }, "ldb"},
			{"short c", func() { f(false, false, 4, 4, 4, 4, 4, 4, 64, 64, 15) }, "len(c)"},
			{"short a", func() { f(true, false, 4, 4, 4, 4, 4, 4, 10, 64, 64) }, "len(a)"},
			{"negative", func() { f(false, false, -1, 4, 4, 4, 4, 4, 64, 64, 64) }, "negative"},
		} {
			t.Run(pname+"/"+tc.name, func(t *testing.T) {
				r := panicValue(tc.call)
				s, ok := r.(string)
				require.True(t, ok, "panic %v (%T), want a string naming %q", r, r, tc.want)
				assert.Contains(t, s, tc.want, "panic message")
			})
		}
	}
}

// TestSgemmDeterministic checks that the result is bitwise the same for
// every GOMAXPROCS, on shapes that split over rows, over columns, and that
// cross several K blocks.
func TestSgemmDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range kernels() {
		name := k.name
		withKernel(k, func() {
			for _, d := range [][3]int{{257, 129, 600}, {5, 1000, 300}, {100, 65, 513}} {
				for _, tA := range []bool{false, true} {
					tc := newCase(rng, tA, !tA, d[0], d[1], d[2], -0.5, 2)
					a, b, c0 := tc.operands(rng)
					var first []float32
					require.GreaterOrEqual(t, tc.m*tc.n*tc.k, minParallelFlops, "%s %v: too small to run in parallel", name, tc)
					for _, procs := range []int{1, 2, 3} {
						runtime.GOMAXPROCS(procs)
						c := append([]float32(nil), c0...)
						Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, tc.beta, c, tc.ldc)
						if first == nil {
							first = c
						} else {
							assertSameBits(t, first, c, fmt.Sprintf("%s %v: C with GOMAXPROCS=%d against GOMAXPROCS=1", name, tc, procs))
						}
					}
				}
			}
		})
	}
}

// TestSgemmSplitChoice checks that the deterministic test above reaches both
// ways of splitting work.
func TestSgemmSplitChoice(t *testing.T) {
	assert.False(t, chooseSplitN(ceilDiv(257, kern.mr), ceilDiv(129, kern.nr), 2), "257×129 splits columns, want rows")
	assert.True(t, chooseSplitN(ceilDiv(5, kern.mr), ceilDiv(1000, kern.nr), 2), "5×1000 splits rows, want columns")
}

// TestSgemmNoAlloc checks that a warm call does not allocate.
func TestSgemmNoAlloc(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	m, n, k := 130, 70, 300
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	f := func() { Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n) }
	f()
	assert.Zero(t, testing.AllocsPerRun(20, f), "Sgemm allocations per call")
}

// TestSgemmConcurrentCalls runs independent products from several
// goroutines at once; each must match its serial result bitwise.
func TestSgemmConcurrentCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const calls = 6
	var cases [calls]gemmCase
	var as, bs, cs, want [calls][]float32
	for i := range calls {
		cases[i] = newCase(rng, i%2 == 0, i%3 == 0, 70+i, 90-i, 200, 1, 0.5)
		as[i], bs[i], cs[i] = cases[i].operands(rng)
		want[i] = append([]float32(nil), cs[i]...)
		tc := cases[i]
		Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, as[i], tc.lda, bs[i], tc.ldb, tc.beta, want[i], tc.ldc)
	}
	done := make(chan int)
	for i := range calls {
		go func() {
			tc := cases[i]
			for range 5 {
				c := append([]float32(nil), cs[i]...)
				Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, as[i], tc.lda, bs[i], tc.ldb, tc.beta, c, tc.ldc)
				assertSameBits(t, want[i], c, fmt.Sprintf("%v: concurrent C against serial", tc))
			}
			done <- i
		}()
	}
	for range calls {
		<-done
	}
}

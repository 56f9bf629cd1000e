package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/racebuild"
)

// toBF16 rounds x to the nearest bfloat16, ties to even (x not NaN).
func toBF16(x float32) uint16 {
	u := math.Float32bits(x)
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

func toBF16s(x []float32) []uint16 {
	out := make([]uint16, len(x))
	for i, v := range x {
		out[i] = toBF16(v)
	}
	return out
}

func widenBF16s(x []uint16) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = bf16Float(v)
	}
	return out
}

// operands16 returns random bfloat16 A, B and float32 C for tc, as
// operands does.
func (tc gemmCase) operands16(rng *rand.Rand) (a, b []uint16, c []float32) {
	af, bf, c := tc.operands(rng)
	return toBF16s(af), toBF16s(bf), c
}

// reference16 is reference for bfloat16 operands: the float64 product and
// the float32 error bound, plus what flushing subnormals may lose: every
// product with a subnormal factor, and 2⁻¹²⁶ per accumulation step.
func (tc gemmCase) reference16(a, b []uint16, c []float32) (want, bound []float64) {
	af, bf := widenBF16s(a), widenBF16s(b)
	want, bound = tc.reference(af, bf, c)
	tiny := 0x1p-126
	sub := func(x float32) bool { return x != 0 && math.Abs(float64(x)) < tiny }
	for i := range tc.m {
		for j := range tc.n {
			lost := float64(tc.k+2) * tiny
			for p := range tc.k {
				ai, bi := i*tc.lda+p, p*tc.ldb+j
				if tc.transA {
					ai = p*tc.lda + i
				}
				if tc.transB {
					bi = j*tc.ldb + p
				}
				av, bv := af[ai], bf[bi]
				if sub(av) || sub(bv) {
					lost += math.Abs(float64(av) * float64(bv))
				}
			}
			bound[i*tc.n+j] += 2 * math.Abs(float64(tc.alpha)) * lost
		}
	}
	return want, bound
}

// check16 runs tc through Bgemm on a, b, c and compares with the float64
// reference; it also checks that A and B are unchanged and the padding of C
// is untouched.
func check16(t *testing.T, tc gemmCase, a, b []uint16, c []float32) {
	t.Helper()
	want, bound := tc.reference16(a, b, c)
	a0 := append([]uint16(nil), a...)
	b0 := append([]uint16(nil), b...)
	Bgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, tc.beta, c, tc.ldc)
	require.Equal(t, a0, a, "%v: A after Bgemm", tc)
	require.Equal(t, b0, b, "%v: B after Bgemm", tc)
	requireWithinBound(t, tc, c, want, bound)
}

// namedBKernel is a Bgemm path under test: a micro-kernel (nil: the
// widening fallback) and whether the pair packing is vectorized, or AMX.
type namedBKernel struct {
	name string
	fn   bkernelFunc
	vec  bool
	amx  bool
}

// bkernels returns the Bgemm paths to test on this machine: AMX and the
// assembly micro-kernel where the CPU has them, the latter with vector and
// with portable packing, the portable kernel and packing, and the widening
// fallback onto Sgemm's kernel.
func bkernels() []namedBKernel {
	ks := []namedBKernel{{name: "go", fn: kernelBGo}, {name: "widen"}}
	if hasBF16Kernel {
		ks = append([]namedBKernel{{name: "asm", fn: kernelBAsm, vec: hasPackVec}, {name: "asm-gopack", fn: kernelBAsm}}, ks...)
	}
	if amxOK {
		ks = append([]namedBKernel{{name: "amx", amx: true}}, ks...)
	}
	return ks
}

// withBKernel runs f with Bgemm on path k.
func withBKernel(k namedBKernel, f func()) {
	saved, savedVec, savedAMX := bkernel, packVec, useAMX
	bkernel, packVec, useAMX = k.fn, k.vec, k.amx
	defer func() { bkernel, packVec, useAMX = saved, savedVec, savedAMX }()
	f()
}

func TestBgemmSampledShapes(t *testing.T) {
	for _, nk := range bkernels() {
		t.Run(nk.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			withBKernel(nk, func() {
				for _, tc := range sampledCases(rng) {
					a, b, c := tc.operands16(rng)
					check16(t, tc, a, b, c)
				}
			})
		})
	}
}

// TestBgemmScalars covers every (alpha, beta) pair, with beta == 0 over a
// NaN-filled C, on shapes with edge tiles in both directions and an odd k
// that crosses a K block.
func TestBgemmScalars(t *testing.T) {
	for _, nk := range bkernels() {
		t.Run(nk.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(13, 14))
			withBKernel(nk, func() {
				for _, alpha := range testScalars {
					for _, beta := range testScalars {
						for _, tA := range []bool{false, true} {
							for _, tB := range []bool{false, true} {
								for _, d := range [][3]int{{13, 37, 301}, {1, 1, 1}, {15, 33, 2}} {
									tc := newCase(rng, tA, tB, d[0], d[1], d[2], alpha, beta)
									a, b, c := tc.operands16(rng)
									check16(t, tc, a, b, c)
								}
							}
						}
					}
				}
			})
		})
	}
}

// TestBgemmSmallBlocks shrinks the cache blocks so that small products
// cross many MC, KC and NC block boundaries (odd k leaving an odd last
// block), in serial and parallel runs.
func TestBgemmSmallBlocks(t *testing.T) {
	saved, bsaved := blocking, bblocking
	defer func() { blocking, bblocking = saved, bsaved }()
	bblocking.MC, bblocking.NC = 2*BMR, 3*BNR
	rng := rand.New(rand.NewPCG(15, 16))
	for _, kc := range []int{6, 7} {
		blocking.MC, blocking.KC, blocking.NC = 2*kern.mr, kc, 3*kern.nr
		for _, nk := range bkernels() {
			withBKernel(nk, func() {
				for _, tA := range []bool{false, true} {
					for _, tB := range []bool{false, true} {
						for _, d := range [][3]int{{1, 1, 1}, {13, 100, 23}, {77, 49, 8}, {130, 200, 65}, {5, 300, 71}} {
							tc := newCase(rng, tA, tB, d[0], d[1], d[2], testScalars[rng.IntN(4)], testScalars[rng.IntN(4)])
							a, b, c := tc.operands16(rng)
							t.Run(fmt.Sprintf("KC=%d/%s/%v", kc, nk.name, tc), func(t *testing.T) { check16(t, tc, a, b, c) })
						}
					}
				}
			})
		}
	}
}

// TestBgemmMatchesSgemm checks that on operands without subnormals every
// Bgemm path gives bitwise what Sgemm gives on the operands widened to
// float32: the same sums in the same order, each rounded once. Shapes cross
// K blocks, with odd blocks under a small KC, and edge tiles. AMX is the
// exception: it adds in an order of its own.
func TestBgemmMatchesSgemm(t *testing.T) {
	saved := blocking
	defer func() { blocking = saved }()
	rng := rand.New(rand.NewPCG(23, 24))
	for _, kc := range []int{saved.KC, 7} {
		blocking.KC = kc
		for _, nk := range bkernels() {
			if nk.amx {
				continue // AMX sums in its own order (TestAMXWithinBound)
			}
			withBKernel(nk, func() {
				for _, tA := range []bool{false, true} {
					for _, tB := range []bool{false, true} {
						for _, d := range [][3]int{{33, 70, 301}, {15, 33, 2}, {1, 1, 513}} {
							tc := newCase(rng, tA, tB, d[0], d[1], d[2], testScalars[1+rng.IntN(3)], testScalars[rng.IntN(4)])
							a, b, c := tc.operands16(rng)
							want := append([]float32(nil), c...)
							Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, widenBF16s(a), tc.lda, widenBF16s(b), tc.ldb, tc.beta, want, tc.ldc)
							Bgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, tc.beta, c, tc.ldc)
							requireSameBits(t, want, c, fmt.Sprintf("KC=%d %s %v: Bgemm's C against Sgemm's", kc, nk.name, tc))
						}
					}
				}
			})
		}
	}
}

// TestBgemmSubnormals feeds bfloat16 subnormals and products that underflow:
// every path stays within the bound that allows for flushing them, the
// bfloat16 kernels read subnormal inputs as zero (VDPBF16PS, and AMX's
// TDPBF16PS), and the widening fallback does not.
func TestBgemmSubnormals(t *testing.T) {
	// 2⁻¹³⁰·2¹⁰ = 2⁻¹²⁰ is a normal float32 from a subnormal bfloat16.
	sub, big := toBF16(0x1p-130), toBF16(0x1p10)
	for _, nk := range bkernels() {
		withBKernel(nk, func() {
			c := []float32{5}
			Bgemm(false, false, 1, 1, 2, 1, []uint16{sub, sub}, 2, []uint16{big, big}, 1, 0, c, 1)
			want := float32(0)
			if nk.fn == nil && !nk.amx {
				want = 0x1p-119
			}
			assert.Equal(t, want, c[0], "%s: 2⁻¹³⁰·2¹⁰ + 2⁻¹³⁰·2¹⁰", nk.name)

			rng := rand.New(rand.NewPCG(17, 18))
			tc := newCase(rng, false, true, 20, 40, 33, 1, 0.5)
			a, b, c := tc.operands16(rng)
			for i := range a {
				switch rng.IntN(4) {
				case 0: // subnormal
					a[i] = toBF16(float32(math.Ldexp(rng.Float64()+0.5, -127-rng.IntN(6))))
				case 1: // products near the bottom of the float32 range
					a[i] = toBF16(float32(math.Ldexp(rng.Float64()+0.5, -120)))
				}
			}
			t.Run(nk.name, func(t *testing.T) { check16(t, tc, a, b, c) })
		})
	}
}

// TestBgemmDegenerate covers k == 0 and alpha == 0 (C = beta·C without
// reading A or B, which here hold NaN) and empty outputs.
func TestBgemmDegenerate(t *testing.T) {
	nan := float32(math.NaN())
	a := make([]uint16, 16)
	for i := range a {
		a[i] = 0x7fc0 // NaN
	}
	for _, beta := range testScalars {
		for _, tc := range []struct {
			k     int
			alpha float32
		}{{0, 1}, {4, 0}} {
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
			Bgemm(false, false, 2, 4, tc.k, tc.alpha, a, max(tc.k, 1), a, 4, beta, c, 4)
			assert.Equal(t, want, c, "k=%d alpha=%g beta=%g: C", tc.k, tc.alpha, beta)
		}
	}
	Bgemm(false, false, 0, 3, 2, 1, nil, 2, make([]uint16, 6), 3, 0, nil, 3)
	Bgemm(false, false, 3, 0, 2, 1, make([]uint16, 6), 2, nil, 1, 0, nil, 1)
}

// TestBgemmDeterministic checks that the result is bitwise the same for
// every GOMAXPROCS, on shapes that split over rows, over columns, and that
// cross several K blocks with an odd k.
func TestBgemmDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(19, 20))
	for _, nk := range bkernels() {
		withBKernel(nk, func() {
			for _, d := range [][3]int{{257, 129, 601}, {5, 1000, 300}, {100, 65, 513}} {
				for _, tA := range []bool{false, true} {
					tc := newCase(rng, tA, !tA, d[0], d[1], d[2], -0.5, 2)
					a, b, c0 := tc.operands16(rng)
					var first []float32
					for _, procs := range []int{1, 2, 3} {
						runtime.GOMAXPROCS(procs)
						require.GreaterOrEqual(t, tc.m*tc.n*tc.k, 2*minParallelFlops, "%s %v: too small to run in parallel", nk.name, tc)
						c := append([]float32(nil), c0...)
						Bgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, tc.beta, c, tc.ldc)
						if first == nil {
							first = c
						} else {
							assertSameBits(t, first, c, fmt.Sprintf("%s %v: C with GOMAXPROCS=%d against GOMAXPROCS=1", nk.name, tc, procs))
						}
					}
				}
			}
		})
	}
}

// TestBgemmSplitChoice checks that the deterministic test above reaches
// both ways of splitting work on the bfloat16 tiles.
func TestBgemmSplitChoice(t *testing.T) {
	assert.False(t, chooseSplitN(ceilDiv(257, BMR), ceilDiv(129, BNR), 2), "257×129 splits columns, want rows")
	assert.True(t, chooseSplitN(ceilDiv(5, BMR), ceilDiv(1000, BNR), 2), "5×1000 splits rows, want columns")
}

// TestBgemmNoAlloc checks that a warm call does not allocate, on every path.
func TestBgemmNoAlloc(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	m, n, k := 130, 70, 301
	a, b, c := make([]uint16, m*k), make([]uint16, k*n), make([]float32, m*n)
	for _, nk := range bkernels() {
		withBKernel(nk, func() {
			f := func() { Bgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n) }
			f()
			assert.Zero(t, testing.AllocsPerRun(20, f), "%s: Bgemm allocations per call", nk.name)
		})
	}
}

// TestBgemmConcurrentCalls runs independent products from several
// goroutines at once; each must match its serial result bitwise.
func TestBgemmConcurrentCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const calls = 6
	var cases [calls]gemmCase
	var as, bs [calls][]uint16
	var cs, want [calls][]float32
	for i := range calls {
		cases[i] = newCase(rng, i%2 == 0, i%3 == 0, 70+i, 90-i, 201, 1, 0.5)
		as[i], bs[i], cs[i] = cases[i].operands16(rng)
		want[i] = append([]float32(nil), cs[i]...)
		tc := cases[i]
		Bgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, as[i], tc.lda, bs[i], tc.ldb, tc.beta, want[i], tc.ldc)
	}
	done := make(chan int)
	for i := range calls {
		go func() {
			tc := cases[i]
			for range 5 {
				c := append([]float32(nil), cs[i]...)
				Bgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, as[i], tc.lda, bs[i], tc.ldb, tc.beta, c, tc.ldc)
				assertSameBits(t, want[i], c, fmt.Sprintf("%v: concurrent C against serial", tc))
			}
			done <- i
		}()
	}
	for range calls {
		<-done
	}
}

// TestBgemmWidenEveryKernel: the widening path (bfloat16 packed into
// float32 panels, vector or Go packing depending on the kernel's tile)
// gives Sgemm's bits on the widened operands under every float32 kernel.
func TestBgemmWidenEveryKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, k := range kernels() {
		withKernel(k, func() {
			withBKernel(namedBKernel{name: "widen"}, func() {
				for _, tA := range []bool{false, true} {
					for _, tB := range []bool{false, true} {
						for _, d := range [][3]int{{33, 70, 301}, {28, 64, 20}, {5, 33, 257}} {
							tc := newCase(rng, tA, tB, d[0], d[1], d[2], 1, 0.5)
							a, b, c := tc.operands16(rng)
							want := append([]float32(nil), c...)
							Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, widenBF16s(a), tc.lda, widenBF16s(b), tc.ldb, tc.beta, want, tc.ldc)
							Bgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, tc.beta, c, tc.ldc)
							requireSameBits(t, want, c, fmt.Sprintf("%s %v: widened Bgemm's C against Sgemm's", k.name, tc))
						}
					}
				}
			})
		})
	}
}

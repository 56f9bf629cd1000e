package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// f16Operands returns tc's A and B as binary16 (random in [−1, 1), with
// some subnormals and some near the largest binary16) and the same values
// widened to float32.
func (tc gemmCase) f16Operands(rng *rand.Rand) (a, b []uint16, aw, bw []float32) {
	af, bf, _ := tc.operands(rng)
	conv := func(x []float32) ([]uint16, []float32) {
		h, w := make([]uint16, len(x)), make([]float32, len(x))
		for i, v := range x {
			switch rng.IntN(40) {
			case 0:
				v *= 0x1p-18 // a binary16 subnormal
			case 1:
				v *= 60000
			}
			h[i] = backend.F16Bits(v)
			w[i] = backend.F16Float(h[i])
		}
		return h, w
	}
	a, aw = conv(af)
	b, bw = conv(bf)
	return a, b, aw, bw
}

// TestF16Terms: every binary16 bit pattern is exactly the sum of its two
// bfloat16 terms, the first its rounding to nearest even (a non-finite
// value in the first term alone), and the vector packer gives the scalar
// terms in each of its layouts.
func TestF16Terms(t *testing.T) {
	requireAMX(t)
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	for _, x := range src {
		h, l := f16Terms16(x)
		v := backend.F16Float(x)
		if math.IsNaN(float64(v)) {
			require.True(t, math.IsNaN(float64(bf16Float(h))), "%#04x: h", x)
			require.Zero(t, l, "%#04x: l", x)
			continue
		}
		require.Equal(t, toBF16(v), h, "%#04x: h is bf16(x)", x)
		if math.IsInf(float64(v), 0) {
			require.Zero(t, l, "%#04x: l", x)
			continue
		}
		require.Equal(t, float64(v), float64(bf16Float(h))+float64(bf16Float(l)), "%#04x = %g: h + l", x, v)
	}
	n := len(src)
	for _, tail := range []int{0, 5} { // a length of whole vectors and one past them
		src := src[:n-16+tail]
		m := len(src)
		for mode, words := range []int{2 * m, m, 2 * m, 2 * m} {
			got := make([]uint32, words)
			f16Split(got, src, mode)
			for i, x := range src {
				h, l := f16Terms16(x)
				var want []uint32
				var at []int
				switch mode {
				case f16PairsDup:
					want, at = []uint32{pair(h, l), pair(h, l)}, []int{2 * i, 2*i + 1}
				case f16Pairs:
					want, at = []uint32{pair(h, l)}, []int{i}
				case f16Terms:
					want, at = []uint32{pair(h, h), pair(l, l)}, []int{i, m + i}
				default:
					want, at = []uint32{pair(h, h), pair(l, l)}, []int{2 * i, 2*i + 1}
				}
				for q, w := range want {
					if got[at[q]] != w {
						require.Failf(t, "f16Split", "mode %d, length %d, element %d (%#04x): word %d = %#08x, want %#08x", mode, m, i, x, at[q], got[at[q]], w)
					}
				}
			}
		}
	}
}

// TestAMXHgemm: the binary16 product on AMX is the float64 product of the
// operands within float32's error bound, for every layout, beta, edge and
// several K blocks; A and B unchanged, C's padding untouched.
func TestAMXHgemm(t *testing.T) {
	requireAMX(t)
	rng := rand.New(rand.NewPCG(107, 108))
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for _, d := range amxShapes {
				for _, beta := range []float32{0, 1} {
					tc := newCase(rng, tA, tB, d[0], d[1], d[2], 1, beta)
					a, b, aw, bw := tc.f16Operands(rng)
					_, _, c := tc.operands(rng)
					t.Run(tc.String(), func(t *testing.T) {
						want, bound := tc.reference(aw, bw, c)
						a0, b0 := append([]uint16(nil), a...), append([]uint16(nil), b...)
						require.True(t, Hgemm(tA, tB, tc.m, tc.n, tc.k, a, tc.lda, b, tc.ldb, beta, c, tc.ldc))
						require.Equal(t, a0, a, "A")
						require.Equal(t, b0, b, "B")
						requireWithinBound(t, tc, c, want, bound)
					})
				}
			}
		}
	}
}

// TestAMXHgemm16: Hgemm16 stores exactly Hgemm's float32 result (on C
// widened from its 16-bit values when beta = 1) rounded once to binary16
// or bfloat16, over one and several K blocks; the padding is left alone.
// And an element does not depend on the blocking or the number of
// workers: a sub-block's product is bitwise the whole product's there.
func TestAMXHgemm16(t *testing.T) {
	requireAMX(t)
	rng := rand.New(rand.NewPCG(109, 110))
	for _, d := range [][3]int{{65, 70, 301}, {33, 33, 1100}, {64, 64, 256}} {
		for _, beta := range []float32{0, 1} {
			for _, f16 := range []bool{true, false} {
				tc := newCase(rng, rng.IntN(2) == 0, rng.IntN(2) == 0, d[0], d[1], d[2], 1, beta)
				a, b, _, _ := tc.f16Operands(rng)
				_, _, cf := tc.operands(rng)
				c16 := make([]uint16, len(cf))
				want := make([]float32, len(cf))
				for i := range cf {
					c16[i] = round16(f16, cf[i])
					if i%tc.ldc >= tc.n {
						c16[i] = 0xbeef
					}
					want[i] = widen16(f16, c16[i])
				}
				require.True(t, Hgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, a, tc.lda, b, tc.ldb, beta, want, tc.ldc))
				got := append([]uint16(nil), c16...)
				require.True(t, Hgemm16(tc.transA, tc.transB, tc.m, tc.n, tc.k, a, tc.lda, b, tc.ldb, beta, got, tc.ldc, f16, make([]float32, len(cf))))
				for i := range got {
					w := round16(f16, want[i])
					if i%tc.ldc >= tc.n {
						w = 0xbeef
					}
					if got[i] != w {
						require.Failf(t, "Hgemm16", "f16=%v %v: element %d = %#04x, want %#04x (Hgemm's %g rounded)", f16, tc, i, got[i], w, want[i])
					}
				}
			}
		}
	}
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			tc := newCase(rng, tA, tB, 131, 150, 700, 1, 1)
			a, b, _, _ := tc.f16Operands(rng)
			_, _, c0 := tc.operands(rng)
			requireBlockIndependent(t, tc, c0, func(m, n, aOff, bOff int, c []float32) {
				require.True(t, Hgemm(tA, tB, m, n, tc.k, a[aOff:], tc.lda, b[bOff:], tc.ldb, 1, c, tc.ldc))
			})
		}
	}
}

package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMulPacked: products of an A read in place (row- and column-major)
// by rows [p0, p0+k) of a packed B, against float64, on every kernel,
// for shapes with edge tiles in both directions; beta = 1 accumulates.
func TestMulPacked(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, mk := range kernels() {
		withKernel(mk, func() {
			for _, d := range [][3]int{{1, 1, 1}, {14, 32, 64}, {29, 70, 33}, {6, 16, 5}, {50, 64, 100}} {
				m, n, k := d[0], d[1], d[2]
				const p0, ktot = 3, 120
				bFull := randMatrix(rng, ktot, n) // op(B), ktot×n
				bp := make([]float32, PackedBLen(ktot, n))
				PackB(bp, bFull, n, false, ktot, n)
				for _, colMajor := range []bool{false, true} {
					a := randMatrix(rng, m+1, k+1)
					rs, qs := k+1, 1
					if colMajor {
						a = randMatrix(rng, k+1, m+1)
						rs, qs = 1, m+1
					}
					c := randMatrix(rng, m, n+2)
					c0 := append([]float32(nil), c...)
					scratch := make([]float32, MulScratchLen(k))
					panelStride := ktot * mk.nr
					MulPacked(m, n, k, 0.5, a, rs, qs, bp[p0*mk.nr:], panelStride, 1, c, n+2, scratch)
					for i := range m {
						for j := range n + 2 {
							got := c[i*(n+2)+j]
							if j >= n {
								require.Equal(t, c0[i*(n+2)+j], got, "padding written")
								continue
							}
							var s, mag float64
							for p := range k {
								v := float64(a[i*rs+p*qs]) * float64(bFull[(p0+p)*n+j])
								s += v
								mag += math.Abs(v)
							}
							want := 0.5*s + float64(c0[i*(n+2)+j])
							require.InDelta(t, want, got, 4*float64(k+4)*0x1p-24*(mag+1), "%s m%d n%d k%d col %v (%d,%d)", mk.name, m, n, k, colMajor, i, j)
						}
					}
				}
			}
		})
	}
}

// TestSgemmLower: every element on or below the diagonal is bitwise
// Sgemm's, and the tiles wholly above it are left alone (elements above
// the diagonal are either Sgemm's, in a tile that meets the diagonal, or
// untouched).
func TestSgemmLower(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	for _, mk := range kernels() {
		withKernel(mk, func() {
			for _, n := range []int{1, 13, 40, 97, 300} {
				for _, tB := range []bool{false, true} {
					tc := newCase(rng, false, tB, n, n, 70, 1.5, 0)
					a, b, c := tc.operands(rng)
					want := append([]float32(nil), c...)
					Sgemm(tc.transA, tc.transB, n, n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, 0, want, tc.ldc)
					got := append([]float32(nil), c...)
					for i := range got {
						got[i] = sentinel
					}
					SgemmLower(tc.transA, tc.transB, n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, 0, got, tc.ldc)
					for i := range n {
						for j := range n {
							g, w := got[i*tc.ldc+j], want[i*tc.ldc+j]
							if j <= i {
								require.Equal(t, math.Float32bits(w), math.Float32bits(g), "%s n%d (%d,%d)", mk.name, n, i, j)
							} else if g != sentinel {
								require.Equal(t, math.Float32bits(w), math.Float32bits(g), "%s n%d upper (%d,%d)", mk.name, n, i, j)
							}
						}
					}
				}
			}
		})
	}
}

// TestTranspose: every element lands transposed, for sizes around the
// 16×16 blocks.
func TestTranspose(t *testing.T) {
	for _, d := range [][2]int{{1, 1}, {16, 16}, {17, 33}, {40, 16}, {5, 70}} {
		rows, cols := d[0], d[1]
		src := make([]float32, rows*(cols+3))
		for i := range src {
			src[i] = float32(i)
		}
		dst := make([]float32, cols*(rows+2))
		Transpose(dst, rows+2, src, cols+3, rows, cols)
		for i := range rows {
			for j := range cols {
				require.Equal(t, src[i*(cols+3)+j], dst[j*(rows+2)+i], "%v (%d,%d)", d, i, j)
			}
		}
	}
}

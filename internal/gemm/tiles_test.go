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

//go:build cgo

package metal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// TestMuonUpdateIsPerMatrix: MuonUpdate, with Newton–Schulz batched over
// the matrices of each shape, against each matrix's MuonMomentum,
// NewtonSchulz and Axpy on its own, bit for bit (weights and momentum
// buffers), in both flavours, on wide, tall and square matrices whose
// sides are not multiples of the gemm tile, several of a shape and one
// alone, with element counts odd or not multiples of 4 (so that matrices
// of a batch start off a 4-element boundary) and spanning several
// threadgroups of the norm's first pass (65×129: three), over two steps
// (the second starts from the first's momentum); tall matrices (updated
// from the transposed iterate) with both sides multiples of 4, several of
// a shape (the 4×4 vector blocks), and with one side or both not; and the
// dispatches: two per matrix (the momentum, which also writes the norm's
// partial sums of squares, and the axpy, from the transposed iterate for
// a tall shape) and, per shape, the norm's final pass, the scaling, three
// products per iteration and, for a shape not tall with no iteration, the
// store.
func TestMuonUpdateIsPerMatrix(t *testing.T) {
	shapes := [][2]int{{12, 40}, {40, 12}, {12, 40}, {20, 20}, {70, 33}, {12, 40}, {33, 70}, {20, 20}, {70, 33}, {1, 5},
		{3, 5}, {33, 17}, {20, 30}, {3, 5}, {65, 129}, {65, 129}, {24, 8}, {44, 6}, {24, 8}, {7, 1}, {24, 8}, {66, 13}}
	for _, f := range []Flavour{Simd, Portable} {
		for _, steps := range []int{5, 0} {
			t.Run(fmt.Sprintf("%s/steps%d", f, steps), func(t *testing.T) {
				b := New(NewEmulatedRuntime(f))
				rng := rand.New(rand.NewPCG(11, uint64(steps)))
				n := len(shapes)
				ws, ws2 := make([]*backend.Tensor, n), make([]*backend.Tensor, n)
				gs := make([]*backend.Tensor, n)
				bufs, bufs2 := make([]*backend.Tensor, n), make([]*backend.Tensor, n)
				alphas := make([]float32, n)
				upload := func(vals []float32, sh [2]int) (x, y *backend.Tensor) {
					x, y = b.New(backend.F32, sh[0], sh[1]), b.New(backend.F32, sh[0], sh[1])
					b.Upload(x, vals)
					b.Upload(y, vals)
					return x, y
				}
				normal := func(k int, sigma float64) []float32 {
					v := make([]float32, k)
					for i := range v {
						v[i] = float32(sigma * rng.NormFloat64())
					}
					return v
				}
				kinds := map[[2]int]bool{}
				for i, sh := range shapes {
					ws[i], ws2[i] = upload(normal(sh[0]*sh[1], 0.1), sh)
					gs[i] = b.New(backend.F32, sh[0], sh[1])
					bufs[i], bufs2[i] = upload(normal(sh[0]*sh[1], 0.01), sh)
					alphas[i] = float32(-0.02 * (1 + 0.1*float64(i)))
					kinds[sh] = true
				}
				want := 2 * n
				for sh := range kinds {
					want += 2 + 3*steps
					if sh[0] <= sh[1] && steps == 0 {
						want++
					}
				}
				geff, x := b.New(backend.F32, 65*129), b.New(backend.F32, 65*129)
				for step := range 2 {
					for i, sh := range shapes {
						b.Upload(gs[i], normal(sh[0]*sh[1], 0.05))
					}
					before := b.Stats().Dispatches
					b.MuonUpdate(ws, gs, bufs, 0.95, alphas, steps)
					assert.Equal(t, want, int(b.Stats().Dispatches-before), "step %d: dispatches", step)
					for i, sh := range shapes {
						g := geff.Rows(0, sh[0]*sh[1]).Reshape(sh[0], sh[1])
						o := x.Rows(0, sh[0]*sh[1]).Reshape(sh[0], sh[1])
						b.MuonMomentum(bufs2[i], g, gs[i], 0.95)
						b.NewtonSchulz(o, g, steps)
						b.Axpy(ws2[i], o, alphas[i])
					}
					require.NoError(t, b.Sync())
					for i, sh := range shapes {
						for _, pair := range [][2]*backend.Tensor{{ws[i], ws2[i]}, {bufs[i], bufs2[i]}} {
							got, exp := b.Download(pair[0]), b.Download(pair[1])
							for j := range exp {
								if math.Float32bits(got[j]) != math.Float32bits(exp[j]) {
									assert.Failf(t, "batched update differs from the per-matrix one",
										"step %d, matrix %d %dx%d, element %d: batched %g, per matrix %g",
										step, i, sh[0], sh[1], j, got[j], exp[j])
									break
								}
							}
						}
					}
				}
			})
		}
	}
}

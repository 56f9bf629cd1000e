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

// nsPartitionShapes are matrices whose element counts are odd, not
// multiples of 4, exactly one threadgroup's 4,096, or past the 64
// threadgroups' cap, and tall ones (transposed by the scaling) with both
// sides multiples of 4 or one not, with the number of partial sums of squares the
// norm's first pass must produce for each: one per 4,096 elements,
// rounded up, at most 64.
var nsPartitionShapes = []struct {
	R, C, parts int
}{
	{3, 5, 1}, {20, 30, 1}, {33, 17, 1}, {64, 64, 1}, {65, 129, 3}, {17, 300, 2}, {300, 300, 22}, {520, 520, 64},
	{68, 20, 1}, {66, 20, 1}, {68, 21, 1},
}

// sumsqByGroup is the oracle of the norm's first pass: the sum of v[i]²
// over the elements of each of parts threadgroups, element i in 4-element
// chunk i/4, chunk c in threadgroup (c/256) mod parts (256 threads a
// group, thread t of group p taking chunks p·256 + t + s·parts·256). The
// values are small integers (or quarters) whose sums are exact in float32,
// so the comparison does not depend on the order of the sum.
func sumsqByGroup(v []float32, parts int) []float64 {
	out := make([]float64, parts)
	for i, x := range v {
		out[(i/4/256)%parts] += float64(x) * float64(x)
	}
	return out
}

// smallInts are n integers from −3 to 3, exact in every float dtype.
func smallInts(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.IntN(7) - 3)
	}
	return v
}

// TestNewtonSchulzSumsqPartition: NewtonSchulz's sum of squares covers
// every element of g once, each threadgroup summing the 4-element chunks
// the partition gives it, for F32, BF16 and F16 g starting on and off a
// 4-element boundary (the vector and the scalar loads); with no
// iteration, out = g/norm for every element, bit for bit against the
// division in Go (the scaling covers the whole matrix, wide through four
// elements per thread, tall through the transposing kernel), and the
// norm is sqrt(Σ g²) + 1e-7.
func TestNewtonSchulzSumsqPartition(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		rng := rand.New(rand.NewPCG(5, uint64(f)))
		for _, sh := range nsPartitionShapes {
			for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
				for _, off := range []int{0, 1, 3} {
					if dt != backend.F32 && sh.R*sh.C > 100000 && off != 0 {
						continue // the large shapes once per 16-bit dtype
					}
					what := fmt.Sprintf("%v %dx%d %v offset %d", f, sh.R, sh.C, dt, off)
					n := sh.R * sh.C
					vals := smallInts(rng, n)
					whole := make([]float32, n+4)
					copy(whole[off:], vals)
					big := b.New(dt, n+4)
					b.Upload(big, whole)
					g := big.Rows(off, n).Reshape(sh.R, sh.C)
					out := b.New(backend.F32, sh.R, sh.C)
					b.NewtonSchulz(out, g, 0)
					require.NoError(t, b.Sync(), what)

					partial := b.Download(b.ns.partial)
					want := sumsqByGroup(vals, sh.parts)
					total := 0.0
					for p, w := range want {
						assert.Equal(t, w, float64(partial[p]), "%s: partial %d of %d", what, p, sh.parts)
						total += w
					}
					norm := b.Download(b.ns.norm)[0]
					assert.InEpsilon(t, math.Sqrt(total)+1e-7, float64(norm), 1e-6, "%s: norm", what)
					got := b.Download(out)
					bad := 0
					for i, v := range vals {
						x := v / norm
						if math.Float32bits(got[i]) != math.Float32bits(x) {
							if bad == 0 {
								assert.Failf(t, "out is not g/norm", "%s: element %d: %g, want %g", what, i, got[i], x)
							}
							bad++
						}
					}
					assert.Zero(t, bad, "%s: elements of out that are not g/norm", what)
					b.Free(big)
					b.Free(out)
				}
			}
		}
	}
}

// TestNewtonSchulzAlignmentBits: the vector and the element-by-element
// paths of the sum of squares and the scaling give the same bits: g
// starting on a 4-element boundary and off it (every offset) gives the
// same out, after two iterations, wide and tall (both sides multiples of
// 4 or not), in F32 and BF16.
func TestNewtonSchulzAlignmentBits(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		rng := rand.New(rand.NewPCG(7, uint64(f)))
		for _, sh := range [][2]int{{33, 130}, {130, 33}, {20, 30}, {132, 36}} {
			for _, dt := range []backend.DType{backend.F32, backend.BF16} {
				n := sh[0] * sh[1]
				vals := make([]float32, n)
				for i := range vals {
					vals[i] = float32(0.05 * rng.NormFloat64())
				}
				var ref []float32
				for off := range 4 {
					what := fmt.Sprintf("%v %dx%d %v offset %d", f, sh[0], sh[1], dt, off)
					whole := make([]float32, n+4)
					copy(whole[off:], vals)
					big := b.New(dt, n+4)
					b.Upload(big, whole)
					out := b.New(backend.F32, sh[0], sh[1])
					b.NewtonSchulz(out, big.Rows(off, n).Reshape(sh[0], sh[1]), 2)
					got := b.Download(out)
					require.NoError(t, b.Sync(), what)
					if off == 0 {
						ref = got
						continue
					}
					for i := range ref {
						if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
							assert.Failf(t, "unaligned g changes the bits", "%s: element %d: %g, aligned %g", what, i, got[i], ref[i])
							break
						}
					}
					b.Free(big)
					b.Free(out)
				}
			}
		}
	}
}

// TestMuonMomentumSumsqPartials: MuonUpdate's momentum writes each
// matrix's partial sums of squares of geff = g + μ·(μ·buf + g) where the
// norm's first pass would, covering every element once, for several
// matrices of one shape (matrix z's partials from z·parts), on the shapes
// of nsPartitionShapes: with buf = 0 and μ = 1/2, geff = 3g/2, whose
// squares of the integer g are quarters, exact in float32.
func TestMuonMomentumSumsqPartials(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		rng := rand.New(rand.NewPCG(9, uint64(f)))
		for _, sh := range nsPartitionShapes {
			count := 3
			if sh.R*sh.C > 100000 {
				count = 2
			}
			what := fmt.Sprintf("%v %dx%d ×%d", f, sh.R, sh.C, count)
			n := sh.R * sh.C
			ws, gs, bufs := make([]*backend.Tensor, count), make([]*backend.Tensor, count), make([]*backend.Tensor, count)
			geffs := make([][]float32, count)
			for z := range count {
				ws[z], gs[z], bufs[z] = b.New(backend.F32, sh.R, sh.C), b.New(backend.F32, sh.R, sh.C), b.New(backend.F32, sh.R, sh.C)
				g := smallInts(rng, n)
				b.Upload(gs[z], g)
				geffs[z] = make([]float32, n)
				for i, v := range g {
					geffs[z][i] = 1.5 * v
				}
			}
			b.MuonUpdate(ws, gs, bufs, 0.5, make([]float32, count), 0)
			require.NoError(t, b.Sync(), what)
			partial := b.Download(b.ns.partial)
			for z := range count {
				for p, w := range sumsqByGroup(geffs[z], sh.parts) {
					assert.Equal(t, w, float64(partial[z*sh.parts+p]), "%s: matrix %d, partial %d of %d", what, z, p, sh.parts)
				}
				assert.Equal(t, b.Download(gs[z]), b.Download(bufs[z]), "%s: matrix %d: momentum buffer = g", what, z)
			}
			for z := range count {
				b.Free(ws[z])
				b.Free(gs[z])
				b.Free(bufs[z])
			}
		}
	}
}

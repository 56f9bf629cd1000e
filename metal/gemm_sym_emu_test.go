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
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/shaders"
)

// symCase is a batch of symmetric products A = X·Xᵀ (r×r, k = c) and
// A·A: ldc is d's row stride (r + pad).
type symCase struct {
	r, c, batch, pad int
}

func (s symCase) String() string {
	return fmt.Sprintf("r%d_c%d_batch%d_pad%d", s.r, s.c, s.batch, s.pad)
}

// symCases: several tiles with a ragged edge (200 = 3·64 + 8) in a batch of
// 3; an odd row stride (no paired stores; 130 = 2·64 + 2); one tile (the
// diagonal only); and a single 512×512 product with k = 1536 (split-K, the
// slices on the symmetric kernel; float and the simd flavour only, for
// time).
var symCases = []symCase{{200, 130, 3, 0}, {130, 64, 1, 1}, {40, 70, 2, 0}, {512, 1536, 1, 0}}

// symRun runs the full product and the symmetric one on the same x (batch
// matrices r×c, dtype in), both into NaN-poisoned outputs d (batch × r ×
// ldc, dtype in), and returns both outputs, the full one first: X·Xᵀ, and
// when aa (F32 only) then A·A scaled as Newton–Schulz's B, with the full
// product's A as the input of both.
func symRun(t *testing.T, b *Backend, s symCase, in backend.DType, xv []float32, aa bool) (full, sym []float32) {
	t.Helper()
	r, c, z, ldc := s.r, s.c, s.batch, s.r+s.pad
	x := b.New(in, z*r, c)
	b.Upload(x, xv)
	poison := make([]float32, z*r*ldc)
	for i := range poison {
		poison[i] = float32(math.NaN())
	}
	outs := [2]*backend.Tensor{b.New(in, z*r, ldc), b.New(in, z*r, ldc)}
	xxt := shaders.GemmArgs{M: uint32(r), N: uint32(r), K: uint32(c), Lda: uint32(c), Ldb: uint32(c),
		Ldc: uint32(ldc), TransB: 1, Alpha: 1, Batch: uint32(z), StrideA: uint32(r * c), StrideB: uint32(r * c),
		StrideC: uint32(r * ldc)}
	for i, d := range outs {
		b.Upload(d, poison)
		b.a.gemm = xxt
		b.gemmRun(x, x, d, d, in, false, i == 1)
	}
	if aa {
		a := outs[0]
		outs = [2]*backend.Tensor{b.New(in, z*r, ldc), b.New(in, z*r, ldc)}
		for i, d := range outs {
			b.Upload(d, poison)
			b.a.gemm = shaders.GemmArgs{M: uint32(r), N: uint32(r), K: uint32(r), Lda: uint32(ldc), Ldb: uint32(ldc),
				Ldc: uint32(ldc), Alpha: backend.NSC, Beta: backend.NSB, Batch: uint32(z),
				StrideA: uint32(r * ldc), StrideB: uint32(r * ldc), StrideC: uint32(r * ldc)}
			b.gemmRun(a, a, a, d, in, false, i == 1)
		}
		b.Free(a)
	}
	full, sym = b.Download(outs[0]), b.Download(outs[1])
	require.NoError(t, b.Sync(), "%v %v", s, in)
	for _, d := range append(outs[:], x) {
		b.Free(d)
	}
	return full, sym
}

// TestGemmSymIsFullProduct: the symmetric products of Newton–Schulz
// (gemm_nt_sym for X·Xᵀ, gemm_nn_sym for A·A with alpha and beta·A), which
// compute only the tiles on and above the diagonal and mirror them, give
// every element the full product's bits (the padding columns of d left
// untouched, NaN), in both flavours, on batches, ragged edges, an odd row
// stride and a split k; the full X·Xᵀ is itself bitwise symmetric (so its
// mirror is the element itself). In bf16 the paired 4-byte stores of the
// full and symmetric products both give round(the float product).
func TestGemmSymIsFullProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		for _, s := range symCases {
			g := shaders.GemmArgs{M: uint32(s.r), N: uint32(s.r), K: uint32(s.c), Batch: uint32(s.batch)}
			assert.Equal(t, s.c >= 1024, gemmSlice(&g) != 0, "%v: split-K", s)
			if s.r >= 512 && f != Simd {
				continue
			}
			r, ldc := s.r, s.r+s.pad
			xv := make([]float32, s.batch*r*s.c)
			for i := range xv {
				xv[i] = backend.BF16Float(backend.BF16Bits(float32(rng.NormFloat64())))
			}
			for _, in := range []backend.DType{backend.F32, backend.BF16} {
				if s.r >= 512 && (in != backend.F32 || f != Simd) {
					continue
				}
				full, sym := symRun(t, b, s, in, xv, false)
				equalBits(t, full, sym, fmt.Sprintf("%v %v %v X·Xᵀ", f, s, in))
				if in == backend.F32 {
					// Bitwise symmetric, padding untouched.
					bad := 0
					for z := range s.batch {
						for i := range r {
							for j := range ldc {
								v := full[(z*r+i)*ldc+j]
								ok := math.IsNaN(float64(v))
								if j < r {
									ok = math.Float32bits(v) == math.Float32bits(full[(z*r+j)*ldc+i])
								}
								if !ok && bad < 3 {
									assert.Failf(t, "X·Xᵀ", "%v %v: d[%d][%d, %d] = %g, not symmetric or padding written", f, s, z, i, j, v)
								}
								if !ok {
									bad++
								}
							}
						}
					}
					assert.Zero(t, bad, "%v %v", f, s)
					full, sym = symRun(t, b, s, in, xv, true)
					equalBits(t, full, sym, fmt.Sprintf("%v %v A·A", f, s))
					continue
				}
				// bf16: the float product rounded once.
				f32, _ := symRun(t, b, s, backend.F32, xv, false)
				bad := 0
				for i, v := range f32 {
					want := backend.Round(backend.BF16, v)
					if math.Float32bits(full[i]) != math.Float32bits(want) && !(math.IsNaN(float64(v)) && math.IsNaN(float64(full[i]))) {
						if bad < 3 {
							assert.Failf(t, "bf16 X·Xᵀ", "%v %v: element %d = %g, want round(%g) = %g", f, s, i, full[i], v, want)
						}
						bad++
					}
				}
				assert.Zero(t, bad, "%v %v: bf16 elements not the rounded float product", f, s)
			}
		}
	}
}

// equalBits requires got and want to hold the same bits element by
// element (NaNs included), reporting the first few that differ.
func equalBits(t *testing.T, want, got []float32, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: length", what)
	bad := 0
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			if bad < 3 {
				assert.Failf(t, "the symmetric product differs from the full one", "%s: element %d: full %g, symmetric %g",
					what, i, want[i], got[i])
			}
			bad++
		}
	}
	assert.Zero(t, bad, "%s: elements that differ (of %d)", what, len(want))
}

// TestMuonSymAgainstCPU: MuonUpdate, whose Newton–Schulz now runs X·Xᵀ
// and A·A on the symmetric kernels, against the cpu backend's on matrices
// of several 64×64 tiles (so off-diagonal tiles are mirrored), tall, wide
// and square, several of a shape, over two steps, in both flavours:
// momentum buffers within a few ulps, and weights within NewtonSchulz's
// tolerance (2u·|out| + 1e-4, TestNewtonSchulzDTypes) times |alpha|.
func TestMuonSymAgainstCPU(t *testing.T) {
	shapes := [][2]int{{130, 200}, {200, 130}, {130, 200}, {96, 96}, {70, 260}}
	for _, f := range []Flavour{Simd, Portable} {
		t.Run(f.String(), func(t *testing.T) {
			b, ref := New(NewEmulatedRuntime(f)), cpu.New()
			rng := rand.New(rand.NewPCG(21, 22))
			n := len(shapes)
			ws, gs, bufs := make([]*backend.Tensor, n), make([]*backend.Tensor, n), make([]*backend.Tensor, n)
			rws, rgs, rbufs := make([]*backend.Tensor, n), make([]*backend.Tensor, n), make([]*backend.Tensor, n)
			alphas := make([]float32, n)
			normal := func(k int, sigma float64) []float32 {
				v := make([]float32, k)
				for i := range v {
					v[i] = float32(sigma * rng.NormFloat64())
				}
				return v
			}
			for i, sh := range shapes {
				ws[i], rws[i] = b.New(backend.F32, sh[0], sh[1]), ref.New(backend.F32, sh[0], sh[1])
				gs[i], rgs[i] = b.New(backend.F32, sh[0], sh[1]), ref.New(backend.F32, sh[0], sh[1])
				bufs[i], rbufs[i] = b.New(backend.F32, sh[0], sh[1]), ref.New(backend.F32, sh[0], sh[1])
				w, m := normal(sh[0]*sh[1], 0.1), normal(sh[0]*sh[1], 0.01)
				b.Upload(ws[i], w)
				ref.Upload(rws[i], w)
				b.Upload(bufs[i], m)
				ref.Upload(rbufs[i], m)
				alphas[i] = float32(-0.02 * (1 + 0.1*float64(i)))
			}
			for step := range 2 {
				for i, sh := range shapes {
					g := normal(sh[0]*sh[1], 0.05)
					b.Upload(gs[i], g)
					ref.Upload(rgs[i], g)
				}
				b.MuonUpdate(ws, gs, bufs, 0.95, alphas, 5)
				ref.MuonUpdate(rws, rgs, rbufs, 0.95, alphas, 5)
				require.NoError(t, b.Sync())
				worst := 0.0
				for i, sh := range shapes {
					got, want := b.Download(ws[i]), ref.Download(rws[i])
					gotM, wantM := b.Download(bufs[i]), ref.Download(rbufs[i])
					for j := range want {
						tol := math.Abs(float64(alphas[i]))*(2*0x1p-24*1.5+1e-4) + 4*0x1p-24*math.Abs(float64(want[j]))
						d := math.Abs(float64(got[j] - want[j]))
						worst = max(worst, d/math.Abs(float64(alphas[i])))
						if !assert.InDelta(t, float64(want[j]), float64(got[j]), tol,
							"step %d, matrix %d %dx%d: w[%d] against cpu", step, i, sh[0], sh[1], j) {
							break
						}
					}
					for j := range wantM {
						if !assert.InDelta(t, float64(wantM[j]), float64(gotM[j]), 4*0x1p-24*math.Abs(float64(wantM[j]))+1e-12,
							"step %d, matrix %d %dx%d: momentum[%d] against cpu", step, i, sh[0], sh[1], j) {
							break
						}
					}
				}
				t.Logf("step %d: largest |Δw|/|alpha| against cpu %.3g (tolerance 1e-4)", step, worst)
			}
			for _, dir := range []string{"nt_sym", "nn_sym"} {
				_, ok := b.pipes[pipeKey{"gemm", dir, backend.F32}]
				assert.True(t, ok, "Newton–Schulz did not run gemm_%s", dir)
			}
		})
	}
}

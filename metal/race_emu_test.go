//go:build cgo

package metal

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/kemu/msl"
	"github.com/golf-ml/golf/shaders"
)

// raceTestRuntime records the kernels dispatched through it.
type raceTestRuntime struct {
	Runtime
	seen map[string]bool
}

func (r *raceTestRuntime) Dispatch(p Pipeline, grid, group [3]int, args []Arg, tgMem []int) error {
	r.seen[p.Name()] = true
	return r.Runtime.Dispatch(p, grid, group, args, tgMem)
}

// TestKernelsRaceFree runs every kernel family of the library, in both
// flavours, under the emulator's race detector (msl.SetRaceCheck): each
// dispatch runs again with the threads of every threadgroup scheduled in
// reverse and in a random order, and must leave bit-identical buffers. The
// ops run once each in float32 (the synchronisation of a kernel does not
// depend on its element type, but for attention's double-buffered 16-bit
// tiles, which run in bf16 too) on small shapes that still span several
// threadgroups, partial tiles and both attention tile shapes, so the test
// stays cheap; it checks that every (op, direction) of the registry ran.
func TestKernelsRaceFree(t *testing.T) {
	msl.SetRaceCheck(true, 0x5eed)
	defer msl.SetRaceCheck(false, 0)
	for _, f := range []Flavour{Simd, Portable} {
		t.Run(f.String(), func(t *testing.T) {
			rt := &raceTestRuntime{Runtime: NewEmulatedRuntime(f), seen: map[string]bool{}}
			b := New(rt)
			rng := rand.New(rand.NewPCG(1, uint64(f)))
			raceTestOps(t, b, rng)
			require.NoError(t, b.Sync(), "a race, or a dispatch error, in flavour %s", f)

			ran := map[Kernel]bool{}
			for name := range rt.seen {
				for _, k := range Kernels {
					for _, e := range ElemTypes {
						if name == KernelName(k.Op, k.Dir, f, e) {
							ran[k] = true
						}
					}
				}
			}
			var missing []string
			for _, k := range Kernels {
				if !ran[k] {
					missing = append(missing, k.Op+"/"+k.Dir)
				}
			}
			sort.Strings(missing)
			assert.Empty(t, missing, "kernels the race test did not run")
			t.Logf("%s: %d kernels under the race detector", f, len(rt.seen))
		})
	}
}

// raceTestOps calls every op of the backend once on small random inputs.
func raceTestOps(t *testing.T, b backend.Backend, rng *rand.Rand) {
	t.Helper()
	f32 := backend.F32
	rnd := func(dt backend.DType, shape ...int) *backend.Tensor {
		x := b.New(dt, shape...)
		v := make([]float32, x.Len())
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		b.Upload(x, v)
		return x
	}
	ids := func(n, vocab int) *backend.Tensor {
		x := b.New(backend.I32, n)
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(rng.IntN(vocab))
		}
		b.Upload(x, v)
		return x
	}

	// Elementwise and reductions.
	z := rnd(f32, 300)
	b.Zero(z)
	for _, dt := range []backend.DType{backend.BF16, backend.F16} {
		lo := b.New(dt, 300)
		b.Cast(lo, rnd(f32, 300))
		b.Cast(b.New(f32, 300), lo)
	}
	b.Cast(b.New(f32, 300), rnd(f32, 300))
	b.Scale(rnd(f32, 300), 0.5)
	b.Axpy(rnd(f32, 300), rnd(f32, 300), 0.3)
	for _, kind := range []backend.ReduceKind{backend.ReduceSum, backend.ReduceSumSquares, backend.ReduceNonFinite} {
		b.Reduce(b.New(f32, 1), rnd(f32, 5000), kind)
	}

	// Model ops.
	const N, V, C = 40, 9, 200
	tok := ids(N, V)
	b.EmbeddingForward(b.New(f32, N, C), tok, rnd(f32, V, C))
	b.EmbeddingBackward(rnd(f32, V, C), tok, rnd(f32, N, C))

	x, rstd := rnd(f32, 5, C), b.New(f32, 5)
	b.RMSNormForward(b.New(f32, 5, C), rstd, x)
	b.RMSNormBackward(b.New(f32, 5, C), rnd(f32, 5, C), x, rstd, rnd(f32, 5, C))

	mix := rnd(f32, 2, 300)
	x0, x1 := rnd(f32, 7, 300), rnd(f32, 7, 300)
	b.ResidMixForward(b.New(f32, 7, 300), x1, x0, mix)
	b.ResidMixBackward(b.New(f32, 7, 300), rnd(f32, 7, 300), rnd(f32, 2, 300), rnd(f32, 7, 300), x1, x0, mix)

	w, in := rnd(f32, 65, 40), rnd(f32, 70, 40)
	b.LinearForward(b.New(f32, 70, 65), in, w)
	b.LinearBackward(b.New(f32, 70, 40), rnd(f32, 65, 40), rnd(f32, 70, 65), in, w, true)

	const B, T, Hx, Dr = 2, 9, 3, 16
	qx, gain, qr := rnd(f32, B*T, Hx, Dr), rnd(f32, Hx), b.New(f32, B*T, Hx)
	b.QKNormRopeForward(b.New(f32, B*T, Hx, Dr), qr, qx, gain, T, 10000)
	b.QKNormRopeBackward(b.New(f32, B*T, Hx, Dr), rnd(f32, Hx), rnd(f32, B*T, Hx, Dr), qx, qr, gain, T, 10000)

	for _, D := range []int{24, 80} { // both tile shapes
		const Ta, H, Hkv = 70, 2, 1
		q, k, v := rnd(f32, Ta, H, D), rnd(f32, Ta, Hkv, D), rnd(f32, Ta, Hkv, D)
		out, lse := b.New(f32, Ta, H, D), b.New(f32, Ta, H)
		b.AttentionForward(out, lse, q, k, v, Ta)
		// Both backward paths: dS stored (dkv_ds, dq_ds), then with a dS
		// scratch bound of 1 byte, recomputed (dq, dkv).
		for _, bound := range []int{0, 1} {
			if mb, ok := b.(*Backend); ok {
				mb.att.dsMax = bound
			}
			b.AttentionBackward(b.New(f32, Ta, H, D), b.New(f32, Ta, Hkv, D), b.New(f32, Ta, Hkv, D),
				rnd(f32, Ta, H, D), q, k, v, out, lse, Ta)
		}
		if mb, ok := b.(*Backend); ok {
			mb.att.dsMax = 0
		}
	}
	// The 16-bit attention kernels double-buffer their streamed tiles
	// (float ones do not): bf16 at D = 64, the vector path, over several
	// tiles of each kernel.
	{
		const Ta, H, Hkv, D = 140, 2, 1, 64
		bf := backend.BF16
		q, k, v := rnd(bf, Ta, H, D), rnd(bf, Ta, Hkv, D), rnd(bf, Ta, Hkv, D)
		out, lse := b.New(bf, Ta, H, D), b.New(f32, Ta, H)
		b.AttentionForward(out, lse, q, k, v, Ta)
		b.AttentionBackward(b.New(bf, Ta, H, D), b.New(bf, Ta, Hkv, D), b.New(bf, Ta, Hkv, D),
			rnd(bf, Ta, H, D), q, k, v, out, lse, Ta)
	}

	s, y := rnd(f32, 300), rnd(f32, 5, 300)
	b.ScaledAddForward(b.New(f32, 5, 300), rnd(f32, 5, 300), y, s)
	b.ScaledAddBackward(b.New(f32, 5, 300), rnd(f32, 300), rnd(f32, 5, 300), y, s)

	// 4-element vectors and a tail of 1; then views off the vector boundary
	// (one thread per element).
	r := rnd(f32, 501)
	b.ReluSqForward(b.New(f32, 501), r)
	b.ReluSqBackward(b.New(f32, 501), rnd(f32, 501), r)
	rv := r.Rows(1, 500)
	b.ReluSqForward(b.New(f32, 500), rv)
	b.ReluSqBackward(b.New(f32, 500), rnd(f32, 500), rv)

	logits, targets := rnd(f32, 3, 200), ids(3, 200)
	b.SoftcapCEForward(b.New(f32, 3), logits, targets, 30)
	b.SoftcapCEBackward(b.New(f32, 3, 200), logits, targets, 30, 1)

	// Fused ops (rmsnorm_resid_mix_bwd on both sides of its
	// threadgroup-memory limit, over several row blocks).
	b.ResidMixRMSNormForward(b.New(f32, 7, 300), b.New(f32, 7, 300), b.New(f32, 7), x1, x0, mix)
	b.ScaledAddRMSNormForward(b.New(f32, 5, 300), b.New(f32, 5, 300), b.New(f32, 5), rnd(f32, 5, 300), y, s)
	for _, c := range []int{300, 1100} {
		const n = 70
		xm, rs := rnd(f32, n, c), b.New(f32, n)
		b.RMSNormForward(b.New(f32, n, c), rs, xm)
		b.RMSNormResidMixBackward(b.New(f32, n, c), rnd(f32, n, c), rnd(f32, 2, c), rnd(f32, n, c), xm, rs,
			rnd(f32, n, c), rnd(f32, n, c), rnd(f32, n, c), rnd(f32, 2, c))
	}
	kx, kr := rnd(f32, B*T, 1, Dr), b.New(f32, B*T, 1)
	b.QKNormRopePairForward(b.New(f32, B*T, Hx, Dr), qr, qx, gain, b.New(f32, B*T, 1, Dr), kr, kx, nil, T, 10000)
	b.QKNormRopePairBackward(b.New(f32, B*T, Hx, Dr), rnd(f32, Hx), rnd(f32, B*T, Hx, Dr), qx, qr, gain,
		b.New(f32, B*T, 1, Dr), nil, rnd(f32, B*T, 1, Dr), kx, kr, nil, T, 10000)
	b.SoftcapCEForwardBackward(b.New(f32, 3), b.New(f32, 3, 200), logits, targets, 30, 1)
	// The MLP's fused GEMM epilogues (gemm_nt_relu_sq, gemm_nn_drelu_sq):
	// h, a (70, 65) from in (70, 40), w (65, 40); dh (70, 40) from dout
	// (70, 65), w and h (70, 40).
	b.LinearReluSqForward(b.New(f32, 70, 65), b.New(f32, 70, 65), in, w)
	b.LinearReluSqBackward(b.New(f32, 70, 40), rnd(f32, 65, 40), rnd(f32, 70, 65), rnd(f32, 70, 40), rnd(f32, 70, 40), w)
	// The residual epilogue (gemm_nt_scaled_add): y, out (70, 65), out
	// aliasing res.
	sres := rnd(f32, 70, 65)
	b.LinearScaledAddForward(b.New(f32, 70, 65), sres, in, w, sres, rnd(f32, 65))

	// Optimizers.
	b.AdamStep(rnd(f32, 300), rnd(f32, 300), b.New(f32, 300), b.New(f32, 300),
		backend.AdamParams{LR: 0.01, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 1})
	b.MuonMomentum(rnd(f32, 300), b.New(f32, 300), rnd(f32, 300), 0.95)
	b.NewtonSchulz(b.New(f32, 20, 30), rnd(f32, 20, 30), 2)
	b.NewtonSchulz(b.New(backend.BF16, 30, 20), rnd(f32, 30, 20), 2) // tall: transposed, stored
	if mu, ok := b.(backend.MuonBatcher); ok {
		// The momentum fused with the norm's first pass
		// (muon_momentum_sumsq): two matrices of two threadgroups each;
		// tall, so each weight is updated from the transposed iterate
		// (muon_axpy_t, after scale_t): 72×64 by 4×4 vectors, 70×65 element
		// by element.
		for _, sh := range [][2]int{{70, 65}, {72, 64}} {
			r, c := sh[0], sh[1]
			mu.MuonUpdate([]*backend.Tensor{rnd(f32, r, c), rnd(f32, r, c)},
				[]*backend.Tensor{rnd(f32, r, c), rnd(f32, r, c)},
				[]*backend.Tensor{rnd(f32, r, c), rnd(f32, r, c)}, 0.95, []float32{-0.02, -0.03}, 1)
		}
	}

	// Every transpose variant of the gemm kernels, on interior and edge
	// tiles of aligned operands, and a split k (slices and reduction).
	if mb, ok := b.(*Backend); ok {
		for _, f32Out := range []bool{false, true} {
			for _, tr := range [][2]uint32{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
				const m, n, k = 80, 72, 24
				ar, ac, br, bc := m, k, k, n
				if tr[0] != 0 {
					ar, ac = k, m
				}
				if tr[1] != 0 {
					br, bc = n, k
				}
				mb.a.gemm = shaders.GemmArgs{M: m, N: n, K: k, Lda: uint32(ac), Ldb: uint32(bc), Ldc: n,
					TransA: tr[0], TransB: tr[1], Alpha: 1, Beta: 1}
				mb.gemm(rnd(f32, ar, ac), rnd(f32, br, bc), rnd(f32, m, n), b.New(f32, m, n), f32, f32Out)
			}
			mb.a.gemm = shaders.GemmArgs{M: 40, N: 70, K: 1040, Lda: 1040, Ldb: 70, Ldc: 70, Alpha: 1, Beta: 1}
			mb.gemm(rnd(f32, 40, 1040), rnd(f32, 1040, 70), rnd(f32, 40, 70), b.New(f32, 40, 70), f32, f32Out)
		}
	}
}

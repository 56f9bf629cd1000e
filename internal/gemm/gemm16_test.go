package gemm

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// TestGemm16RoundsOnce: Sgemm16 and Bgemm16 store exactly the float32
// product Sgemm forms (with the 16-bit C widened as its input when beta ≠
// 0), rounded once to bfloat16 or float16, for one and several K blocks
// (the earlier ones through the float32 panel), on every kernel and
// bfloat16 path; the padding of C is left alone.
func TestGemm16RoundsOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, k := range kernels() {
		withKernel(k, func() {
			for _, nk := range bkernels() {
				withBKernel(nk, func() {
					for _, f16 := range []bool{false, true} {
						for _, d := range [][3]int{{33, 70, 200}, {14, 32, 600}, {5, 9, 1}, {30, 40, 5}} {
							for _, beta := range []float32{0, 0.5} {
								alpha := float32(-1.5)
								if d[2] == 5 {
									alpha = 0 // C = beta·C without the kernel
								}
								tc := newCase(rng, rng.IntN(2) == 0, rng.IntN(2) == 0, d[0], d[1], d[2], alpha, beta)
								a, b, cf := tc.operands(rng)
								a16, b16 := toBF16s(a), toBF16s(b)
								aw, bw := widenBF16s(a16), widenBF16s(b16)
								c16 := make([]uint16, len(cf))
								for i := range cf {
									c16[i] = round16(f16, cf[i])
									if i%tc.ldc >= tc.n {
										c16[i] = 0xbeef // padding sentinel
									}
								}
								want := make([]float32, len(cf))
								for i := range want {
									want[i] = widen16(f16, c16[i])
								}
								Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, aw, tc.lda, bw, tc.ldb, tc.beta, want, tc.ldc)
								panel := make([]float32, len(cf))
								gotS := append([]uint16(nil), c16...)
								Sgemm16(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, aw, tc.lda, bw, tc.ldb, tc.beta, gotS, tc.ldc, f16, panel)
								gotB := append([]uint16(nil), c16...)
								Bgemm16(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a16, tc.lda, b16, tc.ldb, tc.beta, gotB, tc.ldc, f16, panel)
								for i := range want {
									w := round16(f16, want[i])
									if i%tc.ldc >= tc.n {
										w = 0xbeef
									}
									// Compared first, so that a match costs no assertion call.
									if gotS[i] != w {
										require.Equal(t, w, gotS[i], "%s f16=%v %v: Sgemm16 C[%d] (float32 %g)", k.name, f16, tc, i, want[i])
									}
									// The bfloat16 kernel flushes subnormals; these operands
									// have none, so it agrees too.
									if gotB[i] != w {
										require.Equal(t, w, gotB[i], "%s/%s f16=%v %v: Bgemm16 C[%d] (float32 %g)", k.name, nk.name, f16, tc, i, want[i])
									}
								}
							}
						}
					}
				})
			}
		})
	}
}

// round16 rounds x to binary16 (f16) or bfloat16, to nearest even.
func round16(f16 bool, x float32) uint16 {
	if f16 {
		return backend.F16Bits(x)
	}
	return toBF16(x)
}

// widen16 is the float32 value of a binary16 (f16) or bfloat16 u.
func widen16(f16 bool, u uint16) float32 {
	if f16 {
		return backend.F16Float(u)
	}
	return bf16Float(u)
}

// TestHgemmWide: HgemmWide and HgemmWide16, binary16 operands widened as
// they are packed, return bitwise Sgemm's and Sgemm16's results on the
// operands widened beforehand (as backend.F16Float widens them,
// subnormal halves included), over both transposes, one and several K
// blocks, whole and partial tiles, on every kernel.
func TestHgemmWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	for _, k := range kernels() {
		withKernel(k, func() {
			for _, d := range [][3]int{{33, 70, 200}, {14, 32, 600}, {28, 48, 300}, {5, 9, 1}} {
				for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
					tc := newCase(rng, tr[0], tr[1], d[0], d[1], d[2], 1.25, 0.5)
					a, b, cf := tc.operands(rng)
					a16, b16 := make([]uint16, len(a)), make([]uint16, len(b))
					for i, v := range a {
						a16[i] = backend.F16Bits(v)
						if i%97 == 0 {
							a16[i] = 0x0203 // a subnormal half
						}
					}
					for i, v := range b {
						b16[i] = backend.F16Bits(v)
					}
					aw, bw := make([]float32, len(a)), make([]float32, len(b))
					for i, u := range a16 {
						aw[i] = backend.F16Float(u)
					}
					for i, u := range b16 {
						bw[i] = backend.F16Float(u)
					}
					want := append([]float32(nil), cf...)
					Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, aw, tc.lda, bw, tc.ldb, tc.beta, want, tc.ldc)
					got := append([]float32(nil), cf...)
					HgemmWide(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a16, tc.lda, b16, tc.ldb, tc.beta, got, tc.ldc)
					require.Equal(t, want, got, "%s %v: HgemmWide", k.name, tc)

					c16 := make([]uint16, len(cf))
					for i, v := range cf {
						c16[i] = backend.F16Bits(v)
					}
					want16, got16 := append([]uint16(nil), c16...), append([]uint16(nil), c16...)
					panel := make([]float32, len(cf))
					Sgemm16(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, aw, tc.lda, bw, tc.ldb, tc.beta, want16, tc.ldc, true, panel)
					HgemmWide16(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a16, tc.lda, b16, tc.ldb, tc.beta, got16, tc.ldc, true, panel)
					require.Equal(t, want16, got16, "%s %v: HgemmWide16", k.name, tc)
				}
			}
		})
	}
}

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

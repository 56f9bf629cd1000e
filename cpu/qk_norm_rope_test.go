package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/golf-ml/golf/backend"
)

// TestQKNormRope16BitIsF32Rounded: in BF16 and F16, QKNormRopeForward and
// QKNormRopeBackward return bit for bit what they return in F32 on the
// widened inputs, rounded: the 16-bit paths (the fused bfloat16 and
// binary16 kernels where the head dim is a multiple of 32, rows widened
// into buffers otherwise) change nothing but the storage. Rows span
// several sequences (runs restart at each), with a zero head, large
// values and a gain gradient accumulated onto a nonzero start.
func TestQKNormRope16BitIsF32Rounded(t *testing.T) {
	shapes := []struct{ B, T, Hx, D int }{
		{3, 40, 8, 64}, {2, 33, 3, 32}, {2, 17, 2, 16}, {1, 70, 17, 128}, {2, 5, 4, 6},
	}
	for _, dt := range []backend.DType{backend.BF16, backend.F16} {
		for _, s := range shapes {
			for _, withGain := range []bool{true, false} {
				t.Run(fmt.Sprintf("%v/B%d_T%d_H%d_D%d_gain%v", dt, s.B, s.T, s.Hx, s.D, withGain), func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(s.D), uint64(s.Hx)))
					N, Hx, D := s.B*s.T, s.Hx, s.D
					xv, gv := randVals(r, N*Hx*D, 2), randVals(r, N*Hx*D, 1)
					clear(xv[5*D : 6*D]) // a zero head: rstd = 1/sqrt(eps)
					xv[7*D+1], gv[3] = 3e4, -5e3
					xv, gv = rounded(dt, xv), rounded(dt, gv)
					be := New()
					var gain, gain32 *backend.Tensor
					if withGain {
						g := randVals(r, Hx, 1)
						gain, gain32 = upload(be, backend.F32, g, Hx), upload(be, backend.F32, g, Hx)
					}
					run := func(dt backend.DType, gain *backend.Tensor) (out, rstd, dx, dgain []float32) {
						x, dout := upload(be, dt, xv, N, Hx, D), upload(be, dt, gv, N, Hx, D)
						o, rs, d := be.New(dt, N, Hx, D), be.New(backend.F32, N, Hx), be.New(dt, N, Hx, D)
						be.QKNormRopeForward(o, rs, x, gain, s.T, 10000)
						var dg *backend.Tensor
						if gain != nil {
							dg = upload(be, backend.F32, []float32{0.5, -0.25, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}[:Hx], Hx)
						}
						be.QKNormRopeBackward(d, dg, dout, x, rs, gain, s.T, 10000)
						if dg != nil {
							dgain = be.Download(dg)
						}
						return be.Download(o), be.Download(rs), be.Download(d), dgain
					}
					out16, rstd16, dx16, dg16 := run(dt, gain)
					out32, rstd32, dx32, dg32 := run(backend.F32, gain32)
					sameBits(t, "rstd", rstd16, rstd32)
					sameBits(t, "out", out16, rounded(dt, out32))
					sameBits(t, "dx", dx16, rounded(dt, dx32))
					sameBits(t, "dgain", dg16, dg32)
				})
			}
		}
	}
}

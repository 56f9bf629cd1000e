// Package cudatest holds the checks of the CUDA backend that run both on
// the stand-in driver (package cuda/standin, every CI run) and on a real
// GPU (package cuda/gputest): the tc flavour's attention against a float64
// oracle with its own error model, and the view of a backend that leaves
// those kernels out of the conformance suite. Only tests import it.
package cudatest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
)

// attnOracle is causal grouped-query attention and its backward in
// float64, written out from the definitions (backend.Backend's doc):
//
//	s[t,u] = scale·q[t]·k[u] (u ≤ t);  P = softmax_u(s);  out[t] = Σu P·v[u]
//	δ[t] = Σd dout·out;  dS = P·(dout·v[u] − δ);  dq = scale·Σu dS·k[u]
//	dk[u] = scale·Σt dS·q[t];  dv[u] = Σt P·dout[t]
//
// plus, per element, the sums of |terms| the error bounds need: pv =
// Σu P|v|, pdo = Σt P|dout| (dv), dsk = scale·Σu |dS||k| (dq), dsq =
// scale·Σt |dS||q| (dk).
type attnOracle struct {
	out, lse, dq, dk, dv    []float64
	pv, pdo, dsk, dsq, mout []float64
}

// The backward takes δ from out as stored (stored rounds it), as a forward
// leaves it for the backward on any backend.
func attentionOracle(q, k, v, dout []float64, B, T, H, Hkv, D int, stored func(float64) float64) attnOracle {
	N, G := B*T, H/Hkv
	scale := 1 / math.Sqrt(float64(D))
	o := attnOracle{
		out: make([]float64, N*H*D), lse: make([]float64, N*H), dq: make([]float64, N*H*D),
		dk: make([]float64, N*Hkv*D), dv: make([]float64, N*Hkv*D), pv: make([]float64, N*H*D),
		pdo: make([]float64, N*Hkv*D), dsk: make([]float64, N*H*D), dsq: make([]float64, N*Hkv*D),
		mout: make([]float64, N*H*D),
	}
	qi := func(t, h, d int) int { return (t*H+h)*D + d }
	ki := func(t, h, d int) int { return (t*Hkv+h)*D + d }
	for b := range B {
		for h := range H {
			hk := h / G
			for t := range T {
				tt := b*T + t
				s := make([]float64, t+1)
				mx := math.Inf(-1)
				for u := 0; u <= t; u++ {
					uu := b*T + u
					for d := range D {
						s[u] += q[qi(tt, h, d)] * k[ki(uu, hk, d)]
					}
					s[u] *= scale
					mx = math.Max(mx, s[u])
				}
				sum := 0.0
				for u := range s {
					sum += math.Exp(s[u] - mx)
				}
				lse := mx + math.Log(sum)
				o.lse[tt*H+h] = lse
				p := make([]float64, t+1)
				for u := range s {
					p[u] = math.Exp(s[u] - lse)
				}
				delta := 0.0
				for d := range D {
					acc := 0.0
					for u := range p {
						uu := b*T + u
						acc += p[u] * v[ki(uu, hk, d)]
						o.pv[qi(tt, h, d)] += p[u] * math.Abs(v[ki(uu, hk, d)])
					}
					o.out[qi(tt, h, d)] = acc
					delta += dout[qi(tt, h, d)] * stored(acc)
				}
				for u := range p {
					uu := b*T + u
					dp := 0.0
					for d := range D {
						dp += dout[qi(tt, h, d)] * v[ki(uu, hk, d)]
					}
					ds := p[u] * (dp - delta)
					for d := range D {
						o.dq[qi(tt, h, d)] += scale * ds * k[ki(uu, hk, d)]
						o.dsk[qi(tt, h, d)] += scale * math.Abs(ds*k[ki(uu, hk, d)])
						o.dk[ki(uu, hk, d)] += scale * ds * q[qi(tt, h, d)]
						o.dsq[ki(uu, hk, d)] += scale * math.Abs(ds*q[qi(tt, h, d)])
						o.dv[ki(uu, hk, d)] += p[u] * dout[qi(tt, h, d)]
						o.pdo[ki(uu, hk, d)] += p[u] * math.Abs(dout[qi(tt, h, d)])
					}
				}
			}
		}
	}
	return o
}

// roundTo rounds x to dt (through float32, then the 16-bit conversion of
// package backend).
func roundTo(dt backend.DType, x float64) float64 {
	f := float32(x)
	switch dt {
	case backend.BF16:
		return float64(backend.BF16Float(backend.BF16Bits(f)))
	case backend.F16:
		return float64(backend.F16Float(backend.F16Bits(f)))
	}
	return float64(f)
}

// AttentionTC checks the tc flavour's attention kernels (bf16, fp16;
// head dims up to 64 and the d128 kernels) against the float64 oracle with
// the error model of their design: P (forward, and dv's product) and dS
// (dq's and dk's) are rounded to the 16-bit type T before they enter a
// tensor-core product, an error of at most half an ulp of T each, so
//
//	|out − want| ≤ u_T·Σu P|v| + 6·sqrt(K)·2⁻²⁴·Σu P|v| + ulp_T(want)
//
// (u_T = 2⁻⁸ for bf16 and 2⁻¹¹ for fp16, the unit roundoff; the second
// term the float32 accumulation's, as the conformance suite's policy; the
// third the rounding on store, with room for one boundary crossing), the
// same with Σt P|dout| for dv and scale·Σ|dS||k| (dq), scale·Σ|dS||q| (dk).
// lse has no rounded operand: float32 accuracy. A bound of the plain
// float32 policy (without the first term) is exceeded, which is why the
// conformance suite leaves these kernels out (NoTCAttention): the check
// reports by how much. b is a CUDA backend in the tc flavour.
func AttentionTC(t *testing.T, b backend.Backend) {
	// beyondFP32 counts elements outside the float32 policy's bound (the
	// model without the u_T term), worst their largest error over it.
	beyondFP32, worstFP32 := map[backend.DType]int{}, map[backend.DType]float64{}
	attentionTCCases(t, b, beyondFP32, worstFP32)
	// The rounding of P and dS is visible: without its term the bound
	// fails (if the kernels kept them in float32, this would fail, and they
	// would belong in the conformance suite).
	for _, dt := range []backend.DType{backend.BF16, backend.F16} {
		t.Logf("%v: %d elements beyond the float32 policy's bound, the worst by %.3gx", dt, beyondFP32[dt], worstFP32[dt])
		assert.Positive(t, beyondFP32[dt], "%v: the tc kernels met the float32 policy", dt)
	}
}

// attentionTCCases runs AttentionTC's cases on b, counting into
// beyondFP32 and worstFP32.
func attentionTCCases(t *testing.T, b backend.Backend, beyondFP32 map[backend.DType]int, worstFP32 map[backend.DType]float64) {
	for _, dt := range []backend.DType{backend.BF16, backend.F16} {
		uT := 0x1p-8
		if dt == backend.F16 {
			uT = 0x1p-11
		}
		for _, c := range []struct{ B, T, H, Hkv, D int }{
			{2, 17, 4, 2, 8}, {1, 33, 8, 1, 64}, {1, 67, 4, 2, 8}, {3, 1, 4, 2, 64}, {1, 17, 8, 1, 2},
			{2, 70, 2, 1, 64}, {1, 37, 2, 1, 80}, {1, 45, 2, 1, 96}, {2, 41, 2, 1, 128},
			// Several 128-row query tiles of the D = 64 forward: interior key
			// tiles without a mask, the diagonal, a short last key tile.
			{2, 200, 2, 1, 64}, {1, 256, 4, 2, 64},
		} {
			t.Run(fmt.Sprintf("%v/B%d_T%d_H%d_Hkv%d_D%d", dt, c.B, c.T, c.H, c.Hkv, c.D), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(c.T*1000+c.D), uint64(dt)))
				N := c.B * c.T
				gen := func(n int, sigma float64) []float64 {
					out := make([]float64, n)
					for i := range out {
						out[i] = roundTo(dt, r.NormFloat64()*sigma)
					}
					return out
				}
				q, k, v, dout := gen(N*c.H*c.D, 1.5), gen(N*c.Hkv*c.D, 1), gen(N*c.Hkv*c.D, 1), gen(N*c.H*c.D, 1)
				o := attentionOracle(q, k, v, dout, c.B, c.T, c.H, c.Hkv, c.D, func(x float64) float64 { return roundTo(dt, x) })
				up := func(vals []float64, dt backend.DType, shape ...int) *backend.Tensor {
					x := b.New(dt, shape...)
					f := make([]float32, len(vals))
					for i, v := range vals {
						f[i] = float32(v)
					}
					b.Upload(x, f)
					return x
				}
				qt, kt, vt := up(q, dt, N, c.H, c.D), up(k, dt, N, c.Hkv, c.D), up(v, dt, N, c.Hkv, c.D)
				out, lse := b.New(dt, N, c.H, c.D), b.New(backend.F32, N, c.H)
				b.AttentionForward(out, lse, qt, kt, vt, c.T)
				// The backward gets the oracle's out and lse, as stored.
				outIn := up(o.out, dt, N, c.H, c.D)
				lseIn := up(o.lse, backend.F32, N, c.H)
				doutT := up(dout, dt, N, c.H, c.D)
				dq, dk, dv := b.New(dt, N, c.H, c.D), b.New(dt, N, c.Hkv, c.D), b.New(dt, N, c.Hkv, c.D)
				b.AttentionBackward(dq, dk, dv, doutT, qt, kt, vt, outIn, lseIn, c.T)
				require.NoError(t, b.Sync())

				K := c.T + c.D
				check := func(name string, x *backend.Tensor, want, mag []float64, rounded bool) {
					got := b.Download(x)
					worst, worstAt, over := 0.0, 0, 0
					for i := range got {
						allowed := 6*math.Sqrt(float64(K))*0x1p-24*mag[i] + ulpOf(dt, want[i]) + 0x1p-24
						if rounded {
							allowed += uT * mag[i]
						}
						e := math.Abs(float64(got[i]) - want[i])
						if math.IsNaN(e) || math.IsInf(e, 0) {
							e = math.Inf(1) // a NaN or an infinity is outside every bound
						}
						if e/allowed > worst {
							worst, worstAt = e/allowed, i
						}
						if fp32 := allowed - uT*mag[i]; rounded && e > fp32 {
							beyondFP32[dt]++
							worstFP32[dt] = max(worstFP32[dt], e/fp32)
						}
						if e > allowed {
							over++
						}
					}
					assert.Zero(t, over, "%s: %d of %d elements outside the bound; worst at [%d]: got %g want %g (%.3g of the allowance)",
						name, over, len(got), worstAt, got[worstAt], want[worstAt], worst)
				}
				check("out", out, o.out, o.pv, true)
				check("lse", lse, o.lse, absAll(o.lse), false)
				check("dq", dq, o.dq, o.dsk, true)
				check("dk", dk, o.dk, o.dsq, true)
				check("dv", dv, o.dv, o.pdo, true)
			})
		}
	}
}

func absAll(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Abs(v)
	}
	return out
}

// ulpOf is the spacing of dt's values at x (the normal range's; below it
// the subnormal quantum).
func ulpOf(dt backend.DType, x float64) float64 {
	mant, emin := 24, -126
	switch dt {
	case backend.BF16:
		mant = 8
	case backend.F16:
		mant, emin = 11, -14
	}
	_, e := math.Frexp(x)
	return math.Ldexp(1, max(e-1, emin)-(mant-1))
}

// NoTCAttention is b with attention reported unsupported in bf16 and fp16,
// which the conformance suite skips: for b in the tc flavour, whose 16-bit
// attention kernels round P and dS to the 16-bit type before their second
// products (as FlashAttention-2 does), which the suite's float32 policy does
// not allow, and whose float twin is another kernel (the portable one,
// tiled otherwise), so no twin check can hold for them. AttentionTC checks
// them.
func NoTCAttention(b backend.Backend) backend.Backend { return &noTCAttention{b} }

type noTCAttention struct{ backend.Backend }

// ReorderedSums passes the wrapped backend's answer on (see
// backendtest.ReorderedSums): the suite finds it by a type assertion,
// which the embedded interface alone would not satisfy, and without it the
// tc flavour's 16-bit products would be held to the float32 kernels' order
// of summation.
func (n *noTCAttention) ReorderedSums(dt backend.DType) bool {
	r, ok := n.Backend.(backendtest.ReorderedSums)
	return ok && r.ReorderedSums(dt)
}

func (n *noTCAttention) Supports(op backend.Op, dt backend.DType) bool {
	if op == backend.OpAttention && dt != backend.F32 {
		return false
	}
	return n.Backend.Supports(op, dt)
}

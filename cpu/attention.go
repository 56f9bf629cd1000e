package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
	"github.com/golf-ml/golf/internal/vmath"
)

// attBlock is the number of query rows of each head processed together.
const attBlock = 64

// attShapes checks q, out (N, H, D), k, v (N, Hkv, D), lse (N, H), with N a
// multiple of seqLen and H a multiple of Hkv; it returns N, H, Hkv, D.
func attShapes(op string, out, lse, q, k, v *backend.Tensor, seqLen int) (N, H, Hkv, D int) {
	s := wantRank(op, "q", q, 3)
	N, H, D = s[0], s[1], s[2]
	Hkv = wantRank(op, "k", k, 3)[1]
	wantShape(op, "k", k, N, Hkv, D)
	wantShape(op, "v", v, N, Hkv, D)
	wantShape(op, "out", out, N, H, D)
	wantShape(op, "lse", lse, N, H)
	if Hkv == 0 || H%Hkv != 0 {
		fail(op, "q heads %d not a multiple of k heads %d", H, Hkv)
	}
	if seqLen <= 0 || N%seqLen != 0 {
		fail(op, "rows %d not a multiple of seqLen %d", N, seqLen)
	}
	return N, H, Hkv, D
}

// headRows loads head h (of Hx) of rows [n0, n0+R) of t (·, Hx, D) into dst
// (R·D), zeroing dst's rows R..len(dst)/D.
func headRows(dst []float32, t *backend.Tensor, n0, R, Hx, h, D int) {
	for r := range len(dst) / D {
		if r < R {
			loadRange(t, ((n0+r)*Hx+h)*D, dst[r*D:(r+1)*D])
		} else {
			clear(dst[r*D : (r+1)*D])
		}
	}
}

// storeHeadRows rounds src (R·D) into head h of rows [n0, n0+R) of t.
func storeHeadRows(t *backend.Tensor, src []float32, n0, R, Hx, h, D int) {
	for r := range R {
		storeRange(t, ((n0+r)*Hx+h)*D, src[r*D:(r+1)*D])
	}
}

// AttentionForward is causal grouped-query attention over sequences of
// seqLen = T rows; query head h reads key/value head h/(H/Hkv):
//
//	s[t,u] = scale·q[t,h]·k[u,hk] for u ≤ t, scale = 1/sqrt(D)
//	lse[t,h] = log Σu exp(s[t,u]);  out[t,h] = Σu exp(s[t,u]−lse)·v[u,hk]
//	out, q CD (N, H, D), k, v CD (N, Hkv, D), lse F32 (N, H)
//
// Work is split over (sequence, kv head). Query rows go in blocks of
// attBlock rows of each of the group's G heads; a block's scores against
// keys [0, U) fill an (G·attBlock, U) scratch, never an (N, T) one, and both
// products run through gemm.Sgemm.
func (b *Backend) AttentionForward(out, lse, q, k, v *backend.Tensor, seqLen int) {
	const op = "AttentionForward"
	wantCD(op, []string{"out", "q", "k", "v"}, out, q, k, v)
	wantF32(op, []string{"lse"}, lse)
	N, H, Hkv, D := attShapes(op, out, lse, q, k, v, seqLen)
	T, G := seqLen, H/Hkv
	scale := float32(1 / math.Sqrt(float64(D)))
	ls := f32s(lse)
	parallelFor(N/T*Hkv, 1, func(lo, hi int) {
		M := G * min(attBlock, T)
		ks, vs := make([]float32, T*D), make([]float32, T*D)
		qs, os := make([]float32, M*D), make([]float32, M*D)
		s, sums := make([]float32, M*T), make([]float32, M)
		for unit := lo; unit < hi; unit++ {
			n0, hk := unit/Hkv*T, unit%Hkv
			headRows(ks, k, n0, T, Hkv, hk, D)
			headRows(vs, v, n0, T, Hkv, hk, D)
			for t0 := 0; t0 < T; t0 += attBlock {
				R := min(attBlock, T-t0)
				U, Mr := t0+R, G*R // keys [0, U); rows (j, r) of head hk·G+j, query t0+r
				for j := range G {
					headRows(qs[j*R*D:(j+1)*R*D], q, n0+t0, R, H, hk*G+j, D)
				}
				gemm.Sgemm(false, true, Mr, U, D, scale, qs, D, ks, D, 0, s, U)
				for i := range Mr {
					j, r := i/R, i%R
					row := s[i*U : (i+1)*U]
					l, sum := softmaxRow(row[:t0+r+1])
					clear(row[t0+r+1:])
					ls[(n0+t0+r)*H+hk*G+j] = l
					sums[i] = sum
				}
				gemm.Sgemm(false, false, Mr, D, U, 1, s, U, vs, D, 0, os, D)
				for i := range Mr {
					vmath.Div(os[i*D:(i+1)*D], os[i*D:(i+1)*D], sums[i])
				}
				for j := range G {
					storeHeadRows(out, os[j*R*D:(j+1)*R*D], n0+t0, R, H, hk*G+j, D)
				}
			}
		}
	})
}

// softmaxRow replaces s by exp(s − max s) and returns log Σ exp(s) and the
// sum of the exponentials (summed in float64).
func softmaxRow(s []float32) (lse, sum float32) {
	m := vmath.Max(s)
	z := vmath.ExpSub(s, s, m)
	return m + float32(math.Log(z)), float32(z)
}

// AttentionBackward recomputes P = exp(s − lse) and, with
// δ[t,h] = Σd dout[t,h,d]·out[t,h,d]:
//
//	dv[u] = Σt P[t,u]·dout[t];  dP = dout·vᵀ;  dS = P·(dP − δ)
//	dq[t] = scale·Σu dS[t,u]·k[u];  dk[u] = scale·Σt dS[t,u]·q[t]
//	dq CD (N, H, D), dk, dv CD (N, Hkv, D), overwritten
//	dout, out, q CD (N, H, D), k, v CD (N, Hkv, D), lse F32 (N, H)
//
// dk and dv sum over the query heads of each group. Work is split over
// (sequence, kv head), so each dk and dv row is accumulated by one
// goroutine, block after block in a fixed order; blocks as in
// AttentionForward.
func (b *Backend) AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse *backend.Tensor, seqLen int) {
	const op = "AttentionBackward"
	wantCD(op, []string{"dq", "dk", "dv", "dout", "q", "k", "v", "out"}, dq, dk, dv, dout, q, k, v, out)
	wantF32(op, []string{"lse"}, lse)
	N, H, Hkv, D := attShapes(op, out, lse, q, k, v, seqLen)
	wantShape(op, "dq", dq, N, H, D)
	wantShape(op, "dout", dout, N, H, D)
	wantShape(op, "dk", dk, N, Hkv, D)
	wantShape(op, "dv", dv, N, Hkv, D)
	T, G := seqLen, H/Hkv
	scale := float32(1 / math.Sqrt(float64(D)))
	ls := f32s(lse)
	parallelFor(N/T*Hkv, 1, func(lo, hi int) {
		M := G * min(attBlock, T)
		ks, vs := make([]float32, T*D), make([]float32, T*D)
		dks, dvs := make([]float32, T*D), make([]float32, T*D)
		qs, gs, os := make([]float32, M*D), make([]float32, M*D), make([]float32, M*D)
		p, dp := make([]float32, M*T), make([]float32, M*T)
		for unit := lo; unit < hi; unit++ {
			n0, hk := unit/Hkv*T, unit%Hkv
			headRows(ks, k, n0, T, Hkv, hk, D)
			headRows(vs, v, n0, T, Hkv, hk, D)
			clear(dks)
			clear(dvs)
			for t0 := 0; t0 < T; t0 += attBlock {
				R := min(attBlock, T-t0)
				U, Mr := t0+R, G*R
				for j := range G {
					h := hk*G + j
					headRows(qs[j*R*D:(j+1)*R*D], q, n0+t0, R, H, h, D)
					headRows(gs[j*R*D:(j+1)*R*D], dout, n0+t0, R, H, h, D)
					headRows(os[j*R*D:(j+1)*R*D], out, n0+t0, R, H, h, D)
				}
				gemm.Sgemm(false, true, Mr, U, D, scale, qs, D, ks, D, 0, p, U)
				gemm.Sgemm(false, true, Mr, U, D, 1, gs, D, vs, D, 0, dp, U)
				for i := range Mr {
					j, r := i/R, i%R
					l := ls[(n0+t0+r)*H+hk*G+j]
					var delta float32
					for d := range D {
						delta += gs[i*D+d] * os[i*D+d]
					}
					pr, dr := p[i*U:(i+1)*U], dp[i*U:(i+1)*U]
					last := t0 + r
					vmath.SoftmaxGrad(pr[:last+1], dr[:last+1], l, delta)
					clear(pr[last+1:])
					clear(dr[last+1:])
				}
				// dp now holds dS; os is free for dq.
				gemm.Sgemm(false, false, Mr, D, U, scale, dp, U, ks, D, 0, os, D)
				gemm.Sgemm(true, false, U, D, Mr, scale, dp, U, qs, D, 1, dks, D)
				gemm.Sgemm(true, false, U, D, Mr, 1, p, U, gs, D, 1, dvs, D)
				for j := range G {
					storeHeadRows(dq, os[j*R*D:(j+1)*R*D], n0+t0, R, H, hk*G+j, D)
				}
			}
			storeHeadRows(dk, dks, n0, T, Hkv, hk, D)
			storeHeadRows(dv, dvs, n0, T, Hkv, hk, D)
		}
	})
}

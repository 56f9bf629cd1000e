package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// qk_norm_rope: shaders/qk_norm_rope.metal, one team of qkTeam threads
// per head of a row (four teams a simdgroup), each thread taking chunks of
// 4 rotary pairs with vector loads where vecAligned, with the rotary table
// computed once on the host and a deterministic two-pass dgain.

func init() { supported[backend.OpQKNormRope] = true }

// qkRopeKey identifies a rotary table.
type qkRopeKey struct {
	seqLen, dim int
	base        float32
}

// qkRopeState is what the op keeps on the Backend between calls.
type qkRopeState struct {
	// tables holds cos(pθ_i), sin(pθ_i) interleaved, F32 (T, D/2, 2),
	// θ_i = base^(−2i/D), computed in float64 and rounded to float32.
	tables map[qkRopeKey]*backend.Tensor
	// partial holds Σ_d dout·R(u) per head of a backward call, F32 (N·Hx)
	// or longer; it grows and is kept.
	partial *backend.Tensor
}

// qkRope returns the op's state, creating it on first use.
func (b *Backend) qkRope() *qkRopeState {
	if b.qk == nil {
		b.qk = &qkRopeState{tables: map[qkRopeKey]*backend.Tensor{}}
	}
	return b.qk
}

// qkRopeTable returns the (cached) rotary table for seqLen positions of
// head dim D; building one uploads it into a new tensor (no wait).
func (b *Backend) qkRopeTable(seqLen, D int, base float32) *backend.Tensor {
	s := b.qkRope()
	k := qkRopeKey{seqLen, D, base}
	if t, ok := s.tables[k]; ok {
		return t
	}
	t := b.New(backend.F32, seqLen, D/2, 2)
	b.Upload(t, backend.RopeTable(seqLen, D, base))
	s.tables[k] = t
	return t
}

// qkRopePartial returns the dgain scratch with room for n floats.
func (b *Backend) qkRopePartial(n int) *backend.Tensor {
	s := b.qkRope()
	if s.partial == nil || s.partial.Len() < n {
		if s.partial != nil {
			// Command buffers still reading the old buffer keep it alive.
			b.Free(s.partial)
			b.scratchGrowths++
		}
		s.partial = b.New(backend.F32, n)
	}
	return s.partial
}

// qkRopeShapes checks x (N, Hx, D) with D even and N a multiple of seqLen,
// rstd F32 (N, Hx) and gain F32 (Hx) or nil, and returns N, Hx, D.
func qkRopeShapes(op string, x, rstd, gain *backend.Tensor, seqLen int) (N, Hx, D int) {
	normFloat(op, x.DType, x)
	checkDType(op, backend.F32, rstd)
	if len(x.Shape) != 3 {
		panic(fmt.Sprintf("metal: %s: x %v is not 3-D", op, x))
	}
	N, Hx, D = x.Shape[0], x.Shape[1], x.Shape[2]
	if D%2 != 0 {
		panic(fmt.Sprintf("metal: %s: head dim of x %v is odd", op, x))
	}
	if seqLen <= 0 || N%seqLen != 0 {
		panic(fmt.Sprintf("metal: %s: rows of x %v not a multiple of seqLen %d", op, x, seqLen))
	}
	normShape(op, "rstd", rstd, N, Hx)
	if gain != nil {
		checkDType(op, backend.F32, gain)
		normShape(op, "gain", gain, Hx)
	}
	return N, Hx, D
}

// qkTeam is the number of threads of a head's team (qk_norm_rope.metal's
// qk_team).
const qkTeam = 8

// qkRopeThreads is the threadgroup size for nh heads: whole simdgroups of
// 32/qkTeam teams each, up to 256 threads (32 heads) per threadgroup.
func qkRopeThreads(p Pipeline, nh int) int {
	return 32 * max(1, min(8, (nh*qkTeam+31)/32, p.MaxThreads()/32))
}

// qkRopeGroups is the grid for nh heads of t threads per threadgroup.
func qkRopeGroups(nh, t int) [3]int {
	return [3]int{(nh*qkTeam + t - 1) / t, 1, 1}
}

// QKNormRopeForward, per row n and head h of x (N, Hx, D): RMSNorm over D,
// rotary embedding at position p = n mod seqLen (halves i and i+D/2), gain:
//
//	rstd[n,h] = 1/sqrt(mean_d x[n,h,d]² + RMSNormEps);  u = x·rstd
//	out[i]     = g[h]·(u[i]·cos(pθ_i) − u[i+D/2]·sin(pθ_i))
//	out[i+D/2] = g[h]·(u[i]·sin(pθ_i) + u[i+D/2]·cos(pθ_i))
//	out CD (N, Hx, D), rstd F32 (N, Hx), x CD (N, Hx, D), gain F32 (Hx) or nil
func (b *Backend) QKNormRopeForward(out, rstd, x, gain *backend.Tensor, seqLen int, base float32) {
	const op = "QKNormRopeForward"
	N, Hx, D := qkRopeShapes(op, x, rstd, gain, seqLen)
	checkDType(op, x.DType, out)
	normShape(op, "out", out, N, Hx, D)
	if N*Hx == 0 {
		return
	}
	rope := b.qkRopeTable(seqLen, D, base)
	hasGain := uint32(1)
	if gain == nil {
		gain, hasGain = rope, 0 // bound but never read
	}
	p := b.pipe("qk_norm_rope", "fwd", x.DType)
	b.a.rope = shaders.RopeArgs{Rows: uint32(N), Heads: uint32(Hx), HeadDim: uint32(D), SeqLen: uint32(seqLen),
		Base: base, Eps: backend.RMSNormEps, HasGain: hasGain}
	b.begin()
	b.arg(x)
	b.arg(rope)
	b.arg(gain)
	b.arg(out)
	b.arg(rstd)
	bytesArg(b, &b.a.rope)
	b.alignedArg(vecAligned(D/2, x, out))
	t := qkRopeThreads(p, N*Hx)
	b.dispatch(p, qkRopeGroups(N*Hx, t), [3]int{t, 1, 1})
}

// QKNormRopeBackward: with y = R(u) the rotated normalised row,
//
//	du = g[h]·Rᵀ(dout);  dx = rstd·(du − u·mean_d(du·u))   dx CD (N, Hx, D), overwritten
//	dgain[h] += Σ_{n,d} dout[n,h,d]·y[n,h,d]                dgain F32 (Hx); nil to skip, nil when gain is nil
//	dout, x CD (N, Hx, D), rstd F32 (N, Hx), gain F32 (Hx) or nil
//
// dgain is summed in a fixed order: per-head partials, then a second
// kernel adds them over n.
func (b *Backend) QKNormRopeBackward(dx, dgain, dout, x, rstd, gain *backend.Tensor, seqLen int, base float32) {
	const op = "QKNormRopeBackward"
	N, Hx, D := qkRopeShapes(op, x, rstd, gain, seqLen)
	checkDType(op, x.DType, dx, dout)
	normShape(op, "dx", dx, N, Hx, D)
	normShape(op, "dout", dout, N, Hx, D)
	if dgain != nil {
		if gain == nil {
			panic(fmt.Sprintf("metal: %s: dgain given without gain", op))
		}
		checkDType(op, backend.F32, dgain)
		normShape(op, "dgain", dgain, Hx)
	}
	if N*Hx == 0 {
		return
	}
	rope := b.qkRopeTable(seqLen, D, base)
	partial := b.qkRopePartial(N * Hx)
	hasGain := uint32(1)
	if gain == nil {
		gain, hasGain = rope, 0 // bound but never read
	}
	p := b.pipe("qk_norm_rope", "bwd", x.DType)
	b.a.rope = shaders.RopeArgs{Rows: uint32(N), Heads: uint32(Hx), HeadDim: uint32(D), SeqLen: uint32(seqLen),
		Base: base, Eps: backend.RMSNormEps, HasGain: hasGain}
	b.begin()
	b.arg(dout)
	b.arg(x)
	b.arg(rstd)
	b.arg(rope)
	b.arg(gain)
	b.arg(dx)
	b.arg(partial)
	bytesArg(b, &b.a.rope)
	b.alignedArg(vecAligned(D/2, dout, x, dx))
	t := qkRopeThreads(p, N*Hx)
	b.dispatch(p, qkRopeGroups(N*Hx, t), [3]int{t, 1, 1})
	if dgain == nil {
		return
	}
	p = b.pipe("qk_norm_rope", "dgain", x.DType)
	b.begin()
	b.arg(partial)
	b.arg(dgain)
	bytesArg(b, &b.a.rope)
	b.dispatch(p, [3]int{Hx, 1, 1}, [3]int{normThreads(p, N), 1, 1})
}

package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// The q/k RMSNorm + rotary embedding + gain over
// cuda/kernels/qk_norm_rope.cu (as metal/qk_norm_rope.go): G lanes per
// head (qkLanes), 8 warps per block; cos and sin from a table computed
// once per (seqLen, D, base) in float64.

// qkLanes is G, the lanes of one head in the qk_norm_rope kernels: the
// power of two at or above the head's ⌈(D/2)/8⌉ chunks of pairs, at most
// 32 (qk_norm_rope.cu's qk_lanes).
func qkLanes(D int) int {
	nch := (D/2 + rowChunk - 1) / rowChunk
	g := 1
	for g < nch && g < 32 {
		g <<= 1
	}
	return g
}

// qkHeadsPerBlock is the heads a block of threads covers: 32/G per warp.
func qkHeadsPerBlock(threads, D int) int { return threads / 32 * (32 / qkLanes(D)) }

type qkRopeKey struct {
	seqLen, dim int
	base        float32
}

type qkRopeState struct {
	tables  map[qkRopeKey]*backend.Tensor
	partial *backend.Tensor
}

func (b *Backend) qkRope() *qkRopeState {
	if b.qk == nil {
		b.qk = &qkRopeState{tables: map[qkRopeKey]*backend.Tensor{}}
	}
	return b.qk
}

// qkRopeTable is the F32 (seqLen, D/2, 2) table of cos(pθ_i), sin(pθ_i),
// θ_i = base^(−2i/D), uploaded on first use.
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

func qkRopeShapes(op string, x, rstd, gain *backend.Tensor, seqLen int) (N, Hx, D int) {
	normFloat(op, x.DType, x)
	checkDType(op, backend.F32, rstd)
	if len(x.Shape) != 3 {
		panic(fmt.Sprintf("cuda: %s: x %v is not 3-D", op, x))
	}
	N, Hx, D = x.Shape[0], x.Shape[1], x.Shape[2]
	if D%2 != 0 {
		panic(fmt.Sprintf("cuda: %s: head dim of x %v is odd", op, x))
	}
	if seqLen <= 0 || N%seqLen != 0 {
		panic(fmt.Sprintf("cuda: %s: rows of x %v not a multiple of seqLen %d", op, x, seqLen))
	}
	normShape(op, "rstd", rstd, N, Hx)
	if gain != nil {
		checkDType(op, backend.F32, gain)
		normShape(op, "gain", gain, Hx)
	}
	return N, Hx, D
}

// QKNormRopeForward: per head, RMSNorm over D, rotary embedding, gain.
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
		hasGain = 0
	}
	b.a.rope = shaders.RopeArgs{Rows: uint32(N), Heads: uint32(Hx), HeadDim: uint32(D), SeqLen: uint32(seqLen),
		Base: base, Eps: backend.RMSNormEps, HasGain: hasGain}
	heads := qkHeadsPerBlock(b.threads("qk_norm_rope", "fwd", x.DType), D)
	b.launch("qk_norm_rope", "fwd", x.DType, [3]int{blocks(N*Hx, heads), 1, 1}, x, rope, gain, out, rstd,
		structArg(&b.a.rope))
}

// QKNormRopeBackward: dx (overwritten) and dgain += Σ dout·R(u) (nil to
// skip), the latter through per-head partials added in row order.
func (b *Backend) QKNormRopeBackward(dx, dgain, dout, x, rstd, gain *backend.Tensor, seqLen int, base float32) {
	const op = "QKNormRopeBackward"
	N, Hx, D := qkRopeShapes(op, x, rstd, gain, seqLen)
	checkDType(op, x.DType, dx, dout)
	normShape(op, "dx", dx, N, Hx, D)
	normShape(op, "dout", dout, N, Hx, D)
	if dgain != nil {
		if gain == nil {
			panic(fmt.Sprintf("cuda: %s: dgain given without gain", op))
		}
		checkDType(op, backend.F32, dgain)
		normShape(op, "dgain", dgain, Hx)
	}
	if N*Hx == 0 {
		return
	}
	rope := b.qkRopeTable(seqLen, D, base)
	s := b.qkRope()
	partial := b.scratch(&s.partial, N*Hx)
	hasGain := uint32(1)
	if gain == nil {
		hasGain = 0
	}
	b.a.rope = shaders.RopeArgs{Rows: uint32(N), Heads: uint32(Hx), HeadDim: uint32(D), SeqLen: uint32(seqLen),
		Base: base, Eps: backend.RMSNormEps, HasGain: hasGain}
	heads := qkHeadsPerBlock(b.threads("qk_norm_rope", "bwd", x.DType), D)
	b.launch("qk_norm_rope", "bwd", x.DType, [3]int{blocks(N*Hx, heads), 1, 1}, dout, x, rstd, rope, gain, dx,
		partial, structArg(&b.a.rope))
	if dgain == nil {
		return
	}
	b.launch("qk_norm_rope", "dgain", x.DType, [3]int{Hx, 1, 1}, partial, dgain, structArg(&b.a.rope))
}

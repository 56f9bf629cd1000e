package cuda

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// Causal grouped-query flash attention over cuda/kernels/attention.cu (as
// metal/attention.go): head dims up to 64 take the unsuffixed kernels,
// 65..128 the _d128 ones; the backward is δ = rowsum(dout⊙out), then dq
// per query tile and dk, dv per key tile, every sum in a fixed order.

// attMaxD is the largest head dim of the kernels.
const attMaxD = 128

// attTileRows is the query (fwd, dq) or key (dkv) rows of one block: 32
// in the portable kernels, 64 in the tensor-core ones (attention.cu's
// file comment; the launch table's grids).
func attTileRows(f Flavour) int {
	if f == TC {
		return 64
	}
	return 32
}

// attFwdRows is the query rows of one forward block: 128 in the tc
// kernel at head dim 64 (attention_fwd_fa2), else attTileRows.
func attFwdRows(f Flavour, D int) int {
	if f == TC && D == 64 {
		return 128
	}
	return attTileRows(f)
}

type attentionState struct {
	delta *backend.Tensor
}

func attShape(op, name string, t *backend.Tensor, dt backend.DType, dims ...int) {
	if t.DType != dt {
		panic(fmt.Sprintf("cuda: %s: %s %v, want dtype %v", op, name, t, dt))
	}
	ok := len(t.Shape) == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = t.Shape[i] == dims[i]
	}
	if !ok {
		panic(fmt.Sprintf("cuda: %s: %s %v, want shape %v", op, name, t, append([]int(nil), dims...)))
	}
}

func attShapes(op string, out, lse, q, k, v *backend.Tensor, seqLen int) shaders.AttentionArgs {
	dt := q.DType
	if dt != backend.F32 && dt != backend.F16 && dt != backend.BF16 {
		panic(fmt.Sprintf("cuda: %s: q %v is not a float dtype", op, q))
	}
	if len(q.Shape) != 3 || len(k.Shape) != 3 {
		panic(fmt.Sprintf("cuda: %s: q %v and k %v must be (N, H, D) and (N, Hkv, D)", op, q, k))
	}
	N, H, D, Hkv := q.Shape[0], q.Shape[1], q.Shape[2], k.Shape[1]
	attShape(op, "k", k, dt, N, Hkv, D)
	attShape(op, "v", v, dt, N, Hkv, D)
	attShape(op, "out", out, dt, N, H, D)
	attShape(op, "lse", lse, backend.F32, N, H)
	switch {
	case Hkv <= 0 || H%Hkv != 0:
		panic(fmt.Sprintf("cuda: %s: %d query heads not a multiple of %d key/value heads", op, H, Hkv))
	case seqLen <= 0 || N%seqLen != 0:
		panic(fmt.Sprintf("cuda: %s: %d rows not a multiple of seqLen %d", op, N, seqLen))
	case D < 2 || D > attMaxD || D%2 != 0:
		panic(fmt.Sprintf("cuda: %s: head dim %d outside the kernels' even 2..%d", op, D, attMaxD))
	}
	return shaders.AttentionArgs{
		Batch: uint32(N / seqLen), SeqLen: uint32(seqLen), Heads: uint32(H), KvHeads: uint32(Hkv),
		HeadDim: uint32(D), Scale: float32(1 / math.Sqrt(float64(D))),
	}
}

// attDir is the kernel of dir for head dim D.
func attDir(dir string, D int) string {
	if D > 64 {
		return dir + "_d128"
	}
	return dir
}

// attFlavour is the flavour whose code runs for dt: TC only in half and
// bfloat.
func (b *Backend) attFlavour(dt backend.DType) Flavour {
	if b.flavour == TC && dt != backend.F32 {
		return TC
	}
	return Portable
}

// AttentionForward: out and lse, grid (⌈T/rows⌉, H, B).
func (b *Backend) AttentionForward(out, lse, q, k, v *backend.Tensor, seqLen int) {
	const op = "AttentionForward"
	a := attShapes(op, out, lse, q, k, v, seqLen)
	if a.Batch == 0 {
		return
	}
	rows := attFwdRows(b.attFlavour(q.DType), int(a.HeadDim))
	b.a.attention = a
	b.launch("attention", attDir("fwd", int(a.HeadDim)), q.DType, [3]int{blocks(seqLen, rows), int(a.Heads), int(a.Batch)},
		q, k, v, out, lse, structArg(&b.a.attention))
}

// AttentionBackward: δ, then dq (grid (⌈T/rows⌉, H, B)) and dk, dv (grid
// (⌈T/rows⌉, Hkv, B)), overwritten.
func (b *Backend) AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse *backend.Tensor, seqLen int) {
	const op = "AttentionBackward"
	a := attShapes(op, out, lse, q, k, v, seqLen)
	attShape(op, "dout", dout, q.DType, q.Shape...)
	attShape(op, "dq", dq, q.DType, q.Shape...)
	attShape(op, "dk", dk, q.DType, k.Shape...)
	attShape(op, "dv", dv, q.DType, k.Shape...)
	if a.Batch == 0 {
		return
	}
	dt := q.DType
	n := int(a.Batch) * seqLen * int(a.Heads)
	delta := b.scratch(&b.att.delta, n)
	b.a.attention = a
	b.launch1D("attention", "delta", dt, n, dout, out, delta, structArg(&b.a.attention))
	rows := attTileRows(b.attFlavour(dt))
	D := int(a.HeadDim)
	b.launch("attention", attDir("dq", D), dt, [3]int{blocks(seqLen, rows), int(a.Heads), int(a.Batch)},
		q, k, v, dout, lse, delta, dq, structArg(&b.a.attention))
	b.launch("attention", attDir("dkv", D), dt, [3]int{blocks(seqLen, rows), int(a.KvHeads), int(a.Batch)},
		q, k, v, dout, lse, delta, dk, dv, structArg(&b.a.attention))
}

package metal

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// attention: shaders/attention.metal, flash attention in both directions:
// the forward streams key/value tiles past a query tile with an online
// softmax; the backward computes δ = rowsum(dout⊙out) into a scratch, then
// dk, dv (one pass over the query tiles of every query head of the group,
// per key tile), storing dS into a bounded scratch, and dq from it (one
// pass over the key tiles of each query tile); when the scratch would
// exceed its bound, dq recomputes S and dP itself. The forward keeps no
// score matrix larger than a tile. The simd kernels are
// compiled for head dims 64 and 128 (any other D ≤ 128 runs the next
// larger one with zero-padded columns) and, at D = 64 or 128, move
// 16 bytes per device access: the tensors must then start at 16-byte
// offsets (attAligned).

func init() { supported[backend.OpAttention] = true }

// attMaxD is the largest head dim of the kernels (attention_dmax).
const attMaxD = 128

// Threads per threadgroup of the tile kernels (attention.metal: each is
// laid out for exactly these, [[max_total_threads_per_threadgroup]]), and
// of the simd δ kernel's coalesced path (whole simdgroups).
const (
	attFwdSimdThreads = 128 // attention_simd_threads: 4 simdgroups × 16 rows
	attTileThreads    = 128 // attention_tile_threads: the portable tile kernels
	attFwdPortThreads = attTileThreads
	attDqThreads      = attTileThreads // both flavours
	attDkvThreads     = attTileThreads // both flavours
	attDeltaThreads   = 256
)

// attTiles are the rows of the tile each threadgroup of a kernel owns: the
// query tile of the forward and of dq, the key tile of dk/dv. They follow
// the kernels' tile shapes (attention.metal): the simd kernels own 64 rows
// (4 simdgroups × 16) at every head dim; the portable backward halves its
// tiles for head dims above 64 to stay within 32 KiB of threadgroup memory.
func attTiles(f Flavour, D int) (fwdBQ, dqBQ, dkvBK int) {
	if f == Simd {
		return 64, 64, 64
	}
	if D <= 64 {
		return 32, 32, 32
	}
	return 32, 16, 16
}

// attentionState is what the op keeps on the Backend: δ of a backward call,
// F32 (N·H) or longer, and the dS scratch of the stored-dS backward
// (attDSFloats); both grow and are kept. dsMax is the largest dS scratch
// in bytes a call may use (0: attDSMaxBytes): a call whose scratch would be
// larger recomputes S and dP in the dq kernel instead.
type attentionState struct {
	delta *backend.Tensor
	ds    *backend.Tensor
	dsMax int
}

// attDSMaxBytes bounds the dS scratch; attDSFloats is its size
// (backend.AttentionDSFloats: attention.metal's attention_ds_head per
// sequence and head).
const attDSMaxBytes = backend.AttentionDSMaxBytes

func attDSFloats(B, T, H int) int { return backend.AttentionDSFloats(B, T, H) }

// attDS returns the dS scratch with room for n floats, or nil when n
// floats exceed the bound.
func (b *Backend) attDS(n int) *backend.Tensor {
	s := &b.att
	limit := s.dsMax
	if limit == 0 {
		limit = attDSMaxBytes
	}
	if 4*n > limit {
		return nil
	}
	if s.ds == nil || s.ds.Len() < n {
		if s.ds != nil {
			b.Free(s.ds)
		}
		s.ds = b.New(backend.F32, n)
	}
	return s.ds
}

// attDelta returns the δ scratch with room for n floats.
func (b *Backend) attDelta(n int) *backend.Tensor {
	s := &b.att
	if s.delta == nil || s.delta.Len() < n {
		if s.delta != nil {
			// Command buffers still reading the old buffer keep it alive.
			b.Free(s.delta)
		}
		s.delta = b.New(backend.F32, n)
	}
	return s.delta
}

// attShape panics unless t has dtype dt and shape dims.
func attShape(op, name string, t *backend.Tensor, dt backend.DType, dims ...int) {
	if t.DType != dt {
		panic(fmt.Sprintf("metal: %s: %s %v, want dtype %v", op, name, t, dt))
	}
	ok := len(t.Shape) == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = t.Shape[i] == dims[i]
	}
	if !ok {
		want := append([]int(nil), dims...) // dims itself must not escape: no allocation per call
		panic(fmt.Sprintf("metal: %s: %s %v, want shape %v", op, name, t, want))
	}
}

// attShapes checks q, out (N, H, D) in one float dtype, k, v (N, Hkv, D)
// likewise, lse F32 (N, H), H a multiple of Hkv, N a multiple of seqLen and
// 1 ≤ D ≤ attMaxD, and returns the kernels' arguments.
func attShapes(op string, out, lse, q, k, v *backend.Tensor, seqLen int) shaders.AttentionArgs {
	dt := q.DType
	if dt != backend.F32 && dt != backend.F16 && dt != backend.BF16 {
		panic(fmt.Sprintf("metal: %s: q %v is not a float dtype", op, q))
	}
	if len(q.Shape) != 3 || len(k.Shape) != 3 {
		panic(fmt.Sprintf("metal: %s: q %v and k %v must be (N, H, D) and (N, Hkv, D)", op, q, k))
	}
	N, H, D, Hkv := q.Shape[0], q.Shape[1], q.Shape[2], k.Shape[1]
	attShape(op, "k", k, dt, N, Hkv, D)
	attShape(op, "v", v, dt, N, Hkv, D)
	attShape(op, "out", out, dt, N, H, D)
	attShape(op, "lse", lse, backend.F32, N, H)
	switch {
	case Hkv <= 0 || H%Hkv != 0:
		panic(fmt.Sprintf("metal: %s: %d query heads not a multiple of %d key/value heads", op, H, Hkv))
	case seqLen <= 0 || N%seqLen != 0:
		panic(fmt.Sprintf("metal: %s: %d rows not a multiple of seqLen %d", op, N, seqLen))
	case D < 1 || D > attMaxD:
		panic(fmt.Sprintf("metal: %s: head dim %d outside the kernels' 1..%d", op, D, attMaxD))
	}
	return shaders.AttentionArgs{
		Batch: uint32(N / seqLen), SeqLen: uint32(seqLen), Heads: uint32(H), KvHeads: uint32(Hkv),
		HeadDim: uint32(D), Scale: float32(1 / math.Sqrt(float64(D))),
	}
}

// attExact reports whether the simd kernels run head dim D on their
// vector path: D is one of the compile-time head dims (64, 128).
func attExact(f Flavour, D int) bool {
	return f == Simd && (D == 64 || D == 128)
}

// attAligned panics unless every tensor starts 16 bytes into its buffer or
// a multiple of that: the simd kernels' vector path loads and stores 16
// bytes at a time (rows of 64 or 128 elements keep every row aligned).
func attAligned(op string, ts ...*backend.Tensor) {
	for _, t := range ts {
		if t.Offset*t.DType.Size()%16 != 0 {
			panic(fmt.Sprintf("metal: %s: tensor %v starts %d bytes into its buffer; attention's vector path needs a multiple of 16",
				op, t, t.Offset*t.DType.Size()))
		}
	}
}

// attPipe returns the pipeline of kernel dir in dt, checking that it runs
// the threads the kernel's tiles are laid out for.
func (b *Backend) attPipe(dir string, dt backend.DType, threads int) Pipeline {
	p := b.pipe("attention", dir, dt)
	if p.MaxThreads() < threads {
		panic(fmt.Sprintf("metal: attention %s kernel runs at most %d threads per threadgroup, its tiles need %d",
			dir, p.MaxThreads(), threads))
	}
	return p
}

// AttentionForward is causal grouped-query attention over sequences of
// seqLen = T rows; query head h reads key/value head h/(H/Hkv):
//
//	s[t,u] = scale·q[t,h]·k[u,hk] for u ≤ t, scale = 1/sqrt(D)
//	lse[t,h] = log Σu exp(s[t,u]);  out[t,h] = Σu exp(s[t,u]−lse)·v[u,hk]
//	out, q CD (N, H, D), k, v CD (N, Hkv, D), lse F32 (N, H)
//
// One threadgroup per (query tile, head, sequence).
func (b *Backend) AttentionForward(out, lse, q, k, v *backend.Tensor, seqLen int) {
	const op = "AttentionForward"
	a := attShapes(op, out, lse, q, k, v, seqLen)
	if a.Batch == 0 {
		return
	}
	bq, _, _ := attTiles(b.caps.Flavour, int(a.HeadDim))
	threads := attFwdSimdThreads
	if b.caps.Flavour == Portable {
		threads = attFwdPortThreads
	}
	if attExact(b.caps.Flavour, int(a.HeadDim)) {
		attAligned(op, out, q, k, v)
	}
	p := b.attPipe("fwd", q.DType, threads)
	b.a.attention = a
	b.begin()
	b.arg(q)
	b.arg(k)
	b.arg(v)
	b.arg(out)
	b.arg(lse)
	bytesArg(b, &b.a.attention)
	b.dispatch(p, [3]int{(seqLen + bq - 1) / bq, int(a.Heads), int(a.Batch)}, [3]int{threads, 1, 1})
}

// AttentionBackward recomputes P = exp(s − lse) and, with
// δ[t,h] = Σd dout[t,h,d]·out[t,h,d]:
//
//	dv[u] = Σt P[t,u]·dout[t];  dP = dout·vᵀ;  dS = P·(dP − δ)
//	dq[t] = scale·Σu dS[t,u]·k[u];  dk[u] = scale·Σt dS[t,u]·q[t]
//	dq CD (N, H, D), dk, dv CD (N, Hkv, D), overwritten
//	dout, out, q CD (N, H, D), k, v CD (N, Hkv, D), lse F32 (N, H)
//
// dk and dv sum over the query heads of each group. Three dispatches: δ
// into its scratch; then, when the dS scratch fits (attDS), dk and dv per
// (key tile, key/value head, sequence), storing dS as they go, and dq per
// (query tile, head, sequence) from the stored dS (10·D FLOPs per causal
// pair); otherwise dq recomputing S and dP, then dk and dv (14·D). In the
// simd flavour at D = 64 and 128 the stored-dS path is two: dk/dv
// computes each query tile's δ itself (AttentionArgs.OwnDelta, the same
// bits as attention_delta's) and there is no δ pass.
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
	rows := int(a.Batch) * seqLen * int(a.Heads)
	delta := b.attDelta(rows)

	exact := attExact(b.caps.Flavour, int(a.HeadDim))
	if exact {
		attAligned(op, dq, dk, dv, dout, q, k, v, out)
	}
	ds := b.attDS(attDSFloats(int(a.Batch), seqLen, int(a.Heads)))
	if ds != nil && exact {
		a.OwnDelta = 1
	}
	b.a.attention = a
	if a.OwnDelta == 0 {
		threads := 1
		if exact {
			threads = attDeltaThreads
		}
		p := b.attPipe("delta", dt, threads)
		b.begin()
		b.arg(dout)
		b.arg(out)
		b.arg(delta)
		bytesArg(b, &b.a.attention)
		if exact {
			// One thread per 16 bytes of dout, in whole threadgroups.
			n := rows * int(a.HeadDim) / (16 / dt.Size())
			b.dispatch(p, [3]int{(n + attDeltaThreads - 1) / attDeltaThreads, 1, 1}, [3]int{attDeltaThreads, 1, 1})
		} else {
			b.dispatch1D(p, rows)
		}
	}

	_, dqBQ, dkvBK := attTiles(b.caps.Flavour, int(a.HeadDim))
	dkvGrid := [3]int{(seqLen + dkvBK - 1) / dkvBK, int(a.KvHeads), int(a.Batch)}
	dqGrid := [3]int{(seqLen + dqBQ - 1) / dqBQ, int(a.Heads), int(a.Batch)}
	if ds != nil {
		var o *backend.Tensor // attention_dkv_ds_simd's buffer 10, read with OwnDelta
		if b.caps.Flavour == Simd {
			o = out
		}
		b.attDkv("dkv_ds", dt, dkvGrid, q, k, v, dout, lse, delta, dk, dv, ds, o)
		p := b.attPipe("dq_ds", dt, attDqThreads)
		b.begin()
		b.arg(ds)
		b.arg(k)
		b.arg(dq)
		bytesArg(b, &b.a.attention)
		b.dispatch(p, dqGrid, [3]int{attDqThreads, 1, 1})
		return
	}

	p := b.attPipe("dq", dt, attDqThreads)
	b.begin()
	b.arg(q)
	b.arg(k)
	b.arg(v)
	b.arg(dout)
	b.arg(lse)
	b.arg(delta)
	b.arg(dq)
	bytesArg(b, &b.a.attention)
	b.dispatch(p, dqGrid, [3]int{attDqThreads, 1, 1})
	b.attDkv("dkv", dt, dkvGrid, q, k, v, dout, lse, delta, dk, dv, nil, nil)
}

// attDkv dispatches the dk/dv kernel dir (dkv, or dkv_ds with the dS
// scratch ds) over grid, with b.a.attention set; out (the forward's
// output: the simd dkv_ds's, read with OwnDelta) is bound after the
// arguments when not nil.
func (b *Backend) attDkv(dir string, dt backend.DType, grid [3]int, q, k, v, dout, lse, delta, dk, dv, ds, out *backend.Tensor) {
	p := b.attPipe(dir, dt, attDkvThreads)
	b.begin()
	b.arg(q)
	b.arg(k)
	b.arg(v)
	b.arg(dout)
	b.arg(lse)
	b.arg(delta)
	b.arg(dk)
	b.arg(dv)
	if ds != nil {
		b.arg(ds)
	}
	bytesArg(b, &b.a.attention)
	if out != nil {
		b.arg(out)
	}
	b.dispatch(p, grid, [3]int{attDkvThreads, 1, 1})
}

package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// embedding: shaders/embedding.metal. The forward gathers one element per
// thread; the backward runs one threadgroup per (vocabulary row, column
// tile), which finds that row's tokens in order with a prefix sum and adds
// their gradients in token order (deterministic, no atomics; see the
// shader).

func init() { supported[backend.OpEmbedding] = true }

// embeddingShape checks ids I32 (N) and a (V, C) table; it returns N, V, C.
func embeddingShape(op string, ids, table *backend.Tensor) (N, V, C int) {
	checkDType(op, backend.I32, ids)
	if len(ids.Shape) != 1 {
		panic(fmt.Sprintf("metal: %s: ids %v, want rank 1", op, ids))
	}
	if len(table.Shape) != 2 {
		panic(fmt.Sprintf("metal: %s: %v, want rank 2", op, table))
	}
	return ids.Shape[0], table.Shape[0], table.Shape[1]
}

// EmbeddingForward gathers rows: out[n,:] = w[ids[n],:]. An id outside
// [0, V) gives a zero row (the kernel cannot report it without a sync).
func (b *Backend) EmbeddingForward(out, ids, w *backend.Tensor) {
	const op = "EmbeddingForward"
	ewCheckFloat(op, w)
	checkDType(op, w.DType, out)
	N, V, C := embeddingShape(op, ids, w)
	ewCheckShape(op, N, C, out)
	if N*C == 0 {
		return
	}
	b.a.embedding = shaders.EmbeddingArgs{Rows: uint32(N), Cols: uint32(C), Vocab: uint32(V)}
	b.begin()
	b.arg(ids)
	b.arg(w)
	b.arg(out)
	bytesArg(b, &b.a.embedding)
	b.dispatch1D(b.pipe("embedding", "fwd", w.DType), N*C)
}

// EmbeddingBackward scatter-adds dw[ids[n],:] += dout[n,:] in the order of
// n (the CPU backend's order, so the results agree bit for bit). Ids
// outside [0, V) add nothing.
func (b *Backend) EmbeddingBackward(dw, ids, dout *backend.Tensor) {
	const op = "EmbeddingBackward"
	checkDType(op, backend.F32, dw)
	ewCheckFloat(op, dout)
	N, V, C := embeddingShape(op, ids, dw)
	ewCheckShape(op, N, C, dout)
	if N == 0 || V*C == 0 {
		return
	}
	p := b.pipe("embedding", "bwd", dout.DType)
	// One column per thread, 512 threads for the baseline's C = 512.
	w := min(512, p.MaxThreads(), (C+31)/32*32)
	b.a.embedding = shaders.EmbeddingArgs{Rows: uint32(N), Cols: uint32(C), Vocab: uint32(V)}
	b.begin()
	b.arg(ids)
	b.arg(dout)
	b.arg(dw)
	bytesArg(b, &b.a.embedding)
	b.dispatch(p, [3]int{V, (C + w - 1) / w, 1}, [3]int{w, 1, 1})
}

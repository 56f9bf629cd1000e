package cuda

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// The token embedding over cuda/kernels/embedding.cu (as
// metal/embedding.go).

func embeddingShape(op string, ids, table *backend.Tensor) (N, V, C int) {
	checkDType(op, backend.I32, ids)
	if len(ids.Shape) != 1 {
		panic(fmt.Sprintf("cuda: %s: ids %v, want rank 1", op, ids))
	}
	if len(table.Shape) != 2 {
		panic(fmt.Sprintf("cuda: %s: %v, want rank 2", op, table))
	}
	return ids.Shape[0], table.Shape[0], table.Shape[1]
}

// EmbeddingForward gathers rows: out[n,:] = w[ids[n],:], one thread per
// element.
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
	b.launch1D("embedding", "fwd", w.DType, N*C, ids, w, out, structArg(&b.a.embedding))
}

// EmbeddingBackward adds dout's rows into dw in token order: grid (V,
// ⌈C/256⌉), each block owning one vocabulary row and 256 columns.
func (b *Backend) EmbeddingBackward(dw, ids, dout *backend.Tensor) {
	const op = "EmbeddingBackward"
	checkDType(op, backend.F32, dw)
	ewCheckFloat(op, dout)
	N, V, C := embeddingShape(op, ids, dw)
	ewCheckShape(op, N, C, dout)
	if N == 0 || V*C == 0 {
		return
	}
	t := b.threads("embedding", "bwd", dout.DType)
	b.a.embedding = shaders.EmbeddingArgs{Rows: uint32(N), Cols: uint32(C), Vocab: uint32(V)}
	b.launch("embedding", "bwd", dout.DType, [3]int{V, blocks(C, t), 1}, ids, dout, dw, structArg(&b.a.embedding))
}

// ewCheckShape panics unless every tensor is (N, C).
func ewCheckShape(op string, N, C int, ts ...*backend.Tensor) {
	for _, t := range ts {
		if len(t.Shape) != 2 || t.Shape[0] != N || t.Shape[1] != C {
			panic(fmt.Sprintf("cuda: %s: %v, want shape [%d %d]", op, t, N, C))
		}
	}
}

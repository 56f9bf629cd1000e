package metal

import "github.com/golf-ml/golf/backend"

// embedding: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) EmbeddingForward(out, ids, w *backend.Tensor) { unsupported(backend.OpEmbedding) }

func (b *Backend) EmbeddingBackward(dw, ids, dout *backend.Tensor) { unsupported(backend.OpEmbedding) }

package metal

import "github.com/golf-ml/golf/backend"

// elementwise: not yet implemented over the Runtime (Supports reports it).

func (b *Backend) Cast(dst, src *backend.Tensor) { unsupported(backend.OpCast) }

func (b *Backend) Scale(x *backend.Tensor, s float32) { unsupported(backend.OpScale) }

func (b *Backend) Axpy(dst, x *backend.Tensor, alpha float32) { unsupported(backend.OpAxpy) }

func (b *Backend) Reduce(dst, x *backend.Tensor, kind backend.ReduceKind) {
	unsupported(backend.OpReduce)
}

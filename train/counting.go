package train

import "github.com/golf-ml/golf/backend"

// countingBackend allocates nothing and computes nothing: it records the
// bytes the model and optimizer ask for, so the memory plan comes from the
// real allocation path.
type countingBackend struct{ live, peak int64 }

var _ backend.Backend = (*countingBackend)(nil)

func (c *countingBackend) Name() string                            { return "count" }
func (c *countingBackend) Device() string                          { return "none" }
func (c *countingBackend) Supports(backend.Op, backend.DType) bool { return true }

func (c *countingBackend) New(dt backend.DType, shape ...int) *backend.Tensor {
	t := &backend.Tensor{Shape: append([]int(nil), shape...), DType: dt}
	n := int64(t.Len() * dt.Size())
	t.Data = n
	c.live += n
	c.peak = max(c.peak, c.live)
	return t
}

func (c *countingBackend) Free(t *backend.Tensor) {
	if n, ok := t.Data.(int64); ok {
		c.live -= n
	}
}

func (c *countingBackend) Upload(*backend.Tensor, any)                                           {}
func (c *countingBackend) Download(t *backend.Tensor) []float32                                  { return make([]float32, t.Len()) }
func (c *countingBackend) Sync() error                                                           { return nil }
func (c *countingBackend) Zero(*backend.Tensor)                                                  {}
func (c *countingBackend) Cast(_, _ *backend.Tensor)                                             {}
func (c *countingBackend) Scale(*backend.Tensor, float32)                                        {}
func (c *countingBackend) Axpy(_, _ *backend.Tensor, _ float32)                                  {}
func (c *countingBackend) Reduce(_, _ *backend.Tensor, _ backend.ReduceKind)                     {}
func (c *countingBackend) Accumulate(_, _ *backend.Tensor, _ float32)                            {}
func (c *countingBackend) ReadScalar(*backend.Tensor) (float64, error)                           { return 0, nil }
func (c *countingBackend) EmbeddingForward(_, _, _ *backend.Tensor)                              {}
func (c *countingBackend) EmbeddingBackward(_, _, _ *backend.Tensor)                             {}
func (c *countingBackend) RMSNormForward(_, _, _ *backend.Tensor)                                {}
func (c *countingBackend) RMSNormBackward(_, _, _, _, _ *backend.Tensor)                         {}
func (c *countingBackend) ResidMixForward(_, _, _, _ *backend.Tensor)                            {}
func (c *countingBackend) ResidMixBackward(_, _, _, _, _, _, _ *backend.Tensor)                  {}
func (c *countingBackend) LinearForward(_, _, _ *backend.Tensor)                                 {}
func (c *countingBackend) LinearBackward(_, _, _, _, _ *backend.Tensor, _ bool)                  {}
func (c *countingBackend) QKNormRopeForward(_, _, _, _ *backend.Tensor, _ int, _ float32)        {}
func (c *countingBackend) QKNormRopeBackward(_, _, _, _, _, _ *backend.Tensor, _ int, _ float32) {}
func (c *countingBackend) AttentionForward(_, _, _, _, _ *backend.Tensor, _ int)                 {}
func (c *countingBackend) AttentionBackward(_, _, _, _, _, _, _, _, _ *backend.Tensor, _ int)    {}
func (c *countingBackend) ScaledAddForward(_, _, _, _ *backend.Tensor)                           {}
func (c *countingBackend) ScaledAddBackward(_, _, _, _, _ *backend.Tensor)                       {}
func (c *countingBackend) ReluSqForward(_, _ *backend.Tensor)                                    {}
func (c *countingBackend) ReluSqBackward(_, _, _ *backend.Tensor)                                {}
func (c *countingBackend) SoftcapCEForward(_, _, _ *backend.Tensor, _ float32)                   {}
func (c *countingBackend) SoftcapCEBackward(_, _, _ *backend.Tensor, _, _ float32)               {}
func (c *countingBackend) AdamStep(_, _, _, _ *backend.Tensor, _ backend.AdamParams)             {}
func (c *countingBackend) MuonMomentum(_, _, _ *backend.Tensor, _ float32)                       {}
func (c *countingBackend) NewtonSchulz(_, _ *backend.Tensor, _ int)                              {}

func (c *countingBackend) ResidMixRMSNormForward(_, _, _, _, _, _ *backend.Tensor)  {}
func (c *countingBackend) ScaledAddRMSNormForward(_, _, _, _, _, _ *backend.Tensor) {}
func (c *countingBackend) QKNormRopePairForward(_, _, _, _, _, _, _, _ *backend.Tensor, _ int, _ float32) {
}
func (c *countingBackend) QKNormRopePairBackward(_, _, _, _, _, _, _, _, _, _, _, _ *backend.Tensor, _ int, _ float32) {
}
func (c *countingBackend) RMSNormResidMixBackward(_, _, _, _, _, _, _, _, _, _ *backend.Tensor) {}
func (c *countingBackend) SoftcapCEForwardBackward(_, _, _, _ *backend.Tensor, _, _ float32)    {}
func (c *countingBackend) LinearReluSqForward(_, _, _, _ *backend.Tensor)                       {}
func (c *countingBackend) LinearReluSqBackward(_, _, _, _, _, _ *backend.Tensor)                {}
func (c *countingBackend) LinearScaledAddForward(_, _, _, _, _, _ *backend.Tensor)              {}

package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
)

// TestReorderedSums: the 16-bit products are reordered against the float32
// ones exactly where different kernels compute them: the tensor-core
// flavour, or cuBLASLt; the portable gemm kernels are one template over
// the storage type.
func TestReorderedSums(t *testing.T) {
	for _, c := range []struct {
		flavour Flavour
		path    GEMMPath
		want    bool
	}{{Portable, GEMMKernels, false}, {TC, GEMMKernels, true}, {Portable, GEMMCublasLt, true}, {TC, GEMMCublasLt, true}} {
		b := &Backend{flavour: c.flavour, gemmPath: c.path}
		for _, dt := range []backend.DType{backend.BF16, backend.F16} {
			assert.Equal(t, c.want, b.ReorderedSums(dt), "%v, %v, %v", c.flavour, c.path, dt)
		}
		assert.False(t, b.ReorderedSums(backend.F32), "%v, %v, fp32", c.flavour, c.path)
	}
}

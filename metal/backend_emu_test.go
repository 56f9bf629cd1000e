//go:build cgo

package metal

import (
	"testing"

	"github.com/golf-ml/golf/backend/backendtest"
)

// TestConformanceEmulated runs the conformance suite on the Metal backend
// over the emulated runtime, in both kernel flavours: every implemented
// kernel × dtype against the float64 oracles; ops not yet implemented are
// reported "not supported".
func TestConformanceEmulated(t *testing.T) {
	for _, f := range []Flavour{Simd, Portable} {
		t.Run(f.String(), func(t *testing.T) {
			backendtest.RunAll(t, New(NewEmulatedRuntime(f)))
		})
	}
}

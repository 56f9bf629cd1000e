//go:build cgo

package metal

import (
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/internal/kemu/msl"
)

// TestLibraryIsRegistry: the shader library holds exactly the kernels of the
// registry, in both flavours and all element types: nothing the host asks
// for is missing, nothing compiled is unused.
func TestLibraryIsRegistry(t *testing.T) {
	want := HostNames()
	sort.Strings(want)
	got := msl.Kernels()
	assert.Empty(t, absent(want, got), "registry kernels that are not in the library")
	assert.Empty(t, absent(got, want), "library kernels that are not in the registry")
}

// absent returns the elements of xs that are not in ys.
func absent(xs, ys []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(ys, x) {
			out = append(out, x)
		}
	}
	return out
}

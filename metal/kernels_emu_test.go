//go:build cgo

package metal

import (
	"reflect"
	"sort"
	"testing"

	"github.com/golf-ml/golf/internal/kemu/msl"
)

// TestLibraryIsRegistry: the shader library holds exactly the kernels of the
// registry, in both flavours and all element types: nothing the host asks
// for is missing, nothing compiled is unused.
func TestLibraryIsRegistry(t *testing.T) {
	want := HostNames()
	sort.Strings(want)
	got := msl.Kernels()
	if !reflect.DeepEqual(got, want) {
		gm, wm := map[string]bool{}, map[string]bool{}
		for _, n := range got {
			gm[n] = true
		}
		for _, n := range want {
			wm[n] = true
			if !gm[n] {
				t.Errorf("registry kernel %s is not in the library", n)
			}
		}
		for _, n := range got {
			if !wm[n] {
				t.Errorf("library kernel %s is not in the registry", n)
			}
		}
	}
}

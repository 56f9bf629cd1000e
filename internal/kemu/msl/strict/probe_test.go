package strict

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/shaders"
)

// TestProbesAreStrictMSL: the device probes (shaders/probe), which the
// Metal runtime compiles on their own at start-up, pass every rule, each
// file alone as the runtime compiles it.
func TestProbesAreStrictMSL(t *testing.T) {
	cfg := libraryConfig(t)
	names := shaders.ProbeFiles()
	require.NotEmpty(t, names)
	for _, name := range names {
		vs, err := Check(cfg, []string{filepath.Join(cfg.Include, filepath.FromSlash(name))})
		require.NoError(t, err, name)
		for _, v := range vs {
			assert.Fail(t, "strict MSL violation in a probe", "%s: %v", name, v)
		}
	}
}

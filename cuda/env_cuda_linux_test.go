//go:build cuda && linux

package cuda

import (
	"os"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cGetenv reads the C environment, which NVRTC reads, through libc's
// getenv.
func cGetenv(t *testing.T, key string) string {
	t.Helper()
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	require.NoError(t, err)
	var getenv func(string) string
	purego.RegisterLibFunc(&getenv, libc, "getenv")
	return getenv(key)
}

// TestNoNVRTCCache: with CUDA_CACHE_DISABLE unset, NVRTC is loaded with it
// at 1 in the C environment (its compute cache would return programs
// without ptxas's report); a value the user set is kept.
func TestNoNVRTCCache(t *testing.T) {
	old, had := os.LookupEnv(EnvCUDACacheDisable)
	t.Cleanup(func() {
		if had {
			os.Setenv(EnvCUDACacheDisable, old)
		} else {
			os.Unsetenv(EnvCUDACacheDisable)
		}
	})
	require.NoError(t, os.Unsetenv(EnvCUDACacheDisable))
	require.Equal(t, "", cGetenv(t, EnvCUDACacheDisable))
	noNVRTCCache()
	assert.Equal(t, "1", cGetenv(t, EnvCUDACacheDisable))

	require.NoError(t, os.Setenv(EnvCUDACacheDisable, "0"))
	noNVRTCCache()
	assert.Equal(t, "0", cGetenv(t, EnvCUDACacheDisable))
}

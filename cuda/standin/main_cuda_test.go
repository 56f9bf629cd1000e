//go:build cuda

package standin

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/internal/kemu/cudacpp"
)

var (
	lib    cudacpp.Library
	libErr error
	handle *cudacpp.Handle
)

// TestMain points golf's loader at the stand-in before any test loads the
// driver.
func TestMain(m *testing.M) {
	lib, libErr = Use()
	if libErr == nil {
		handle, libErr = cudacpp.Open(lib)
	}
	os.Exit(m.Run())
}

// requireLibs skips a test without the stand-in or NVRTC, unless
// GOLF_REQUIRE_CUDA_LIBS=1 (CI) makes that a failure.
func requireLibs(t *testing.T) {
	t.Helper()
	err := libErr
	if err == nil {
		_, err = cuda.LoadNVRTC()
	}
	if err == nil {
		return
	}
	if os.Getenv("GOLF_REQUIRE_CUDA_LIBS") == "1" {
		t.Fatalf("the stand-in driver and NVRTC are required: %v", err)
	}
	t.Skipf("not supported: %v", err)
}

var (
	cacheOnce sync.Once
	cache     *cuda.Cache
)

// testCache is GOLF_CUDA_CACHE_DIR's cache, else one for this process, so
// that the library compiles once per test binary.
func testCache(t *testing.T) *cuda.Cache {
	cacheOnce.Do(func() {
		if d := os.Getenv(cuda.EnvCacheDir); d != "" {
			cache = &cuda.Cache{Dir: d}
			return
		}
		d, err := os.MkdirTemp("", "golf-cuda-cache-")
		if err != nil {
			panic(err)
		}
		cache = &cuda.Cache{Dir: d}
	})
	return cache
}

// open opens the CUDA backend on the stand-in.
func open(t *testing.T, o cuda.Options) *cuda.Backend {
	t.Helper()
	requireLibs(t)
	b, err := cuda.OpenDevice(cuda.DeviceOptions{Options: o, Cache: testCache(t)})
	require.NoError(t, err, "stand-in: %s", handle.LastError())
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

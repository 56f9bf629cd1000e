//go:build cuda

package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without an NVIDIA driver (CI, this project's machines) loading libcuda
// is one clear error naming every path tried and how to get the driver;
// cuBLASLt's handle, which needs a device, fails with a named status. With
// a driver, the device opens on its own thread.
func TestDriverLoadsOrSaysWhy(t *testing.T) {
	drv, err := LoadDriver()
	if err != nil {
		var le *LoadError
		require.True(t, errors.As(err, &le), "%v", err)
		assert.Equal(t, "CUDA driver", le.Lib.Name)
		assert.True(t, strings.HasPrefix(err.Error(), "cuda: CUDA driver "), err.Error())
		assert.Contains(t, err.Error(), "\n  libcuda.so.1: ")
		assert.Contains(t, err.Error(), "install the NVIDIA driver")

		if l, lerr := LoadCublasLt(); lerr == nil {
			_, herr := l.NewHandle()
			require.Error(t, herr, "cublasLtCreate without a driver")
			assert.Contains(t, herr.Error(), "cublasLtCreate: CUBLAS_STATUS_")
		}
		return
	}
	t.Logf("driver %s at %s", driverVersionString(mustVersion(t, drv)), DriverPath(drv))
	c, err := OpenContext(drv, 0)
	require.NoError(t, err)
	defer c.Close()
	t.Logf("device 0: %s, %s, %d SMs, %d MiB", c.Info.Name, c.Info.Arch(), c.Info.SMs, c.Info.TotalMem>>20)
	require.NoError(t, c.Do(func(d Driver) error {
		p, err := d.MemAlloc(1 << 20)
		if err != nil {
			return err
		}
		return d.MemFree(p)
	}))
}

func mustVersion(t *testing.T, d Driver) int {
	v, err := d.DriverVersion()
	require.NoError(t, err)
	return v
}

func TestDriverVersionString(t *testing.T) {
	assert.Equal(t, "12.4", driverVersionString(12040))
	assert.Equal(t, "11.8", driverVersionString(11080))
	assert.Equal(t, "13.0", driverVersionString(13000))
}

//go:build cuda

package train

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cuda"
)

// The cuda build registers --backend cuda. The backend's host code (the
// ops over the driver, cuBLASLt plans, the memory plan) is not written
// yet: the opener finds the driver, the device and NVRTC — so that
// --backend auto says exactly what this machine has — and then says so.
func init() {
	RegisterBackend("cuda", func() (backend.Backend, error) {
		drv, err := cuda.LoadDriver()
		if err != nil {
			return nil, err
		}
		if err := drv.Init(); err != nil {
			return nil, err
		}
		n, err := drv.DeviceCount()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("cuda: the driver sees no device")
		}
		if _, err := cuda.LoadNVRTC(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("cuda: %d device(s) and NVRTC found, but the CUDA backend's ops are not implemented yet; `golf kernels --backend cuda` compiles and checks its kernels", n)
	})
}

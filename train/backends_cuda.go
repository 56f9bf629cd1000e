//go:build cuda

package train

import (
	"fmt"
	"os"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cuda"
)

// The cuda build registers --backend cuda: the first device, golf's
// kernels compiled by NVRTC for it (cached on disk; the first start prints
// a line about the compile on stderr), GEMMs through cuBLASLt (golf's gemm
// kernels without it). A failure keeps its full message (every library
// path tried, for --backend cuda) and a one-line summary for --backend
// auto's log.
func init() {
	RegisterBackend("cuda", func() (backend.Backend, error) {
		b, err := cuda.OpenDevice(cuda.DeviceOptions{Progress: func(s string) { fmt.Fprintln(os.Stderr, s) }})
		if err != nil {
			return nil, summarised{err, cuda.Summary(err)}
		}
		return b, nil
	})
}

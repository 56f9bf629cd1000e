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

// The cuda build registers data-parallel ranks: the device LOCAL_RANK
// names, joined to the other ranks by an NCCL communicator, whose unique
// id rank 0 makes and the rendezvous hands to the others.
func init() {
	RegisterParallel("cuda", func(local, rank, size int, join func(id []byte) ([]byte, error)) (ParallelDevice, error) {
		n, err := cuda.LoadNCCL()
		if err != nil {
			return ParallelDevice{}, err
		}
		var id cuda.NCCLUniqueID
		if rank == 0 {
			if id, err = n.GetUniqueID(); err != nil {
				return ParallelDevice{}, err
			}
		}
		got, err := join(id[:])
		if err != nil {
			return ParallelDevice{}, err
		}
		if len(got) != len(id) {
			return ParallelDevice{}, fmt.Errorf("the rendezvous gave a %d-byte NCCL unique id, not %d", len(got), len(id))
		}
		copy(id[:], got)
		b, err := cuda.OpenDevice(cuda.DeviceOptions{Ordinal: local, Progress: func(s string) {
			if rank == 0 {
				fmt.Fprintln(os.Stderr, s)
			}
		}})
		if err != nil {
			return ParallelDevice{}, err
		}
		if err := b.JoinComm(n, id, rank, size); err != nil {
			b.Close()
			return ParallelDevice{}, err
		}
		return ParallelDevice{Backend: b, Reduce: b, Abort: b.CommAbort, Err: b.CommError,
			Close: b.LeaveComm}, nil
	})
}

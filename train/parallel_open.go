package train

import (
	"fmt"
	"sort"

	"github.com/golf-ml/golf/backend"
)

// ParallelDevice is a rank's backend joined to the device collective of a
// data-parallel job.
type ParallelDevice struct {
	Backend backend.Backend
	Reduce  Collective
	// Abort ends the collective at once, from any goroutine: an
	// all-reduce blocked on a rank that is gone returns (ncclCommAbort).
	Abort func() error
	// Err is the collective's asynchronous error, nil while it is
	// healthy (ncclCommGetAsyncError); any goroutine may call it.
	Err func() error
	// Close leaves the collective (after the last collective call).
	Close func() error
}

// A ParallelOpener opens its backend on device local and joins rank of
// size to the collective. join is the rendezvous: it takes this rank's
// unique id of the collective (rank 0's is the one used) and returns rank
// 0's on every rank.
type ParallelOpener func(local, rank, size int, join func(id []byte) ([]byte, error)) (ParallelDevice, error)

var parallelOpeners = map[string]ParallelOpener{}

// RegisterParallel makes a backend available to data-parallel runs.
func RegisterParallel(name string, open ParallelOpener) { parallelOpeners[name] = open }

// OpenParallel opens the backend --backend names for a data-parallel
// rank ("auto": the first that can, of those built in); the CPU and Metal
// have no collective.
func OpenParallel(name string, local, rank, size int, join func(id []byte) ([]byte, error)) (ParallelDevice, string, error) {
	var built []string
	for n := range parallelOpeners {
		built = append(built, n)
	}
	sort.Strings(built)
	pick, why := name, "requested with --backend "+name
	if name == "auto" && len(built) > 0 {
		pick, why = built[0], "auto: data parallel on "+built[0]
	}
	open, ok := parallelOpeners[pick]
	if !ok {
		hint := "this binary has none: build golf with -tags cuda"
		if len(built) > 0 {
			hint = "this binary has " + fmt.Sprint(built)
		}
		return ParallelDevice{}, "", fmt.Errorf("--backend %s: data-parallel training (WORLD_SIZE=%d) needs a backend with a collective, NCCL's on CUDA; %s", name, size, hint)
	}
	d, err := open(local, rank, size, join)
	if err != nil {
		return ParallelDevice{}, "", fmt.Errorf("--backend %s, rank %d of %d (device %d): %w", pick, rank, size, local, err)
	}
	return d, why, nil
}

// NewRunID is a fresh RUN_ID, as a run without one gets.
func NewRunID() string { return newUUID() }

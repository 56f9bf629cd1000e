package metal

import "fmt"

// DryCaps are the caps of a dry runtime: a device of flavour f with
// bfloat, 1,024 threads per threadgroup, 32 KB of threadgroup memory and a
// working set as large as the largest Mac's, named so that no chip of the
// peak table matches (its command buffers are planned for the slowest
// chip).
func DryCaps(f Flavour) Caps {
	return Caps{
		Name: "dry run (no device)", Flavour: f, BFloat: true,
		MaxThreadsPerGroup: 1024, ThreadgroupMemory: 32 << 10,
		RecommendedWorkingSet: 192 << 30, UnifiedMemory: true,
	}
}

// NewDryRuntime returns a Runtime for the device c that runs nothing: it
// validates and costs every dispatch and commits command buffers exactly as
// the other runtimes do, so a training step on it yields the dispatch
// stream, the command buffers and the host waits of that step, and the
// predicted-time model's input (predict.go), in milliseconds on any
// machine, without cgo. Buffers share one scratch allocation: uploads land
// in it and downloads read whatever is there, so values computed by the
// caller from downloads are meaningless.
func NewDryRuntime(c Caps) Runtime {
	r := newGoRuntime(c)
	r.lookup = func(name string) (any, error) {
		if _, ok := hostNameInfo[name]; !ok {
			return nil, fmt.Errorf("%w: %q", errNoKernel, name)
		}
		return nil, nil
	}
	var sink []byte
	r.alloc = func(n int) []byte {
		if len(sink) < n {
			sink = make([]byte, n)
		}
		return sink[:n:n]
	}
	r.tracing = true
	return r
}

package metal

import "fmt"

// The dispatch words: how the darwin runtime (runtime_darwin.go) hands one
// dispatch to its Objective-C shim without allocating or passing Go
// pointers. Dispatch validates its arguments and writes them into a block
// of C memory, dwLen uint64 words and an arena for inline bytes; the shim's
// golf_dispatch reads them and sends the encoder's messages. Layout:
//
//	words[0:3]   threadgroups per grid (x, y, z)
//	words[3:6]   threads per threadgroup (x, y, z)
//	words[6]     number of arguments n (binds [[buffer(0..n-1)]])
//	words[7]     number of threadgroup memory lengths m
//	words[8]     the command-buffer plan's flags: dwCommitFirst (commit the
//	             open command buffer before encoding), dwCommitAfter
//	             (commit it after)
//	words[9]     the plan's retire count: wait for this many of the oldest
//	             in-flight command buffers first
//	words[dwHeader+dwArgWords*i : +3]   argument i: kind, object, offset
//	             (dwArgBuffer: id<MTLBuffer>, byte offset;
//	              dwArgBytes: unused, length — the bytes are at
//	              arena[i*dwMaxBytes:];  dwArgNone: nothing bound)
//	words[dwTGBase+j]  length of [[threadgroup(j)]] memory, a multiple of
//	             16 (0: not set)
//
// The shim defines the same numbers (GOLF_*), and the darwin runtime
// checks them against these at start-up. Kept free of cgo so that the
// validation and encoding are tested on every platform.
const (
	dwMaxArgs   = 31 // [[buffer(i)]] indices 0..30
	dwHeader    = 10
	dwArgWords  = 3
	dwTGBase    = dwHeader + dwArgWords*dwMaxArgs
	dwLen       = dwTGBase + dwMaxArgs
	dwMaxBytes  = 4096 // setBytes:length:atIndex: limit per argument
	dwArenaLen  = dwMaxArgs * dwMaxBytes
	dwArgNone   = 0
	dwArgBuffer = 1
	dwArgBytes  = 2

	dwCommitFirst = 1
	dwCommitAfter = 2
)

// encodePlan writes a dispatch's command-buffer plan into the words.
func encodePlan(w []uint64, p dispatchPlan) {
	var flags uint64
	if p.commitFirst {
		flags |= dwCommitFirst
	}
	if p.commitAfter {
		flags |= dwCommitAfter
	}
	w[8], w[9] = flags, uint64(p.retire)
}

// bufferRef resolves a Buffer of the runtime to its Objective-C object and
// length, or reports why it cannot be bound.
type bufferRef func(b Buffer) (obj uintptr, n int, err error)

// encodeDispatch validates a dispatch of the pipeline called name (whose
// maxTotalThreadsPerThreadgroup is maxThreads, on a device with tgLimit
// bytes of threadgroup memory) and writes it into w and arena. It returns
// empty when the grid has no threads (nothing to encode). It allocates
// only to build an error.
func encodeDispatch(w []uint64, arena []byte, name string, maxThreads, tgLimit int, grid, group [3]int, args []Arg, tgMem []int, ref bufferRef) (empty bool, err error) {
	if len(args) > dwMaxArgs || len(tgMem) > dwMaxArgs {
		return false, fmt.Errorf("metal: %s: %d buffer and %d threadgroup arguments, at most %d each", name, len(args), len(tgMem), dwMaxArgs)
	}
	threads := 1
	for d := range 3 {
		if group[d] < 1 || grid[d] < 0 {
			return false, fmt.Errorf("metal: %s: grid %v of groups %v", name, grid, group)
		}
		threads *= group[d]
	}
	if threads > maxThreads {
		// Metal would skip such a dispatch without a word.
		return false, fmt.Errorf("metal: %s: %d threads per group, the pipeline allows %d", name, threads, maxThreads)
	}
	for d := range 3 {
		w[d] = uint64(grid[d])
		w[3+d] = uint64(group[d])
	}
	w[6] = uint64(len(args))
	w[7] = uint64(len(tgMem))
	for i := range args {
		a := &args[i]
		o := dwHeader + dwArgWords*i
		switch {
		case a.Buf != nil && a.Bytes != nil:
			return false, fmt.Errorf("metal: %s: argument %d has both a buffer and bytes", name, i)
		case a.Buf != nil:
			obj, n, err := ref(a.Buf)
			if err != nil {
				return false, fmt.Errorf("metal: %s: argument %d: %v", name, i, err)
			}
			// Offset 0 of an empty buffer is bindable; otherwise the
			// offset must address a byte of the buffer.
			if a.Offset < 0 || (a.Offset >= n && a.Offset != 0) {
				return false, fmt.Errorf("metal: %s: argument %d: offset %d outside a %d-byte buffer", name, i, a.Offset, n)
			}
			w[o], w[o+1], w[o+2] = dwArgBuffer, uint64(obj), uint64(a.Offset)
		case a.Bytes != nil:
			if len(a.Bytes) == 0 || len(a.Bytes) > dwMaxBytes {
				return false, fmt.Errorf("metal: %s: argument %d: %d inline bytes, want 1..%d", name, i, len(a.Bytes), dwMaxBytes)
			}
			copy(arena[i*dwMaxBytes:], a.Bytes)
			w[o], w[o+1], w[o+2] = dwArgBytes, 0, uint64(len(a.Bytes))
		default:
			w[o], w[o+1], w[o+2] = dwArgNone, 0, 0
		}
	}
	total := 0
	for j, n := range tgMem {
		if n < 0 {
			return false, fmt.Errorf("metal: %s: threadgroup memory %d is %d bytes", name, j, n)
		}
		n = (n + 15) &^ 15 // setThreadgroupMemoryLength takes multiples of 16
		total += n
		w[dwTGBase+j] = uint64(n)
	}
	if total > tgLimit {
		return false, fmt.Errorf("metal: %s: %d bytes of threadgroup memory, the device allows %d", name, total, tgLimit)
	}
	return grid[0] == 0 || grid[1] == 0 || grid[2] == 0, nil
}

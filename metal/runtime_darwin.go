//go:build darwin && cgo

// The darwinkit Runtime: golf's kernels on a real Apple GPU.
//
// Objects. github.com/progrium/darwinkit builds and queries the long-lived
// Metal objects (command queue, compile options, library, functions,
// pipeline states, buffers, device capabilities). A small Objective-C shim
// in this file's cgo preamble does what darwinkit v0.5.0 cannot or should
// not: it finds the device (MTLCreateSystemDefaultDevice, then the first of
// MTLCopyAllDevices; darwinkit binds neither), and it owns the command
// stream, so that encoding a dispatch is one cgo call rather than half a
// dozen reflective objc.Call messages (darwinkit's own encoder methods
// cannot be used anyway: they pass their protocol arguments through
// objc.WrapAsProtocol, which panics for its concrete object types).
//
// Objective-C calls per dispatch. Dispatch validates its arguments in Go,
// writes them into a fixed block of C memory (the dispatch words and
// inline-bytes arena of dispatch_words.go), and makes exactly 1
// Go→Objective-C crossing: golf_dispatch. Inside it the shim sends, as
// direct C message sends, setComputePipelineState:, one
// setBuffer:offset:atIndex: or setBytes:length:atIndex: per bound argument,
// one setThreadgroupMemoryLength:atIndex: per nonzero tgMem entry, and
// dispatchThreadgroups:threadsPerThreadgroup:. Every
// dispatchesPerCommandBuffer-th dispatch also ends the encoder and commits
// its command buffer, and the next dispatch opens a new command buffer and
// compute encoder, all inside the same call. ObjCCallsPerDispatch reports
// the crossings measured (1). The Go side of Dispatch allocates nothing on
// the success path (fmt only builds errors).
//
// Command buffers. Work is committed every dispatchesPerCommandBuffer (40)
// dispatches, as MLX does: the GPU starts early while the CPU keeps
// encoding, and no single command buffer runs long enough to trip the GPU
// watchdog. The encoder is a serial compute encoder, so consecutive
// dispatches see each other's writes; command buffers of one queue run in
// commit order. At most maxCommittedBuffers (16) committed command buffers
// are left unchecked: committing one more first waits for the oldest half,
// which bounds how far the CPU runs ahead. Sync commits the open command
// buffer and waits for every committed one.
//
// Errors. Each completed command buffer's status is checked (Completed = 4,
// Error = 5); the first failure's NSError (localized description, domain,
// code: out of memory, GPU time-out, page fault) is kept and returned by the
// next Sync as a Go error, after which the runtime can be used again.
// Compile errors carry the Metal compiler's log; a missing kernel is
// errNoKernel. Misuse that a caller can cause through bad shapes (a
// threadgroup larger than the pipeline allows, which Metal would skip
// silently, oversized inline bytes, offsets outside a buffer) is an error
// from Dispatch; using a freed buffer is a panic.
//
// Threading and autorelease pools. Metal objects are thread-safe, but
// autorelease pools belong to an OS thread. No pool here outlives a single
// call into Objective-C: every shim function drains its own @autoreleasepool
// before returning, and every darwinkit call that can autorelease (strings
// become NSStrings, compile options, errors) runs inside
// objc.WithAutoreleasePool, whose Go callback runs on the thread that
// pushed the pool. So no goroutine needs runtime.LockOSThread, and the
// objects the stream keeps across calls (command buffer, encoder) are
// explicitly retained. A Runtime is not safe for concurrent use: the
// backend drives it from one goroutine, as it does every Runtime.
//
// Debugging: MTL_DEBUG_LAYER=1 (API validation) and MTL_SHADER_VALIDATION=1
// (out-of-bounds accesses reported on stderr) work with any golf binary.

package metal

/*
#cgo CFLAGS: -x objective-c -Wno-unguarded-availability-new
#cgo LDFLAGS: -framework Metal -framework CoreGraphics -framework Foundation
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

// The dispatch words (uint64): grid x,y,z; group x,y,z; nargs; ntg; then
// GOLF_ARG_WORDS per argument (kind, object, offset or length), then one
// threadgroup memory length per [[threadgroup(i)]]. Inline bytes of
// argument i live at arena + i*GOLF_BYTES_CAP. dispatch_words.go defines
// the same layout for Go; NewDarwinRuntime compares the two through
// golf_layout.
#define GOLF_MAX_ARGS 31
#define GOLF_HEADER_WORDS 8
#define GOLF_ARG_WORDS 3
#define GOLF_TG_BASE (GOLF_HEADER_WORDS + GOLF_ARG_WORDS * GOLF_MAX_ARGS)
#define GOLF_WORDS (GOLF_TG_BASE + GOLF_MAX_ARGS)
#define GOLF_BYTES_CAP 4096
#define GOLF_MAX_COMMITTED 16
#define GOLF_ERR_LEN 2048

enum { GOLF_ARG_NONE = 0, GOLF_ARG_BUFFER = 1, GOLF_ARG_BYTES = 2 };

typedef struct {
	uint64_t words[GOLF_WORDS];
	unsigned char arena[GOLF_MAX_ARGS * GOLF_BYTES_CAP];
	id<MTLCommandQueue> queue;            // not owned
	id<MTLCommandBuffer> cb;              // open command buffer (retained) or nil
	id<MTLComputeCommandEncoder> enc;     // its encoder (retained) or nil
	int batch;                            // dispatches per command buffer
	int inBatch;                          // dispatches in cb so far
	id<MTLCommandBuffer> committed[GOLF_MAX_COMMITTED]; // retained, oldest first
	int ncommitted;
	int failed;                           // err holds the first failure
	char err[GOLF_ERR_LEN];
} golf_stream;

static int golf_layout(int which) {
	switch (which) {
	case 0: return GOLF_MAX_ARGS;
	case 1: return GOLF_HEADER_WORDS;
	case 2: return GOLF_ARG_WORDS;
	case 3: return GOLF_TG_BASE;
	case 4: return GOLF_WORDS;
	case 5: return GOLF_BYTES_CAP;
	case 6: return GOLF_MAX_COMMITTED;
	}
	return -1;
}

// golf_default_device returns a retained id<MTLDevice>, or NULL.
static void* golf_default_device(void) {
	id<MTLDevice> dev = nil;
	@autoreleasepool {
		dev = MTLCreateSystemDefaultDevice(); // +1
		if (dev == nil) {
			// Nil on some multi-GPU machines and in CI/ssh sessions.
			NSArray<id<MTLDevice>>* all = MTLCopyAllDevices(); // +1
			if (all != nil) {
				if ([all count] > 0) {
					dev = [[all objectAtIndex:0] retain];
				}
				[all release];
			}
		}
	}
	return (void*)dev;
}

static int golf_macos_major(void) {
	@autoreleasepool {
		return (int)[[NSProcessInfo processInfo] operatingSystemVersion].majorVersion;
	}
}

static void golf_fail(golf_stream* s, MTLCommandBufferStatus st, NSError* e) {
	if (s->failed) {
		return;
	}
	s->failed = 1;
	NSString* msg;
	if (e != nil) {
		msg = [NSString stringWithFormat:@"%@ (%@ code %ld)", [e localizedDescription], [e domain], (long)[e code]];
	} else {
		msg = [NSString stringWithFormat:@"command buffer status %lu without an error", (unsigned long)st];
	}
	const char* c = [msg UTF8String];
	snprintf(s->err, sizeof s->err, "%s", c != NULL ? c : "unknown error");
}

// golf_retire waits for the n oldest committed command buffers, records the
// first failure and releases them.
static void golf_retire(golf_stream* s, int n) {
	for (int i = 0; i < n; i++) {
		id<MTLCommandBuffer> cb = s->committed[i];
		[cb waitUntilCompleted];
		MTLCommandBufferStatus st = [cb status];
		if (st != MTLCommandBufferStatusCompleted) {
			golf_fail(s, st, [cb error]);
		}
		[cb release];
	}
	memmove(s->committed, s->committed + n, (size_t)(s->ncommitted - n) * sizeof s->committed[0]);
	s->ncommitted -= n;
}

// golf_commit_open ends the open encoder and commits its command buffer.
// Callers hold an autorelease pool.
static void golf_commit_open(golf_stream* s) {
	if (s->cb == nil) {
		return;
	}
	[s->enc endEncoding];
	[s->enc release];
	s->enc = nil;
	if (s->ncommitted == GOLF_MAX_COMMITTED) {
		golf_retire(s, GOLF_MAX_COMMITTED / 2);
	}
	[s->cb commit];
	s->committed[s->ncommitted++] = s->cb;
	s->cb = nil;
	s->inBatch = 0;
}

static void* golf_stream_new(void* queue, int batch) {
	golf_stream* s = calloc(1, sizeof(golf_stream));
	if (s == NULL) {
		return NULL;
	}
	s->queue = (id<MTLCommandQueue>)queue;
	s->batch = batch;
	return s;
}

static void* golf_stream_words(void* sp) { return ((golf_stream*)sp)->words; }
static void* golf_stream_arena(void* sp) { return ((golf_stream*)sp)->arena; }
static const char* golf_stream_error(void* sp) { return ((golf_stream*)sp)->err; }

// golf_dispatch encodes one dispatch described by the stream's words, opening
// a command buffer and encoder first if none is open, and commits every
// batch-th dispatch. It returns 0, or 1 if no command buffer or encoder
// could be made.
static int golf_dispatch(void* sp, void* pso) {
	golf_stream* s = (golf_stream*)sp;
	@autoreleasepool {
		if (s->cb == nil) {
			id<MTLCommandBuffer> cb = [s->queue commandBuffer];
			id<MTLComputeCommandEncoder> enc = cb != nil ? [cb computeCommandEncoder] : nil;
			if (enc == nil) {
				return 1;
			}
			s->cb = [cb retain];
			s->enc = [enc retain];
			s->inBatch = 0;
		}
		id<MTLComputeCommandEncoder> enc = s->enc;
		const uint64_t* w = s->words;
		[enc setComputePipelineState:(id<MTLComputePipelineState>)pso];
		int nargs = (int)w[6];
		for (int i = 0; i < nargs; i++) {
			const uint64_t* a = w + GOLF_HEADER_WORDS + GOLF_ARG_WORDS * i;
			if (a[0] == GOLF_ARG_BUFFER) {
				[enc setBuffer:(id<MTLBuffer>)(uintptr_t)a[1] offset:(NSUInteger)a[2] atIndex:(NSUInteger)i];
			} else if (a[0] == GOLF_ARG_BYTES) {
				[enc setBytes:s->arena + (size_t)i * GOLF_BYTES_CAP length:(NSUInteger)a[2] atIndex:(NSUInteger)i];
			}
		}
		int ntg = (int)w[7];
		for (int i = 0; i < ntg; i++) {
			uint64_t n = w[GOLF_TG_BASE + i];
			if (n != 0) {
				[enc setThreadgroupMemoryLength:(NSUInteger)n atIndex:(NSUInteger)i];
			}
		}
		[enc dispatchThreadgroups:MTLSizeMake((NSUInteger)w[0], (NSUInteger)w[1], (NSUInteger)w[2])
		    threadsPerThreadgroup:MTLSizeMake((NSUInteger)w[3], (NSUInteger)w[4], (NSUInteger)w[5])];
		if (++s->inBatch >= s->batch) {
			golf_commit_open(s);
		}
	}
	return 0;
}

// golf_sync commits the open command buffer, waits for every committed one
// and returns 1 if any failed since the last sync (the message is in err).
static int golf_sync(void* sp) {
	golf_stream* s = (golf_stream*)sp;
	@autoreleasepool {
		golf_commit_open(s);
		golf_retire(s, s->ncommitted);
	}
	int failed = s->failed;
	s->failed = 0;
	return failed;
}

// golf_stream_inject_failure records a failure as a command buffer in the
// Metal error domain would; tests use it to check the error path.
static void golf_stream_inject_failure(void* sp, const char* what) {
	@autoreleasepool {
		NSDictionary* info = @{NSLocalizedDescriptionKey: [NSString stringWithUTF8String:what]};
		NSError* e = [NSError errorWithDomain:MTLCommandBufferErrorDomain code:MTLCommandBufferErrorInternal userInfo:info];
		golf_fail((golf_stream*)sp, MTLCommandBufferStatusError, e);
	}
}

static void golf_stream_free(void* sp) {
	golf_stream* s = (golf_stream*)sp;
	golf_sync(s);
	free(s);
}

static void golf_release(void* obj) {
	@autoreleasepool {
		[(id)obj release];
	}
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/progrium/darwinkit/macos/foundation"
	mtl "github.com/progrium/darwinkit/macos/metal"
	"github.com/progrium/darwinkit/objc"

	"github.com/golf-ml/golf/shaders"
)

const (
	// dispatchesPerCommandBuffer is how many dispatches go into one command
	// buffer before it is committed (MLX commits every ~40): enough to
	// amortise a commit, few enough that the GPU starts early and no
	// command buffer nears the GPU watchdog.
	dispatchesPerCommandBuffer = 40
	// maxCommittedBuffers is how many committed command buffers may be
	// unchecked; committing one more waits for the oldest half.
	maxCommittedBuffers = 16

	// Apple GPU families and MSL versions, as Metal numbers them.
	familyApple6   = 1006
	familyApple7   = 1007
	familyMetal3   = 5001
	mslVersion3_1  = 196609 // MTLLanguageVersion3_1 = 3<<16 | 1
	storageShared  = 0      // MTLResourceStorageModeShared
	minBufferBytes = 16     // Metal rejects zero-length buffers
)

var (
	errNoDevice = errors.New("metal: no Metal device")
	errNoKernel = errors.New("metal: kernel not in the shader library")
)

// NewDarwinRuntime opens the system's Metal device, compiles the shader
// library (shaders.Source, MSL 3.1 on macOS 14+, fast math off) and returns
// a Runtime over it. Pipelines are built on first use and cached.
func NewDarwinRuntime() (Runtime, error) {
	lay := [...]int{dwMaxArgs, dwHeader, dwArgWords, dwTGBase, dwLen, dwMaxBytes, maxCommittedBuffers}
	for i, want := range lay {
		if got := int(C.golf_layout(C.int(i))); got != want {
			panic(fmt.Sprintf("metal: dispatch word layout constant %d is %d in dispatch_words.go, %d in the shim", i, want, got))
		}
	}
	p := C.golf_default_device()
	if p == nil {
		return nil, errNoDevice
	}
	r := &darwinRuntime{
		dev:   mtl.DeviceObject{Object: objc.ObjectFrom(unsafe.Pointer(p))},
		pipes: make(map[string]*darwinPipeline),
	}
	r.queue = r.dev.NewCommandQueue()
	if r.queue.Ptr() == nil {
		r.dev.Release()
		return nil, errors.New("metal: could not create a command queue")
	}
	r.msl31 = int(C.golf_macos_major()) >= 14
	r.caps = r.queryCaps(r.msl31)
	src, err := shaders.Source()
	if err == nil {
		r.lib, err = r.compile(src, r.msl31)
	}
	if err != nil {
		r.queue.Release()
		r.dev.Release()
		return nil, err
	}
	r.stream = C.golf_stream_new(r.queue.Ptr(), C.int(dispatchesPerCommandBuffer))
	if r.stream == nil {
		r.lib.Release()
		r.queue.Release()
		r.dev.Release()
		return nil, errors.New("metal: out of memory for the command stream")
	}
	r.words = unsafe.Slice((*uint64)(C.golf_stream_words(r.stream)), dwLen)
	r.arena = unsafe.Slice((*byte)(C.golf_stream_arena(r.stream)), dwArenaLen)
	return r, nil
}

type darwinRuntime struct {
	dev    mtl.DeviceObject
	queue  mtl.CommandQueueObject
	lib    mtl.LibraryObject
	caps   Caps
	msl31  bool // the library is MSL 3.1 (macOS 14+)
	pipes  map[string]*darwinPipeline
	stream unsafe.Pointer // golf_stream, C memory
	words  []uint64       // the stream's dispatch words
	arena  []byte         // the stream's inline-bytes arena
	closed bool

	dispatches uint64 // Dispatch calls that reached the GPU
	crossings  uint64 // Go→Objective-C calls made by those Dispatch calls
}

// queryCaps reads the device facts; msl31 says whether the library is
// compiled as MSL 3.1, which bfloat needs.
func (r *darwinRuntime) queryCaps(msl31 bool) Caps {
	var c Caps
	objc.WithAutoreleasePool(func() {
		d := r.dev
		c.Name = d.Name()
		c.Flavour = Portable
		if d.SupportsFamily(mtl.GPUFamily(familyApple7)) {
			c.Flavour = Simd
		}
		c.BFloat = msl31 && (d.SupportsFamily(mtl.GPUFamily(familyApple6)) || d.SupportsFamily(mtl.GPUFamily(familyMetal3)))
		c.MaxThreadsPerGroup = int(d.MaxThreadsPerThreadgroup().Width)
		c.ThreadgroupMemory = int(d.MaxThreadgroupMemoryLength())
		c.RecommendedWorkingSet = d.RecommendedMaxWorkingSetSize()
	})
	return c
}

// compile builds a library from MSL source with fast math off, as MSL 3.1
// when msl31 is set. A library that comes back with warnings is kept; a
// nil one is an error carrying the compiler log.
func (r *darwinRuntime) compile(src string, msl31 bool) (mtl.LibraryObject, error) {
	var lib mtl.LibraryObject
	var err error
	objc.WithAutoreleasePool(func() {
		opts := mtl.NewCompileOptions()
		opts.SetFastMathEnabled(false)
		version := "the OS default"
		if msl31 {
			opts.SetLanguageVersion(mtl.LanguageVersion(mslVersion3_1))
			version = "3.1"
		}
		var nsErr unsafe.Pointer
		lib = r.dev.NewLibraryWithSourceOptionsError(src, opts, unsafe.Pointer(&nsErr))
		if lib.Ptr() == nil {
			err = fmt.Errorf("metal: compiling the shader library (MSL %s): %s", version, describe(nsErr))
		}
	})
	return lib, err
}

// describe returns an NSError's localized description; call it inside the
// autorelease pool that holds the error.
func describe(nsErr unsafe.Pointer) string {
	if nsErr == nil {
		return "no error description"
	}
	return foundation.ErrorFrom(nsErr).LocalizedDescription()
}

func (r *darwinRuntime) Caps() Caps { return r.caps }

type darwinBuffer struct {
	obj  unsafe.Pointer // id<MTLBuffer>; nil once freed
	data unsafe.Pointer // its contents
	n    int
	rt   *darwinRuntime
}

func (b *darwinBuffer) Len() int { return b.n }

func (b *darwinBuffer) Bytes() []byte {
	if b.obj == nil {
		panic("metal: Bytes of a freed buffer")
	}
	return unsafe.Slice((*byte)(b.data), b.n)
}

// NewBuffer allocates a zero-filled shared buffer of n bytes.
func (r *darwinRuntime) NewBuffer(n int) (Buffer, error) {
	if r.closed {
		return nil, errClosed
	}
	if n < 0 {
		return nil, fmt.Errorf("metal: NewBuffer(%d): negative length", n)
	}
	var b *darwinBuffer
	objc.WithAutoreleasePool(func() {
		buf := r.dev.NewBufferWithLengthOptions(uint(max(n, minBufferBytes)), mtl.ResourceOptions(storageShared)) // +1
		if buf.Ptr() != nil {
			b = &darwinBuffer{obj: buf.Ptr(), data: buf.Contents(), n: n, rt: r}
		}
	})
	if b == nil {
		return nil, fmt.Errorf("metal: NewBuffer(%d): the device refused (recommended working set %d bytes)", n, r.caps.RecommendedWorkingSet)
	}
	return b, nil
}

// Free releases a buffer. Command buffers still using it keep it alive
// until they complete.
func (r *darwinRuntime) Free(b Buffer) {
	db, ok := b.(*darwinBuffer)
	if !ok || db.rt != r {
		panic("metal: Free of a buffer from another runtime")
	}
	if db.obj == nil {
		panic("metal: Free of a freed buffer")
	}
	C.golf_release(db.obj)
	db.obj, db.data = nil, nil
}

type darwinPipeline struct {
	name       string
	pso        unsafe.Pointer // id<MTLComputePipelineState>
	maxThreads int
	rt         *darwinRuntime
}

func (p *darwinPipeline) Name() string    { return p.name }
func (p *darwinPipeline) MaxThreads() int { return p.maxThreads }

// Pipeline returns the cached pipeline for a kernel host name, building it
// on first use.
func (r *darwinRuntime) Pipeline(name string) (Pipeline, error) {
	if r.closed {
		return nil, errClosed
	}
	if p, ok := r.pipes[name]; ok {
		return p, nil
	}
	p, err := r.newPipeline(r.lib, name)
	if err != nil {
		return nil, err
	}
	r.pipes[name] = p
	return p, nil
}

func (r *darwinRuntime) newPipeline(lib mtl.LibraryObject, name string) (*darwinPipeline, error) {
	var p *darwinPipeline
	var err error
	objc.WithAutoreleasePool(func() {
		fn := lib.NewFunctionWithName(name) // +1
		if fn.Ptr() == nil {
			err = fmt.Errorf("%w: %q", errNoKernel, name)
			return
		}
		defer fn.Release()
		// darwinkit's NewComputePipelineStateWithFunctionError panics in
		// WrapAsProtocol; the selector is sent directly.
		var nsErr unsafe.Pointer
		pso := objc.Call[mtl.ComputePipelineStateObject](r.dev, objc.Sel("newComputePipelineStateWithFunction:error:"), fn, unsafe.Pointer(&nsErr))
		if pso.Ptr() == nil {
			err = fmt.Errorf("metal: pipeline %q: %s", name, describe(nsErr))
			return
		}
		p = &darwinPipeline{name: name, pso: pso.Ptr(), maxThreads: int(pso.MaxTotalThreadsPerThreadgroup()), rt: r}
	})
	return p, err
}

var errClosed = errors.New("metal: runtime used after Close")

// Dispatch encodes grid threadgroups of group threads of p. It makes one
// call into Objective-C and allocates nothing unless it returns an error.
func (r *darwinRuntime) Dispatch(p Pipeline, grid, group [3]int, args []Arg, tgMem []int) error {
	if r.closed {
		return errClosed
	}
	dp, ok := p.(*darwinPipeline)
	if !ok || dp.rt != r {
		return fmt.Errorf("metal: Dispatch of a pipeline from another runtime (%T)", p)
	}
	empty, err := encodeDispatch(r.words, r.arena, dp.name, dp.maxThreads, r.caps.ThreadgroupMemory, grid, group, args, tgMem, r.ref)
	if err != nil || empty {
		return err
	}
	r.dispatches++
	r.crossings++
	if C.golf_dispatch(r.stream, dp.pso) != 0 {
		return fmt.Errorf("metal: %s: could not create a command buffer", dp.name)
	}
	return nil
}

// ref resolves a buffer for encodeDispatch.
func (r *darwinRuntime) ref(b Buffer) (uintptr, int, error) {
	db, ok := b.(*darwinBuffer)
	if !ok || db.rt != r {
		return 0, 0, fmt.Errorf("a buffer from another runtime (%T)", b)
	}
	if db.obj == nil {
		panic("metal: Dispatch with a freed buffer")
	}
	return uintptr(db.obj), db.n, nil
}

// Sync commits the open command buffer, waits for all work and returns
// the first command buffer failure since the previous Sync.
func (r *darwinRuntime) Sync() error {
	if r.closed {
		return errClosed
	}
	if C.golf_sync(r.stream) != 0 {
		return fmt.Errorf("metal: command buffer failed: %s", C.GoString(C.golf_stream_error(r.stream)))
	}
	return nil
}

// injectFailure makes the next Sync report a command buffer failure whose
// description is what, as Metal would report one; for tests.
func (r *darwinRuntime) injectFailure(what string) {
	cs := C.CString(what)
	defer C.free(unsafe.Pointer(cs))
	C.golf_stream_inject_failure(r.stream, cs)
}

// Close waits for outstanding work and releases the pipelines, library,
// queue and device. Buffers stay valid until freed.
func (r *darwinRuntime) Close() error {
	if r.closed {
		return nil
	}
	err := r.Sync()
	r.closed = true
	C.golf_stream_free(r.stream)
	r.stream, r.words, r.arena = nil, nil, nil
	for name, p := range r.pipes {
		C.golf_release(p.pso)
		delete(r.pipes, name)
	}
	r.lib.Release()
	r.queue.Release()
	r.dev.Release()
	return err
}

// ObjCCallsPerDispatch reports how many Go→Objective-C calls (cgo calls into
// the shim, darwinkit objc.Call messages) rt's Dispatch has made per
// encoded dispatch so far: exactly 1 for the darwin runtime, whose
// per-dispatch message sends all happen inside one shim call. It is 0 for
// other runtimes or before the first dispatch.
func ObjCCallsPerDispatch(rt Runtime) float64 {
	r, ok := rt.(*darwinRuntime)
	if !ok || r.dispatches == 0 {
		return 0
	}
	return float64(r.crossings) / float64(r.dispatches)
}

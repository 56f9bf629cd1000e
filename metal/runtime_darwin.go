//go:build darwin && cgo

// The darwinkit Runtime: golf's kernels on a real Apple GPU.
//
// Objects. github.com/progrium/darwinkit builds and queries the long-lived
// Metal objects (command queue, compile options, library, functions,
// pipeline states, buffers, device capabilities). A small Objective-C shim
// in this file's cgo preamble does what darwinkit v0.5.0 cannot or should
// not: it finds the device (MTLCreateSystemDefaultDevice, then the first of
// MTLCopyAllDevices; darwinkit binds neither), reads the macOS version, and
// it owns the command stream, so that encoding a dispatch is one cgo call
// rather than half a dozen reflective objc.Call messages (darwinkit's own
// encoder methods cannot be used anyway: they pass their protocol arguments
// through objc.WrapAsProtocol, which panics for its concrete object types).
//
// Start-up. NewDarwinRuntime refuses, with a message naming what is
// missing, macOS before 14 (the shaders are MSL 3.1), a GPU that is not an
// Apple GPU (an Intel Mac) and a GPU without unified memory (checkDevice).
// It compiles only the kernels of the device's flavour (FlavourSource) and
// builds every pipeline of that flavour, in every element type the device
// has, before returning: a kernel Apple's compiler rejects is an error
// here, not a panic in the first training step.
//
// Objective-C calls per dispatch. Dispatch validates its arguments in Go,
// costs the dispatch, plans the commits around it (stream.go), writes all
// of that into a fixed block of C memory (the dispatch words and
// inline-bytes arena of dispatch_words.go), and makes exactly 1
// Go→Objective-C crossing: golf_dispatch. Inside it the shim waits for the
// in-flight command buffers the plan retires, commits the open command
// buffer when the plan says so, opens a command buffer and compute encoder
// if none is open, sends setComputePipelineState:, one
// setBuffer:offset:atIndex: or setBytes:length:atIndex: per bound argument,
// one setThreadgroupMemoryLength:atIndex: per nonzero tgMem entry and
// dispatchThreadgroups:threadsPerThreadgroup:, and commits after the
// dispatch when the plan says so, all as direct C message sends.
// ObjCCallsPerDispatch reports the crossings measured (1). The Go side of
// Dispatch allocates nothing on the success path (fmt only builds errors).
//
// Command buffers. The plan (stream.go) commits a command buffer without
// waiting when it reaches 40 dispatches, 64 MiB of traffic or 20 ms of
// predicted GPU time on the device's chip (the slowest supported chip for
// a device the peak table does not know), so the GPU starts early and no
// command buffer runs long enough for macOS to preempt it. The encoder is
// a serial compute encoder, so consecutive dispatches see each other's
// writes; command buffers of one queue run in commit order and retain the
// buffers they use. At most 16 command buffers are committed and
// unfinished; committing one more first waits for the oldest until 8
// remain. Sync commits the open command buffer and waits for every
// committed one; Wait waits up to one command buffer; Completed polls.
//
// Errors. Each completed command buffer's status is checked (Completed = 4,
// Error = 5). The first failure's NSError (localized description, domain,
// code: out of memory, GPU time-out, "Impacting Interactivity" preemption,
// page fault) becomes the runtime's fatal error (commandBufferError, with
// a hint to lower the microbatch for time-outs and preemption): Metal
// discards the work queued behind a failed command buffer, so every later
// call returns that error and the caller must open a new runtime. Compile
// errors carry the Metal compiler's log; a missing kernel is errNoKernel.
// Misuse that a caller can cause through bad shapes (a threadgroup larger
// than the pipeline allows, which Metal would skip silently, oversized
// inline bytes, offsets outside a buffer) is an error from Dispatch that
// leaves the runtime usable; using a freed buffer is a panic.
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

// The dispatch words (uint64): grid x,y,z; group x,y,z; nargs; ntg; the
// plan's flags (GOLF_COMMIT_FIRST, GOLF_COMMIT_AFTER) and retire count;
// then GOLF_ARG_WORDS per argument (kind, object, offset or length), then
// one threadgroup memory length per [[threadgroup(i)]]. Inline bytes of
// argument i live at arena + i*GOLF_BYTES_CAP. dispatch_words.go defines
// the same layout for Go; NewDarwinRuntime compares the two through
// golf_layout.
#define GOLF_MAX_ARGS 31
#define GOLF_HEADER_WORDS 10
#define GOLF_ARG_WORDS 3
#define GOLF_TG_BASE (GOLF_HEADER_WORDS + GOLF_ARG_WORDS * GOLF_MAX_ARGS)
#define GOLF_WORDS (GOLF_TG_BASE + GOLF_MAX_ARGS)
#define GOLF_BYTES_CAP 4096
#define GOLF_MAX_COMMITTED 16
#define GOLF_ERR_LEN 2048
#define GOLF_COMMIT_FIRST 1
#define GOLF_COMMIT_AFTER 2

enum { GOLF_ARG_NONE = 0, GOLF_ARG_BUFFER = 1, GOLF_ARG_BYTES = 2 };

// golf_stream carries out the Go side's plan (stream.go): it commits and
// waits exactly when told, and never more than GOLF_MAX_COMMITTED command
// buffers are in flight (a plan that would exceed it is refused).
typedef struct {
	uint64_t words[GOLF_WORDS];
	unsigned char arena[GOLF_MAX_ARGS * GOLF_BYTES_CAP];
	id<MTLCommandQueue> queue;            // not owned
	id<MTLCommandBuffer> cb;              // open command buffer (retained) or nil
	id<MTLComputeCommandEncoder> enc;     // its encoder (retained) or nil
	id<MTLCommandBuffer> committed[GOLF_MAX_COMMITTED]; // retained, oldest first
	int ncommitted;
	int failed;                           // the err_* fields hold the first failure
	long err_code;
	char err_desc[GOLF_ERR_LEN];
	char err_domain[256];
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
	case 7: return GOLF_COMMIT_FIRST;
	case 8: return GOLF_COMMIT_AFTER;
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

// golf_macos_version stores the running macOS version.
static void golf_macos_version(int* major, int* minor) {
	@autoreleasepool {
		NSOperatingSystemVersion v = [[NSProcessInfo processInfo] operatingSystemVersion];
		*major = (int)v.majorVersion;
		*minor = (int)v.minorVersion;
	}
}

static void golf_copy_string(char* dst, size_t n, NSString* s, const char* fallback) {
	const char* c = s != nil ? [s UTF8String] : NULL;
	snprintf(dst, n, "%s", c != NULL ? c : fallback);
}

static void golf_fail(golf_stream* s, MTLCommandBufferStatus st, NSError* e) {
	if (s->failed) {
		return;
	}
	s->failed = 1;
	if (e != nil) {
		golf_copy_string(s->err_desc, sizeof s->err_desc, [e localizedDescription], "no description");
		golf_copy_string(s->err_domain, sizeof s->err_domain, [e domain], "no domain");
		s->err_code = (long)[e code];
	} else {
		snprintf(s->err_desc, sizeof s->err_desc, "command buffer status %lu without an error", (unsigned long)st);
		snprintf(s->err_domain, sizeof s->err_domain, "none");
		s->err_code = 0;
	}
}

// golf_release_finished checks the n oldest committed command buffers,
// which have finished, records the first failure and releases them.
static void golf_release_finished(golf_stream* s, int n) {
	for (int i = 0; i < n; i++) {
		id<MTLCommandBuffer> cb = s->committed[i];
		MTLCommandBufferStatus st = [cb status];
		if (st != MTLCommandBufferStatusCompleted) {
			golf_fail(s, st, [cb error]);
		}
		[cb release];
	}
	memmove(s->committed, s->committed + n, (size_t)(s->ncommitted - n) * sizeof s->committed[0]);
	s->ncommitted -= n;
}

// golf_retire waits for the n oldest committed command buffers, then
// releases them as golf_release_finished.
static void golf_retire(golf_stream* s, int n) {
	if (n > s->ncommitted) {
		n = s->ncommitted;
	}
	for (int i = 0; i < n; i++) {
		[s->committed[i] waitUntilCompleted];
	}
	golf_release_finished(s, n);
}

// golf_commit_open ends the open encoder and commits its command buffer. It
// returns 0, or 2 when GOLF_MAX_COMMITTED command buffers are already in
// flight (the plan should have retired some first). Callers hold an
// autorelease pool.
static int golf_commit_open(golf_stream* s) {
	if (s->cb == nil) {
		return 0;
	}
	if (s->ncommitted == GOLF_MAX_COMMITTED) {
		return 2;
	}
	[s->enc endEncoding];
	[s->enc release];
	s->enc = nil;
	[s->cb commit];
	s->committed[s->ncommitted++] = s->cb;
	s->cb = nil;
	return 0;
}

static void* golf_stream_new(void* queue) {
	golf_stream* s = calloc(1, sizeof(golf_stream));
	if (s == NULL) {
		return NULL;
	}
	s->queue = (id<MTLCommandQueue>)queue;
	return s;
}

static void* golf_stream_words(void* sp) { return ((golf_stream*)sp)->words; }
static void* golf_stream_arena(void* sp) { return ((golf_stream*)sp)->arena; }
static int golf_stream_failed(void* sp) { return ((golf_stream*)sp)->failed; }
static const char* golf_stream_err_desc(void* sp) { return ((golf_stream*)sp)->err_desc; }
static const char* golf_stream_err_domain(void* sp) { return ((golf_stream*)sp)->err_domain; }
static long golf_stream_err_code(void* sp) { return ((golf_stream*)sp)->err_code; }
static int golf_stream_inflight(void* sp) { return ((golf_stream*)sp)->ncommitted; }

// golf_dispatch carries out one dispatch and its plan, as described by the
// stream's words: retire, commit first, encode (opening a command buffer
// and encoder if none is open), commit after. It returns 0; 1 if no
// command buffer or encoder could be made; 2 if a commit would exceed
// GOLF_MAX_COMMITTED in-flight command buffers.
static int golf_dispatch(void* sp, void* pso) {
	golf_stream* s = (golf_stream*)sp;
	const uint64_t* w = s->words;
	@autoreleasepool {
		golf_retire(s, (int)w[9]);
		if ((w[8] & GOLF_COMMIT_FIRST) && golf_commit_open(s) != 0) {
			return 2;
		}
		if (s->cb == nil) {
			id<MTLCommandBuffer> cb = [s->queue commandBuffer];
			id<MTLComputeCommandEncoder> enc = cb != nil ? [cb computeCommandEncoder] : nil;
			if (enc == nil) {
				return 1;
			}
			s->cb = [cb retain];
			s->enc = [enc retain];
		}
		id<MTLComputeCommandEncoder> enc = s->enc;
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
		if ((w[8] & GOLF_COMMIT_AFTER) && golf_commit_open(s) != 0) {
			return 2;
		}
	}
	return 0;
}

// golf_wait commits the open command buffer when commit is set, then waits
// for the n oldest in flight. It returns 0, or 2 as golf_commit_open.
static int golf_wait(void* sp, int commit, int n) {
	golf_stream* s = (golf_stream*)sp;
	int rc = 0;
	@autoreleasepool {
		if (commit) {
			rc = golf_commit_open(s);
		}
		golf_retire(s, n);
	}
	return rc;
}

// golf_poll releases the leading in-flight command buffers that have
// finished, without waiting, recording a failure; it returns how many.
static int golf_poll(void* sp) {
	golf_stream* s = (golf_stream*)sp;
	int n = 0;
	@autoreleasepool {
		while (n < s->ncommitted) {
			MTLCommandBufferStatus st = [s->committed[n] status];
			if (st != MTLCommandBufferStatusCompleted && st != MTLCommandBufferStatusError) {
				break;
			}
			n++;
		}
		golf_release_finished(s, n);
	}
	return n;
}

// golf_stream_inject_failure records a failure as a command buffer in the
// Metal error domain would; tests use it to check the error path.
static void golf_stream_inject_failure(void* sp, const char* what, long code) {
	@autoreleasepool {
		NSDictionary* info = @{NSLocalizedDescriptionKey: [NSString stringWithUTF8String:what]};
		NSError* e = [NSError errorWithDomain:MTLCommandBufferErrorDomain code:code userInfo:info];
		golf_fail((golf_stream*)sp, MTLCommandBufferStatusError, e);
	}
}

// golf_stream_free commits and waits for everything, then frees the stream.
static void golf_stream_free(void* sp) {
	golf_stream* s = (golf_stream*)sp;
	@autoreleasepool {
		if (s->cb != nil && s->ncommitted == GOLF_MAX_COMMITTED) {
			golf_retire(s, 1);
		}
		golf_commit_open(s);
		golf_retire(s, s->ncommitted);
	}
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
	// Apple GPU families and MSL versions, as Metal numbers them.
	familyApple1   = 1001 // MTLGPUFamilyApple1; Apple<n> = 1000 + n
	familyAppleMax = 1009 // the newest Apple family probed (Apple9: M3, M4)
	familyMetal3   = 5001
	mslVersion3_1  = 196609 // MTLLanguageVersion3_1 = 3<<16 | 1
	storageShared  = 0      // MTLResourceStorageModeShared
	minBufferBytes = 16     // Metal rejects zero-length buffers
)

var errNoDevice = errors.New("metal: no Metal device")

// NewDarwinRuntime opens the system's Metal device, refuses systems golf
// cannot run on (checkDevice), probes what the device runs (probe.go:
// simdgroup functions and matrices, bfloat; the flavour and bfloat follow
// the probes, not only supportsFamily), compiles the shader library for
// the flavour found (FlavourSource; MSL 3.1, fast math off), builds every
// pipeline of it and returns a Runtime over it.
func NewDarwinRuntime() (Runtime, error) {
	return newDarwinRuntime(nil)
}

// newDarwinRuntime opens the runtime; with decided nil it probes the
// device, else it runs with the flavour and bfloat of decided (the
// outcome of probes that ended an earlier runtime: a probe whose command
// buffer failed leaves the runtime unusable, so the probing runtime is
// closed and a new one opened without probes).
func newDarwinRuntime(decided *Caps) (Runtime, error) {
	lay := [...]int{dwMaxArgs, dwHeader, dwArgWords, dwTGBase, dwLen, dwMaxBytes, defaultMaxInFlight, dwCommitFirst, dwCommitAfter}
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
	facts := r.deviceFacts()
	if err := checkDevice(facts); err != nil {
		r.dev.Release()
		return nil, err
	}
	r.caps = r.queryCaps(facts)
	r.s = newStream(defaultPolicy(r.caps.Name))
	r.queue = r.dev.NewCommandQueue()
	if r.queue.Ptr() == nil {
		r.dev.Release()
		return nil, errors.New("metal: could not create a command queue")
	}
	r.stream = C.golf_stream_new(r.queue.Ptr())
	if r.stream == nil {
		r.queue.Release()
		r.dev.Release()
		return nil, errors.New("metal: out of memory for the command stream")
	}
	r.words = unsafe.Slice((*uint64)(C.golf_stream_words(r.stream)), dwLen)
	r.arena = unsafe.Slice((*byte)(C.golf_stream_arena(r.stream)), dwArenaLen)
	if decided != nil {
		r.caps.Flavour, r.caps.BFloat, r.caps.Probed = decided.Flavour, decided.BFloat, decided.Probed
	} else {
		rs := runProbes(r, r.buildProbe)
		for _, pr := range probes {
			if pp, ok := r.pipes[pr.kernel]; ok {
				C.golf_release(pp.pso)
				delete(r.pipes, pr.kernel)
			}
		}
		c := probedCaps(r.caps, rs)
		if r.s.fatal != nil {
			r.Close()
			return newDarwinRuntime(&c)
		}
		r.caps = c
	}
	src, err := shaders.Source()
	if err == nil {
		src, err = FlavourSource(src, r.caps.Flavour)
	}
	if err == nil {
		r.lib, err = r.compile(src)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	if err := r.buildPipelines(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// buildProbe compiles probe p's source on its own (probeSource) and builds
// its pipeline, kept in r.pipes until the probes are done.
func (r *darwinRuntime) buildProbe(p probe) (Pipeline, error) {
	src, err := probeSource(p)
	if err != nil {
		return nil, err
	}
	lib, err := r.compile(src)
	if err != nil {
		return nil, err
	}
	defer lib.Release()
	pl, err := r.newPipeline(lib, p.kernel)
	if err != nil {
		return nil, err
	}
	r.pipes[p.kernel] = pl
	return pl, nil
}

type darwinRuntime struct {
	dev    mtl.DeviceObject
	queue  mtl.CommandQueueObject
	lib    mtl.LibraryObject
	caps   Caps
	s      *stream
	pipes  map[string]*darwinPipeline
	stream unsafe.Pointer // golf_stream, C memory
	words  []uint64       // the stream's dispatch words
	arena  []byte         // the stream's inline-bytes arena
	closed bool

	dispatches uint64 // Dispatch calls that reached the GPU
	crossings  uint64 // Go→Objective-C calls made by those Dispatch calls
}

// deviceFacts reads what checkDevice and the caps need.
func (r *darwinRuntime) deviceFacts() deviceFacts {
	var f deviceFacts
	var major, minor C.int
	C.golf_macos_version(&major, &minor)
	f.macOSMajor, f.macOSMinor = int(major), int(minor)
	objc.WithAutoreleasePool(func() {
		d := r.dev
		f.name = d.Name()
		for fam := familyAppleMax; fam >= familyApple1; fam-- {
			if d.SupportsFamily(mtl.GPUFamily(fam)) {
				f.appleFamily = fam - familyApple1 + 1
				break
			}
		}
		f.metal3 = d.SupportsFamily(mtl.GPUFamily(familyMetal3))
		f.unified = d.HasUnifiedMemory()
	})
	return f
}

// queryCaps reads the device's limits.
func (r *darwinRuntime) queryCaps(f deviceFacts) Caps {
	c := Caps{Name: f.name, UnifiedMemory: f.unified}
	c.Flavour, c.BFloat = f.flavourAndBFloat()
	objc.WithAutoreleasePool(func() {
		d := r.dev
		c.MaxThreadsPerGroup = int(d.MaxThreadsPerThreadgroup().Width)
		c.ThreadgroupMemory = int(d.MaxThreadgroupMemoryLength())
		c.RecommendedWorkingSet = d.RecommendedMaxWorkingSetSize()
	})
	return c
}

// compile builds a library from MSL 3.1 source with fast math off. A
// library that comes back with warnings is kept; a nil one is an error
// carrying the compiler log.
func (r *darwinRuntime) compile(src string) (mtl.LibraryObject, error) {
	var lib mtl.LibraryObject
	var err error
	objc.WithAutoreleasePool(func() {
		opts := mtl.NewCompileOptions()
		opts.SetFastMathEnabled(false)
		opts.SetLanguageVersion(mtl.LanguageVersion(mslVersion3_1))
		var nsErr unsafe.Pointer
		lib = r.dev.NewLibraryWithSourceOptionsError(src, opts, unsafe.Pointer(&nsErr))
		if lib.Ptr() == nil {
			err = fmt.Errorf("metal: compiling the shader library (MSL 3.1): %s", describe(nsErr))
		}
	})
	return lib, err
}

// buildPipelines builds the pipeline of every registry kernel in the
// device's flavour and element types.
func (r *darwinRuntime) buildPipelines() error {
	for _, k := range Kernels {
		for _, e := range ElemTypes {
			if e == "bfloat" && !r.caps.BFloat {
				continue
			}
			if _, err := r.Pipeline(KernelName(k.Op, k.Dir, r.caps.Flavour, e)); err != nil {
				return err
			}
		}
	}
	return nil
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

// check returns the error every call returns once the runtime is closed or
// has failed.
func (r *darwinRuntime) check() error {
	if r.closed {
		return errClosed
	}
	return r.s.fatal
}

// noteFailure turns a failure the shim recorded into the fatal error.
func (r *darwinRuntime) noteFailure() {
	if r.s.fatal == nil && C.golf_stream_failed(r.stream) != 0 {
		r.s.fail(commandBufferError(C.GoString(C.golf_stream_err_desc(r.stream)),
			C.GoString(C.golf_stream_err_domain(r.stream)), int(C.golf_stream_err_code(r.stream))))
	}
}

// shimRC turns a shim return code into an error (the plan and the shim
// disagreeing on the in-flight count is a programming error).
func (r *darwinRuntime) shimRC(rc C.int, what string) error {
	switch rc {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("metal: %s: could not create a command buffer", what)
	}
	panic(fmt.Sprintf("metal: %s: the shim has %d command buffers in flight, the plan expected %d",
		what, int(C.golf_stream_inflight(r.stream)), r.s.inFlight()))
}

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
	if err := r.check(); err != nil {
		return nil, err
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
	info       kernelInfo
	rt         *darwinRuntime
}

func (p *darwinPipeline) Name() string    { return p.name }
func (p *darwinPipeline) MaxThreads() int { return p.maxThreads }

// Pipeline returns the pipeline for a kernel host name (built at start-up
// for the registry; others are built on first use and cached).
func (r *darwinRuntime) Pipeline(name string) (Pipeline, error) {
	if err := r.check(); err != nil {
		return nil, err
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
		// WrapAsProtocol; the selector is sent directly. One failed
		// attempt is retried (createPipeline).
		var retries int
		retries, err = createPipeline(name, func(int) error {
			var nsErr unsafe.Pointer
			pso := objc.Call[mtl.ComputePipelineStateObject](r.dev, objc.Sel("newComputePipelineStateWithFunction:error:"), fn, unsafe.Pointer(&nsErr))
			if pso.Ptr() == nil {
				return errors.New(describe(nsErr))
			}
			p = &darwinPipeline{name: name, pso: pso.Ptr(), maxThreads: int(pso.MaxTotalThreadsPerThreadgroup()), info: infoOf(name), rt: r}
			return nil
		})
		r.s.stats.PipelineRetries += uint64(retries)
	})
	return p, err
}

// Dispatch encodes grid threadgroups of group threads of p, committing
// command buffers as the plan says. It makes one call into Objective-C and
// allocates nothing unless it returns an error.
func (r *darwinRuntime) Dispatch(p Pipeline, grid, group [3]int, args []Arg, tgMem []int) error {
	if err := r.check(); err != nil {
		return err
	}
	dp, ok := p.(*darwinPipeline)
	if !ok || dp.rt != r {
		return fmt.Errorf("metal: Dispatch of a pipeline from another runtime (%T)", p)
	}
	empty, err := encodeDispatch(r.words, r.arena, dp.name, dp.maxThreads, r.caps.ThreadgroupMemory, grid, group, args, tgMem, r.ref)
	if err != nil || empty {
		return err
	}
	c, _ := dispatchCost(dp.info, args)
	l := r.s.policy.dispatchLoad(c, dp.info.family, dp.info.elem == "bfloat")
	plan := r.s.plan(l)
	encodePlan(r.words, plan)
	r.dispatches++
	r.crossings++
	rc := C.golf_dispatch(r.stream, dp.pso)
	r.noteFailure()
	if err := r.shimRC(rc, dp.name); err != nil {
		return err
	}
	r.s.dispatched(plan, l)
	return r.s.fatal
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

func (r *darwinRuntime) LastSerial() uint64 { return r.s.last }

// Completed polls the in-flight command buffers (one call into the shim).
func (r *darwinRuntime) Completed() uint64 {
	if r.closed || r.s.fatal != nil {
		return r.s.done
	}
	if n := int(C.golf_poll(r.stream)); n > 0 {
		r.s.completed(r.s.done + uint64(n))
	}
	r.noteFailure()
	return r.s.done
}

// Wait waits for command buffer serial (committing it if it is open).
func (r *darwinRuntime) Wait(serial uint64) error {
	if err := r.check(); err != nil {
		return err
	}
	commit, retire := r.s.waitPlan(serial)
	if commit || retire > 0 {
		rc := C.golf_wait(r.stream, cBool(commit), C.int(retire))
		r.noteFailure()
		if err := r.shimRC(rc, "Wait"); err != nil {
			return err
		}
	}
	r.s.waited(commit, retire)
	return r.s.fatal
}

// Sync commits the open command buffer, waits for all work and returns
// the runtime's fatal error, if any.
func (r *darwinRuntime) Sync() error {
	if err := r.check(); err != nil {
		return err
	}
	commit, retire := r.s.syncPlan()
	if commit || retire > 0 {
		rc := C.golf_wait(r.stream, cBool(commit), C.int(retire))
		r.noteFailure()
		if err := r.shimRC(rc, "Sync"); err != nil {
			return err
		}
	}
	r.s.synced(commit, retire)
	return r.s.fatal
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func (r *darwinRuntime) Stats() Stats { return r.s.stats }

// injectFailure records a command buffer failure with description what
// and MTLCommandBufferError code, as Metal would report one; for tests.
func (r *darwinRuntime) injectFailure(what string, code int) {
	cs := C.CString(what)
	defer C.free(unsafe.Pointer(cs))
	C.golf_stream_inject_failure(r.stream, cs, C.long(code))
	r.noteFailure()
}

// Close waits for outstanding work and releases the pipelines, library,
// queue and device. Buffers stay valid until freed. It returns the fatal
// error, if any.
func (r *darwinRuntime) Close() error {
	if r.closed {
		return nil
	}
	err := r.Sync()
	r.closed = true
	if r.stream != nil {
		C.golf_stream_free(r.stream)
		r.stream, r.words, r.arena = nil, nil, nil
	}
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

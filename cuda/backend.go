package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"unsafe"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// GEMMPath says what computes the backend's matrix products.
type GEMMPath int

const (
	// GEMMCublasLt runs them through cuBLASLt plans (the default with a
	// cuBLASLt).
	GEMMCublasLt GEMMPath = iota
	// GEMMKernels runs the library's gemm kernels (linear.cu) in the
	// backend's flavour: the path without cuBLASLt, and the one the
	// emulated tests take to run those kernels.
	GEMMKernels
)

func (p GEMMPath) String() string {
	if p == GEMMKernels {
		return "gemm kernels"
	}
	return "cuBLASLt"
}

// Options choose how a Backend runs.
type Options struct {
	// Flavour of the kernels; Auto picks TC (every supported device, sm_80+,
	// has m16n8k16 tensor cores).
	Flavour FlavourChoice
	// GEMM is the matrix-product path; GEMMCublasLt needs an Lt.
	GEMM GEMMPath
	// StagingBytes is the page-locked upload buffer, in two halves (0: 16
	// MiB).
	StagingBytes int
}

// FlavourChoice is a flavour, or Auto.
type FlavourChoice int

const (
	AutoFlavour FlavourChoice = iota
	PortableFlavour
	TCFlavour
)

// Image is one compiled kernel program: a cubin of kernel file File for
// element type Elem, with NVRTC's log (ptxas's resource report).
type Image struct {
	File, Elem string
	Cubin      []byte
	Log        string
}

// Stats counts what the backend asked of the device and the host since it
// opened.
type Stats struct {
	Launches uint64 // kernel launches
	Matmuls  uint64 // cuBLASLt matmuls
	// Syncs counts the host's waits for the whole stream (Sync, Download,
	// ReadScalar): the device then idles until the host enqueues again.
	Syncs uint64
	// StagingWaits counts waits for the older half of the upload staging
	// buffer (the host more than half the buffer ahead of the device; the
	// device keeps working through newer work).
	StagingWaits uint64
	// Allocs counts device allocations (cuMemAlloc); AllocBytes their
	// bytes. A training step allocates nothing once the first has run.
	Allocs, AllocBytes uint64
	// HostAllocs counts page-locked host allocations.
	HostAllocs uint64
	// UploadBytes and DownloadBytes are the bytes copied to and from the
	// device.
	UploadBytes, DownloadBytes uint64
}

// Sub returns s − t.
func (s Stats) Sub(t Stats) Stats {
	return Stats{s.Launches - t.Launches, s.Matmuls - t.Matmuls, s.Syncs - t.Syncs, s.StagingWaits - t.StagingWaits,
		s.Allocs - t.Allocs, s.AllocBytes - t.AllocBytes, s.HostAllocs - t.HostAllocs,
		s.UploadBytes - t.UploadBytes, s.DownloadBytes - t.DownloadBytes}
}

// Backend implements backend.Backend on one CUDA device, over a Context
// (the driver, on one locked OS thread) and cuBLASLt:
//
//   - one stream: every copy, kernel and matmul is queued on it in order,
//     and the host waits only in Sync, Download and ReadScalar (and for
//     the older half of the staging buffer when uploads run far ahead);
//   - device memory is allocated once: New takes a block of the tensor's
//     size class from the free list (Free returns it there) and calls
//     cuMemAlloc only when the list is empty, so once a training step has
//     run, the next allocates nothing; reusing a block is safe without a
//     wait because every use is ordered on the one stream;
//   - uploads (token batches) go through a page-locked buffer in two
//     halves, filled alternately: the host writes the next batch while the
//     device may still copy from the other half;
//   - kernels come from NVRTC's cubins (Open), launched with the block
//     sizes and grids of the launch table (launch.go), in the flavour of
//     the device (TC, or Portable); GEMMs go through cuBLASLt plans cached
//     per shape with a 32 MiB workspace, or the gemm kernels.
//
// One op family per file, with the base names of package metal
// (rmsnorm.go ↔ cuda/kernels/rmsnorm.cu). A Backend is not safe for
// concurrent use.
type Backend struct {
	ctx      *Context
	info     DeviceInfo
	flavour  Flavour
	gemmPath GEMMPath
	stream   Stream
	modules  []Module
	kerns    map[kernKey]*kern
	lt       *ltPlans
	ltName   string
	ws       DevicePtr // cuBLASLt workspace
	dummy    DevicePtr // bound for pointer arguments a kernel does not read
	free     map[int][]DevicePtr
	stage    staging
	rb       readback
	hostCopy hostCopy
	gen      uint64 // pieces of work queued so far (a host copy is current while unchanged)
	err      error
	stats    Stats
	closed   bool
	ownCtx   bool // Close closes ctx (OpenDevice)

	live, peak int64 // bytes of live tensors

	// Launch argument storage, reused (the driver copies arguments at
	// launch): vals holds pointer arguments, params points at each
	// argument.
	vals   [16]uint64
	params [16]unsafe.Pointer

	a *argStructs // the argument structs of the launch being made

	ew         ewScratch
	accScratch *backend.Tensor
	qk         *qkRopeState
	ns         *nsScratch
	att        attentionState
	res        partialScratch

	costs *costTally // the cost model's tally (cost.go); nil when off
	nccl  commState  // the NCCL communicator of JoinComm (nccl_backend.go)
}

// argStructs has one field per argument struct of shaders/args.go.
type argStructs struct {
	eltwise    shaders.EltwiseArgs
	rmsnorm    shaders.RMSNormArgs
	scalar     shaders.ScalarArgs
	reduce     shaders.ReduceArgs
	rmsnormBwd shaders.RMSNormBwdArgs
	residMix   shaders.ResidMixArgs
	scaledAdd  shaders.ScaledAddArgs
	embedding  shaders.EmbeddingArgs
	gemm       shaders.GemmArgs
	rope       shaders.RopeArgs
	ropeK      shaders.RopeArgs // k's, beside rope (q's), in the pair kernels
	attention  shaders.AttentionArgs
	ce         shaders.CEArgs
	adam       shaders.AdamArgs
	momentum   shaders.MomentumArgs
	ns         shaders.NSArgs
}

// kernKey names a registry kernel.
type kernKey struct{ op, dir string }

// kern is one registry kernel as the backend launches it, per element type
// (elemIndex): the function of its compiled flavour and its launch.
type kern struct {
	k      Kernel
	fn     [3]Function
	launch [3]Launch
	name   [3]string
}

// devTensor is a tensor's device memory: a block of its size class.
type devTensor struct {
	ptr   DevicePtr
	bytes int // the tensor's own bytes
	class int // the block's size (a multiple of 256)
}

// elemIndex is the index of dt's element type in ElemTypes.
func elemIndex(dt backend.DType) int {
	switch dt {
	case backend.F32:
		return 0
	case backend.F16:
		return 1
	case backend.BF16:
		return 2
	}
	panic(fmt.Sprintf("cuda: no kernel element type for %v", dt))
}

// Open returns a backend on ctx's device: it creates the stream, loads
// every image (the library compiled for the device: each kernel file in
// each element type), resolves every kernel of the registry in the
// device's flavour and checks that each launch the host makes fits the
// compiled kernel (CheckFit: threads ≤ its launch bounds, registers,
// shared memory, no spills) before any work, then (GEMMCublasLt) creates
// the cuBLASLt handle and allocates the workspace. lt may be nil with
// GEMMKernels.
func Open(ctx *Context, lt Lt, images []Image, opts Options) (*Backend, error) {
	return openWith(ctx, lt, opts, func(d Driver, arch string, _ Flavour) (map[string]Function, map[string]Resources, []Module, error) {
		return loadImages(d, arch, images)
	})
}

// functionLoader resolves the library's kernels on a driver: every host
// name of the registry for the flavour, with its resources, and the
// modules to unload at Close.
type functionLoader func(d Driver, arch string, f Flavour) (map[string]Function, map[string]Resources, []Module, error)

// loadImages loads each image (cuModuleLoadData) and resolves the
// registry's kernels of its file in every flavour, with the resources its
// cubin and ptxas's report give them.
func loadImages(d Driver, arch string, images []Image) (map[string]Function, map[string]Resources, []Module, error) {
	funcs := map[string]Function{}
	res := map[string]Resources{}
	var mods []Module
	for _, img := range images {
		r, err := KernelResources(img.Cubin, img.Log, arch)
		if err != nil {
			return nil, nil, mods, fmt.Errorf("cuda: %s.cu (%s): %w", img.File, img.Elem, err)
		}
		m, err := d.ModuleLoadData(img.Cubin)
		if err != nil {
			return nil, nil, mods, fmt.Errorf("cuda: loading %s.cu (%s): %w", img.File, img.Elem, err)
		}
		mods = append(mods, m)
		for _, k := range Kernels {
			if k.File != img.File {
				continue
			}
			for _, f := range Flavours {
				name := k.Name(f, img.Elem)
				if _, done := funcs[name]; done {
					continue
				}
				fn, err := d.ModuleGetFunction(m, name)
				if err != nil {
					return nil, nil, mods, fmt.Errorf("cuda: kernel %s: %w", name, err)
				}
				funcs[name], res[name] = fn, r[name]
			}
		}
	}
	return funcs, res, mods, nil
}

// openWith is Open with the kernels resolved by load.
func openWith(ctx *Context, lt Lt, opts Options, load functionLoader) (*Backend, error) {
	b := &Backend{ctx: ctx, info: ctx.Info, gemmPath: opts.GEMM, kerns: map[kernKey]*kern{}, free: map[int][]DevicePtr{},
		a: new(argStructs)}
	switch opts.Flavour {
	case PortableFlavour:
		b.flavour = Portable
	default:
		b.flavour = TC
	}
	if b.gemmPath == GEMMCublasLt && lt == nil {
		return nil, errors.New("cuda: the cuBLASLt GEMM path needs cuBLASLt")
	}
	arch := b.info.Arch()
	limits, err := Limits(arch)
	if err != nil {
		return nil, err
	}
	staging := opts.StagingBytes
	if staging <= 0 {
		staging = 16 << 20
	}
	ok := false
	defer func() {
		if !ok {
			b.Close()
		}
	}()
	var funcs map[string]Function
	var res map[string]Resources
	err = ctx.Do(func(d Driver) error {
		var err error
		if b.stream, err = d.StreamCreate(StreamNonBlocking); err != nil {
			return err
		}
		var mods []Module
		funcs, res, mods, err = load(d, arch, b.flavour)
		b.modules = append(b.modules, mods...)
		if err != nil {
			return err
		}
		if b.dummy, err = d.MemAlloc(256); err != nil {
			return err
		}
		b.stats.Allocs++
		return b.stage.open(d, staging, &b.stats)
	})
	if err != nil {
		return nil, err
	}
	var fits []error
	for _, k := range Kernels {
		kn := &kern{k: k}
		for i, elem := range ElemTypes {
			name := k.Name(b.flavour, elem)
			fn, found := funcs[name]
			if !found {
				return nil, fmt.Errorf("cuda: kernel %s: no image of %s.cu (%s) was loaded", name, k.File, elem)
			}
			kn.fn[i], kn.launch[i], kn.name[i] = fn, LaunchFor(k, b.flavour, elem), name
			if err := CheckLaunch(name, res[name], kn.launch[i], limits); err != nil {
				fits = append(fits, err)
			}
		}
		b.kerns[kernKey{k.Op, k.Dir}] = kn
	}
	if err := errors.Join(fits...); err != nil {
		return nil, err
	}
	if b.gemmPath == GEMMCublasLt {
		b.ltName = fmt.Sprintf("%T", lt)
		err = ctx.Do(func(d Driver) error {
			h, err := lt.NewHandle()
			if err != nil {
				return err
			}
			b.lt = &ltPlans{lt: lt, handle: h, plans: map[string]*LtPlan{}}
			if b.ws, err = d.MemAlloc(LtWorkspace); err != nil {
				return err
			}
			b.stats.Allocs++
			b.stats.AllocBytes += LtWorkspace
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	ok = true
	return b, nil
}

// Close releases the backend's device memory, modules, stream and
// cuBLASLt state, and the context if OpenDevice opened it (a context given
// to Open stays open: its owner closes it). Using the backend afterwards is
// a programmer error.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	err := b.release()
	if b.ownCtx {
		err = errors.Join(err, b.ctx.Close())
	}
	return err
}

func (b *Backend) release() error {
	return b.ctx.Do(func(d Driver) error {
		var errs []error
		if b.stream != 0 {
			errs = append(errs, d.StreamSynchronize(b.stream))
		}
		if b.lt != nil {
			errs = append(errs, b.lt.close())
		}
		for _, list := range b.free {
			for _, p := range list {
				errs = append(errs, d.MemFree(p))
			}
		}
		b.free = nil
		for _, p := range []DevicePtr{b.ws, b.dummy} {
			if p != 0 {
				errs = append(errs, d.MemFree(p))
			}
		}
		errs = append(errs, b.stage.close(d), b.rb.close(d))
		for _, m := range b.modules {
			errs = append(errs, d.ModuleUnload(m))
		}
		if b.stream != 0 {
			errs = append(errs, d.StreamDestroy(b.stream))
		}
		return errors.Join(errs...)
	})
}

func (b *Backend) Name() string { return "cuda" }

// Device describes the device and how the backend runs on it.
func (b *Backend) Device() string {
	i := b.info
	return fmt.Sprintf("%s (%s, %d SMs, %.1f GiB, %s kernels, GEMMs by %s)", i.Name, i.Arch(), i.SMs,
		float64(i.TotalMem)/(1<<30), b.flavour, b.gemmPath)
}

// ReorderedSums reports whether the products in dt sum in another order
// than the float32 ones (see backendtest.ReorderedSums): bf16 and fp16 on
// the tensor cores (the TC flavour's mma.sync) or through cuBLASLt, whose
// 16-bit and float32 GEMMs are different kernels.
func (b *Backend) ReorderedSums(dt backend.DType) bool {
	return (dt == backend.BF16 || dt == backend.F16) && (b.flavour == TC || b.gemmPath == GEMMCublasLt)
}

// Info is the device's facts.
func (b *Backend) Info() DeviceInfo { return b.info }

// Flavour is the kernels' flavour.
func (b *Backend) Flavour() Flavour { return b.flavour }

// GEMMPath is what computes the matrix products.
func (b *Backend) GEMMPath() GEMMPath { return b.gemmPath }

// Supports is true for every op in every float dtype: every device golf
// runs on (sm_80+) has bf16.
func (b *Backend) Supports(op backend.Op, dt backend.DType) bool {
	return dt == backend.F32 || dt == backend.F16 || dt == backend.BF16
}

// Stats are the backend's counts since it opened.
func (b *Backend) Stats() Stats { return b.stats }

// HostCounts returns the counts golf bench prints for every backend:
// launches (dispatches), no command buffers (CUDA has none), Sync-like
// waits (Sync, Download, ReadScalar: each drains the stream), drains
// (the same), partial waits (staging waits) and no throttles.
func (b *Backend) HostCounts() (dispatches, commandBuffers, syncs, drains, partialWaits, throttles uint64) {
	s := b.stats
	return s.Launches + s.Matmuls, 0, s.Syncs, s.Syncs, s.StagingWaits, 0
}

// RecommendedWorkingSet is 90% of the device's memory: the trainer refuses
// a run whose memory plan needs more (the rest is the driver's, cuBLASLt's
// workspace, and fragmentation of the free lists).
func (b *Backend) RecommendedWorkingSet() uint64 { return b.info.TotalMem / 10 * 9 }

// AllocatedBytes returns the bytes of live tensors and their peak
// (backend.MemoryStats).
func (b *Backend) AllocatedBytes() (live, peak int64) { return b.live, b.peak }

// ResetPeakAllocated starts a new peak from the live bytes.
func (b *Backend) ResetPeakAllocated() { b.peak = b.live }

// do runs f on the context's thread, keeping the first error for Sync.
func (b *Backend) do(f func(d Driver) error) {
	if err := b.ctx.Do(f); err != nil && b.err == nil {
		b.err = err
	}
}

// sizeClass is the block size a tensor of n bytes takes: a multiple of
// 256 (cuMemAlloc's alignment, so every tensor starts 256-byte aligned, as
// cuBLASLt's default plans assume).
func sizeClass(n int) int { return max(256, (n+255)/256*256) }

// New allocates a zero-filled tensor from the free list of its size class
// (cuMemAlloc only when the list is empty).
func (b *Backend) New(dt backend.DType, shape ...int) *backend.Tensor {
	t := &backend.Tensor{Shape: append([]int(nil), shape...), DType: dt}
	n := t.Len() * dt.Size()
	class := sizeClass(n)
	var p DevicePtr
	if list := b.free[class]; len(list) > 0 {
		p = list[len(list)-1]
		b.free[class] = list[:len(list)-1]
	}
	b.gen++
	err := b.ctx.Do(func(d Driver) error {
		if p == 0 {
			var err error
			if p, err = d.MemAlloc(uint64(class)); err != nil {
				return err
			}
			b.stats.Allocs++
			b.stats.AllocBytes += uint64(class)
		}
		return d.MemsetD8Async(p, 0, uint64(class), b.stream)
	})
	if err != nil {
		panic(fmt.Sprintf("cuda: allocating %v: %v", t, err))
	}
	t.Data = &devTensor{ptr: p, bytes: n, class: class}
	b.live += int64(n)
	b.peak = max(b.peak, b.live)
	return t
}

// Free returns t's block to its free list (queued work that still uses it
// runs before any later use: one stream).
func (b *Backend) Free(t *backend.Tensor) {
	d, ok := t.Data.(*devTensor)
	if !ok || d.ptr == 0 {
		return
	}
	b.free[d.class] = append(b.free[d.class], d.ptr)
	b.live -= int64(d.bytes)
	d.ptr = 0
}

// ptr is the device address of t's first element.
func ptr(t *backend.Tensor) DevicePtr {
	d := t.Data.(*devTensor)
	if d.ptr == 0 {
		panic(fmt.Sprintf("cuda: %v used after Free", t))
	}
	return d.ptr + DevicePtr(t.Offset*t.DType.Size())
}

// Upload converts src ([]float32 rounded to t.DType, or []int32) into the
// staging buffer and queues its copy into t.
func (b *Backend) Upload(t *backend.Tensor, src any) {
	es := t.DType.Size()
	n := t.Len()
	switch s := src.(type) {
	case []float32:
		if len(s) != n || !t.DType.IsFloat() {
			panic(fmt.Sprintf("cuda: Upload %d float32 into %v", len(s), t))
		}
	case []int32:
		if len(s) != n || t.DType != backend.I32 {
			panic(fmt.Sprintf("cuda: Upload %d int32 into %v", len(s), t))
		}
	default:
		panic(fmt.Sprintf("cuda: Upload %T", src))
	}
	dst := ptr(t)
	b.gen++
	b.do(func(d Driver) error {
		for done := 0; done < n; {
			chunk, buf, err := b.stage.reserve(d, b.stream, (n-done)*es, es, &b.stats)
			if err != nil {
				return err
			}
			m := chunk / es
			switch s := src.(type) {
			case []float32:
				for i, v := range s[done : done+m] {
					switch t.DType {
					case backend.F32:
						binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
					case backend.F16:
						binary.LittleEndian.PutUint16(buf[2*i:], backend.F16Bits(v))
					case backend.BF16:
						binary.LittleEndian.PutUint16(buf[2*i:], backend.BF16Bits(v))
					}
				}
			case []int32:
				for i, v := range s[done : done+m] {
					binary.LittleEndian.PutUint32(buf[4*i:], uint32(v))
				}
			}
			if err := d.MemcpyHtoDAsync(dst+DevicePtr(done*es), unsafe.Pointer(&buf[0]), uint64(chunk), b.stream); err != nil {
				return err
			}
			b.stats.UploadBytes += uint64(chunk)
			done += m
		}
		return nil
	})
}

// read copies t's bytes to the host: a copy into page-locked memory and a
// wait for the stream (counted in Syncs). A storage of at most
// hostCopyMax bytes is read whole and kept until the next piece of work is
// queued (nothing else writes device memory), so reading another part of
// it, as the training loop reads its losses after ReadScalar, needs no
// second wait.
func (b *Backend) read(t *backend.Tensor) ([]byte, error) {
	es := t.DType.Size()
	n := t.Len() * es
	out := make([]byte, n)
	if n == 0 {
		return out, nil
	}
	d := t.Data.(*devTensor)
	if d.ptr == 0 {
		panic(fmt.Sprintf("cuda: %v used after Free", t))
	}
	off := t.Offset * es
	if hc := &b.hostCopy; hc.data != nil && hc.gen == b.gen && hc.base == d.ptr {
		copy(out, hc.data[off:off+n])
		return out, nil
	}
	src, size, whole := ptr(t), n, d.bytes <= hostCopyMax
	if whole {
		src, size = d.ptr, d.bytes
	}
	err := b.ctx.Do(func(dr Driver) error {
		buf, err := b.rb.get(dr, size, &b.stats)
		if err != nil {
			return err
		}
		if err := dr.MemcpyDtoHAsync(unsafe.Pointer(&buf[0]), src, uint64(size), b.stream); err != nil {
			return err
		}
		b.stats.DownloadBytes += uint64(size)
		b.stats.Syncs++
		if err := dr.StreamSynchronize(b.stream); err != nil {
			return err
		}
		b.gen++ // the copy itself
		if whole {
			b.hostCopy = hostCopy{base: d.ptr, data: append(b.hostCopy.data[:0], buf[:size]...), gen: b.gen}
			copy(out, buf[off:off+n])
		} else {
			copy(out, buf[:n])
		}
		return nil
	})
	return out, err
}

// hostCopyMax is the largest storage read keeps a host copy of.
const hostCopyMax = 1 << 20

// hostCopy is the contents of one storage as read at queue generation gen.
type hostCopy struct {
	base DevicePtr
	data []byte
	gen  uint64
}

// Download waits for the stream and returns t widened to float32.
func (b *Backend) Download(t *backend.Tensor) []float32 {
	src, err := b.read(t)
	if err != nil {
		if b.err == nil {
			b.err = err
		}
		panic(fmt.Sprintf("cuda: Download %v: %v", t, err))
	}
	out := make([]float32, t.Len())
	for i := range out {
		switch t.DType {
		case backend.F32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		case backend.F16:
			out[i] = backend.F16Float(binary.LittleEndian.Uint16(src[2*i:]))
		case backend.BF16:
			out[i] = backend.BF16Float(binary.LittleEndian.Uint16(src[2*i:]))
		case backend.I32:
			out[i] = float32(int32(binary.LittleEndian.Uint32(src[4*i:])))
		}
	}
	return out
}

// Sync waits for the stream and returns the first error since the last
// Sync.
func (b *Backend) Sync() error {
	b.stats.Syncs++
	err := b.ctx.Do(func(d Driver) error { return d.StreamSynchronize(b.stream) })
	if b.err != nil {
		err, b.err = b.err, nil
	}
	return err
}

// launch queues kernel (op, dir) for dtype dt on grid blocks with the
// table's block size; args are tensors (their device address), nil (an
// unread pointer argument: a dummy allocation) or unsafe.Pointer to an
// argument struct of b.a.
func (b *Backend) launch(op, dir string, dt backend.DType, grid [3]int, args ...any) {
	kn := b.kern(op, dir)
	i := elemIndex(dt)
	if len(args) > len(b.params) {
		panic(fmt.Sprintf("cuda: kernel %s: %d arguments", kn.name[i], len(args)))
	}
	for j, a := range args {
		switch v := a.(type) {
		case *backend.Tensor:
			if v == nil {
				b.vals[j] = uint64(b.dummy)
			} else {
				b.vals[j] = uint64(ptr(v))
			}
			b.params[j] = unsafe.Pointer(&b.vals[j])
		case unsafe.Pointer:
			b.params[j] = v
		default:
			panic(fmt.Sprintf("cuda: kernel %s: argument %d is a %T", kn.name[i], j, a))
		}
	}
	for d := range grid {
		if grid[d] < 1 {
			panic(fmt.Sprintf("cuda: kernel %s: grid %v", kn.name[i], grid))
		}
	}
	g := [3]uint32{uint32(grid[0]), uint32(grid[1]), uint32(grid[2])}
	l := kn.launch[i]
	blk := [3]uint32{uint32(l.Threads), 1, 1}
	params := b.params[:len(args)]
	if b.costs != nil {
		b.costLaunch(kn, i, args)
	}
	b.stats.Launches++
	b.gen++
	b.do(func(d Driver) error {
		err := d.LaunchKernel(kn.fn[i], g, blk, uint32(l.DynamicShared), b.stream, params)
		if err != nil {
			return fmt.Errorf("cuda: launching %s: %w", kn.name[i], err)
		}
		return nil
	})
	runtime.KeepAlive(args)
}

// threads is the block size of kernel (op, dir) for dt (the launch
// table's).
func (b *Backend) threads(op, dir string, dt backend.DType) int {
	return b.kern(op, dir).launch[elemIndex(dt)].Threads
}

func (b *Backend) kern(op, dir string) *kern {
	kn, ok := b.kerns[kernKey{op, dir}]
	if !ok {
		panic(fmt.Sprintf("cuda: no kernel %s %s in the registry", op, dir))
	}
	return kn
}

// structArg is the launch argument of an argument struct.
func structArg[T any](v *T) unsafe.Pointer { return unsafe.Pointer(v) }

// blocks is ⌈n/t⌉.
func blocks(n, t int) int { return (n + t - 1) / t }

// launch1D covers n items with one thread each.
func (b *Backend) launch1D(op, dir string, dt backend.DType, n int, args ...any) {
	b.launch(op, dir, dt, [3]int{blocks(n, b.threads(op, dir, dt)), 1, 1}, args...)
}

// checkLen panics unless every tensor has n elements.
func checkLen(op string, n int, ts ...*backend.Tensor) {
	for _, t := range ts {
		if t.Len() != n {
			panic(fmt.Sprintf("cuda: %s: %v has %d elements, want %d", op, t, t.Len(), n))
		}
	}
}

// checkDType panics unless every tensor has dtype dt.
func checkDType(op string, dt backend.DType, ts ...*backend.Tensor) {
	for _, t := range ts {
		if t.DType != dt {
			panic(fmt.Sprintf("cuda: %s: %v, want %v", op, t, dt))
		}
	}
}

// staging is the page-locked upload buffer: two halves, filled alternately;
// ev[h] is recorded after the last copy out of half h before the host
// moves to the other half, and waited for (only if its work has not run)
// before half h is written again.
type staging struct {
	base      unsafe.Pointer
	half      int
	cur, off  int
	ev        [2]Event
	recorded  [2]bool
	allocated bool
}

func (s *staging) open(d Driver, bytes int, st *Stats) error {
	s.half = max(4096, bytes/2/256*256)
	p, err := d.MemAllocHost(uint64(2 * s.half))
	if err != nil {
		return err
	}
	s.base, s.allocated = p, true
	st.HostAllocs++
	for i := range s.ev {
		if s.ev[i], err = d.EventCreate(EventDisableTiming); err != nil {
			return err
		}
	}
	return nil
}

// reserve returns up to want bytes (a multiple of es) of the current half,
// switching halves when it is full.
func (s *staging) reserve(d Driver, stream Stream, want, es int, st *Stats) (int, []byte, error) {
	if s.off+es > s.half {
		if err := d.EventRecord(s.ev[s.cur], stream); err != nil {
			return 0, nil, err
		}
		s.recorded[s.cur] = true
		s.cur ^= 1
		s.off = 0
		if s.recorded[s.cur] {
			if err := d.EventQuery(s.ev[s.cur]); errors.Is(err, ErrNotReady) {
				st.StagingWaits++
				if err := d.EventSynchronize(s.ev[s.cur]); err != nil {
					return 0, nil, err
				}
			} else if err != nil {
				return 0, nil, err
			}
			s.recorded[s.cur] = false
		}
	}
	n := min(want, (s.half-s.off)/es*es)
	at := s.cur*s.half + s.off
	s.off += (n + 15) / 16 * 16
	return n, unsafe.Slice((*byte)(s.base), 2*s.half)[at : at+n], nil
}

func (s *staging) close(d Driver) error {
	var errs []error
	for _, e := range s.ev {
		if e != 0 {
			errs = append(errs, d.EventDestroy(e))
		}
	}
	if s.allocated {
		errs = append(errs, d.MemFreeHost(s.base))
		s.allocated = false
	}
	return errors.Join(errs...)
}

// readback is page-locked memory for downloads, grown to the largest.
type readback struct {
	base unsafe.Pointer
	n    int
}

func (r *readback) get(d Driver, n int, st *Stats) ([]byte, error) {
	if r.n < n {
		if r.base != nil {
			if err := d.MemFreeHost(r.base); err != nil {
				return nil, err
			}
			r.base, r.n = nil, 0
		}
		size := max(n, 64<<10)
		p, err := d.MemAllocHost(uint64(size))
		if err != nil {
			return nil, err
		}
		r.base, r.n = p, size
		st.HostAllocs++
	}
	return unsafe.Slice((*byte)(r.base), r.n), nil
}

func (r *readback) close(d Driver) error {
	if r.base == nil {
		return nil
	}
	err := d.MemFreeHost(r.base)
	r.base, r.n = nil, 0
	return err
}

// scratch returns *t if it holds n elements of F32, else a new tensor in
// its place (the old one freed).
func (b *Backend) scratch(t **backend.Tensor, n int) *backend.Tensor {
	if *t != nil && (*t).Len() >= n {
		return *t
	}
	if *t != nil {
		b.Free(*t)
	}
	*t = b.New(backend.F32, n)
	return *t
}

// FreeBlocks reports the free lists: blocks by size class (for tests).
func (b *Backend) FreeBlocks() map[int]int {
	out := map[int]int{}
	classes := make([]int, 0, len(b.free))
	for c := range b.free {
		classes = append(classes, c)
	}
	sort.Ints(classes)
	for _, c := range classes {
		out[c] = len(b.free[c])
	}
	return out
}

var (
	_ backend.Backend     = (*Backend)(nil)
	_ backend.MemoryStats = (*Backend)(nil)
)

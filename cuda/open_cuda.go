//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DeviceOptions choose the device and how the backend runs on it.
type DeviceOptions struct {
	Options
	// Ordinal is the device (0: the first).
	Ordinal int
	// Cache holds compiled kernels; nil means DefaultCache (a cache that
	// cannot be opened means compiling every start).
	Cache *Cache
	// Progress, when set, gets a line about the kernel compile.
	Progress func(string)
}

// OpenDevice opens the CUDA backend on a device: it loads the driver,
// opens the device's context on its own OS thread, compiles the kernel
// library for the device's architecture with NVRTC (through the on-disk
// cache, so a second start only loads), loads cuBLASLt for the GEMMs
// (without it, the gemm kernels: Options.GEMM says which ran), and calls
// Open. Closing the backend closes the context.
func OpenDevice(o DeviceOptions) (*Backend, error) {
	drv, err := LoadDriver()
	if err != nil {
		return nil, err
	}
	ctx, err := OpenContext(drv, o.Ordinal)
	if err != nil {
		return nil, err
	}
	b, err := openOn(ctx, o)
	if err != nil {
		return nil, errors.Join(err, ctx.Close())
	}
	b.ownCtx = true
	return b, nil
}

func openOn(ctx *Context, o DeviceOptions) (*Backend, error) {
	nv, err := LoadNVRTC()
	if err != nil {
		return nil, err
	}
	if major := ctx.Info.DriverVersion / 1000; major < nv.Major {
		return nil, fmt.Errorf("cuda: NVRTC %d.%d at %s compiles for driver %d and newer; the driver is %s: "+
			"update the driver or use an older NVRTC (GOLF_CUDA_LIB_PATH)", nv.Major, nv.Minor, nv.Path, nv.Major,
			driverVersionString(ctx.Info.DriverVersion))
	}
	cache := o.Cache
	if cache == nil {
		cache, _ = DefaultCache()
	}
	start := time.Now()
	arch := ctx.Info.Arch()
	files, err := nv.CompileJobs(context.Background(), LibraryJobs([]string{arch}, ElemTypes), cache, ctx.Info.DriverVersion, 0)
	if err != nil {
		return nil, err
	}
	images := make([]Image, len(files))
	cached := 0
	for i, f := range files {
		images[i] = Image{File: f.File, Elem: f.Elem, Cubin: f.CUBIN, Log: f.Log}
		if f.Cached {
			cached++
		}
	}
	if o.Progress != nil {
		o.Progress(fmt.Sprintf("cuda: %d kernel programs for %s (%d from the cache) in %s, NVRTC %d.%d", len(files), arch,
			cached, time.Since(start).Round(time.Millisecond), nv.Major, nv.Minor))
		for _, note := range resourceNotes(files) {
			o.Progress(note)
		}
	}
	var lt Lt
	if o.GEMM == GEMMCublasLt {
		l, err := LoadCublasLt()
		if err != nil {
			if o.Progress != nil {
				o.Progress(fmt.Sprintf("cuda: no cuBLASLt (%v); GEMMs run on golf's gemm kernels", firstLine(err)))
			}
			o.GEMM = GEMMKernels
		} else {
			lt = l
		}
	}
	return Open(ctx, lt, images, o.Options)
}

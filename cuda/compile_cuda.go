//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// CompileFile compiles cuda/kernels/<file>.cu for arch (sm_XX) and element
// type elem with CompileOptions, through cache when it is not nil (a cache
// entry that does not parse is compiled again and replaced). driverVersion
// is part of the cache key (0 without a driver).
func (n *NVRTC) CompileFile(file, arch, elem string, cache *Cache, driverVersion int, extra ...string) (*CompiledFile, error) {
	p, err := FileProgram(file)
	if err != nil {
		return nil, err
	}
	opts := CompileOptions(arch, elem, extra...)
	key := CacheKey{Program: p, Options: opts, Arch: arch, NVRTCVersion: [2]int{n.Major, n.Minor}, DriverVersion: driverVersion}
	out := &CompiledFile{File: file, Arch: arch, Elem: elem}
	if cache != nil {
		cubin, log, ok, err := cache.Get(key)
		if err != nil {
			return nil, err
		}
		if ok {
			if res, err := KernelResources(cubin, log, arch); err == nil {
				out.CUBIN, out.Log, out.Kernels, out.Cached = cubin, log, res, true
				return out, nil
			}
		}
	}
	r, err := n.Compile(p, opts)
	if err != nil {
		return nil, err
	}
	res, err := KernelResources(r.CUBIN, r.Log, arch)
	if err != nil {
		return nil, fmt.Errorf("%s for %s (%s): %w", p.Name, arch, elem, err)
	}
	if cache != nil {
		if err := cache.Put(key, r.CUBIN, r.Log); err != nil {
			return nil, err
		}
	}
	out.CUBIN, out.Log, out.Kernels = r.CUBIN, r.Log, res
	return out, nil
}

// CompileJobs runs jobs on workers goroutines (GOMAXPROCS when workers ≤ 0)
// and returns the results in job order. Every failed job is reported: the
// error joins them all, each with its compile log. When ctx ends, no new
// compile starts and the error is ctx's.
func (n *NVRTC) CompileJobs(ctx context.Context, jobs []Job, cache *Cache, driverVersion, workers int) ([]*CompiledFile, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([]*CompiledFile, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				out[i], errs[i] = n.CompileFile(j.File, j.Arch, j.Elem, cache, driverVersion)
			}
		}()
	}
feed:
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

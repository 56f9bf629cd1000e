//go:build cuda

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/golf-ml/golf/cuda"
)

// runKernels compiles the library for opts.archs × opts.elems, prints the
// report, and fails on any compile error (with its log) or any launch that
// does not fit its kernel.
func runKernels(ctx context.Context, opts kernelsOptions) error {
	n, err := cuda.LoadNVRTC()
	if err != nil {
		return err
	}
	supported, err := n.SupportedArchs()
	if err != nil {
		return err
	}
	for _, a := range opts.archs {
		if !slices.Contains(supported, a) {
			return fmt.Errorf("--arch %s: NVRTC %d.%d (%s) compiles for %s", a, n.Major, n.Minor, n.Path,
				strings.Join(supported, ", "))
		}
	}
	var cache *cuda.Cache
	if !opts.noCache {
		if cache, err = cuda.DefaultCache(); err != nil {
			return err
		}
	}
	start := time.Now()
	jobs := cuda.LibraryJobs(opts.archs, opts.elems)
	files, err := n.CompileJobs(ctx, jobs, cache, 0, 0)
	if err != nil {
		return err
	}
	if opts.logDir != "" {
		if err := os.MkdirAll(opts.logDir, 0o755); err != nil {
			return fmt.Errorf("--log-dir: %w", err)
		}
		for _, f := range files {
			name := filepath.Join(opts.logDir, fmt.Sprintf("%s.%s.%s.log", f.File, f.Arch, f.Elem))
			if err := os.WriteFile(name, []byte(f.Log), 0o644); err != nil {
				return fmt.Errorf("--log-dir: %w", err)
			}
		}
	}
	rows, rerr := cuda.Report(files)
	cuda.SortRows(rows)
	if err := cuda.WriteReport(opts.stdout, rows); err != nil {
		return err
	}
	cached := 0
	for _, f := range files {
		if f.Cached {
			cached++
		}
	}
	fmt.Fprintf(opts.stderr, "golf kernels: %d programs (%d from the cache), %d rows, %s, NVRTC %d.%d at %s\n",
		len(files), cached, len(rows), time.Since(start).Round(time.Millisecond), n.Major, n.Minor, n.Path)
	if rerr != nil {
		return fmt.Errorf("kernels that do not fit their launch configuration, or whose spills are unknown:\n%w", rerr)
	}
	return nil
}

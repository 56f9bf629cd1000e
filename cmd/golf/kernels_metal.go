package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/golf-ml/golf/metal"
)

// metalKernelsOptions is what `golf kernels --backend metal` was asked for,
// checked.
type metalKernelsOptions struct {
	elems  []string // kernel element types (float, half, bfloat)
	stdout io.Writer
	stderr io.Writer
}

// parseMetalKernelsFlags checks the flags of the Metal structure report:
// --dtype as for CUDA; cudaOnly are the CUDA-only flags the user set
// explicitly (--arch, --no-cache, --log-dir), refused rather than ignored.
func parseMetalKernelsFlags(dtypes string, cudaOnly []string) (metalKernelsOptions, error) {
	var opts metalKernelsOptions
	if len(cudaOnly) > 0 {
		return opts, fmt.Errorf("%s: CUDA-only (the NVRTC compile); golf kernels --backend metal takes --dtype only",
			strings.Join(cudaOnly, ", "))
	}
	elems, err := parseKernelDTypes(dtypes)
	if err != nil {
		return opts, err
	}
	opts.elems = elems
	return opts, nil
}

// runMetalKernels prints the structure report (metal.StructureReport) of
// every Metal kernel in both flavours and the element types asked for. It
// needs clang++ (found as the strict front end finds it) and nothing else:
// the shaders and the strict metal_stdlib are the ones the binary embeds.
func runMetalKernels(opts metalKernelsOptions) error {
	clang, err := metal.StructureClang()
	if err != nil {
		return err
	}
	start := time.Now()
	rows, err := metal.StructureReport(clang)
	if err != nil {
		return err
	}
	kept := rows[:0]
	for _, r := range rows {
		if slices.Contains(opts.elems, r.Elem) {
			kept = append(kept, r)
		}
	}
	if err := metal.WriteStructure(opts.stdout, kept); err != nil {
		return err
	}
	fmt.Fprintf(opts.stderr, "golf kernels: %d Metal kernel instantiations, %s, clang at %s\n",
		len(kept), time.Since(start).Round(time.Millisecond), clang)
	return nil
}

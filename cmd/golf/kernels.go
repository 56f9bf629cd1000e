package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cuda"
)

// kernelsOptions is what `golf kernels` was asked for, checked.
type kernelsOptions struct {
	archs   []string // sm_XX, each with known limits
	elems   []string // kernel element types (float, half, bfloat)
	noCache bool
	logDir  string // where each program's NVRTC log is written ("": nowhere)
	stdout  io.Writer
	stderr  io.Writer
}

// kernelsCommand compiles the CUDA kernel library with the NVRTC it finds
// (no GPU needed) and prints every kernel's resource use beside the launch
// configuration the backend uses against it; with --backend metal it
// prints the Metal library's structure report (kernels_metal.go).
func kernelsCommand() *cli.Command {
	var backendName, archs, dtypes string
	var noCache bool
	var logDir string
	return &cli.Command{
		Name: "kernels",
		Usage: "compile every CUDA kernel × dtype × flavour with NVRTC and print registers, spills, shared memory, launch bounds and the launch configuration (no GPU needed); " +
			"--backend metal: print every Metal kernel × flavour × dtype's structure from the clang AST of the embedded shaders (threads per threadgroup, threadgroup memory, widest device load and store, MMAs and barriers per main-loop iteration, constant or run-time tile bounds; needs clang++, no Mac). " +
			"--arch, --no-cache and --log-dir are CUDA-only: given explicitly with --backend metal they are refused; --dtype selects the element types of either",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", Value: "cuda", Destination: &backendName,
				Usage: "the kernel library to report: cuda (compiled with NVRTC) or metal (the structure report, from clang's AST)"},
			&cli.StringFlag{Name: "arch", Value: "sm_80,sm_86,sm_89,sm_90", Destination: &archs,
				Usage: "comma-separated GPU architectures to compile for (cuda only)"},
			&cli.StringFlag{Name: "dtype", Value: "fp32,fp16,bf16", Destination: &dtypes,
				Usage: "comma-separated element types (fp32, fp16, bf16)"},
			&cli.BoolFlag{Name: "no-cache", Destination: &noCache,
				Usage: "compile everything, neither reading nor writing the kernel cache ($GOLF_CUDA_CACHE_DIR, else the user cache dir's golf/cuda; cuda only)"},
			&cli.StringFlag{Name: "log-dir", Destination: &logDir,
				Usage: "write each program's NVRTC log (ptxas's report of every kernel) to `DIR`/<file>.<arch>.<dtype>.log (cuda only)"},
		},
		Action: func(ctx *cli.Context) error {
			if backendName == "metal" {
				var cudaOnly []string
				for _, f := range []string{"arch", "no-cache", "log-dir"} {
					if ctx.IsSet(f) {
						cudaOnly = append(cudaOnly, "--"+f)
					}
				}
				opts, err := parseMetalKernelsFlags(dtypes, cudaOnly)
				if err != nil {
					return err
				}
				opts.stdout, opts.stderr = os.Stdout, os.Stderr
				return runMetalKernels(opts)
			}
			opts, err := parseKernelsFlags(backendName, archs, dtypes)
			if err != nil {
				return err
			}
			opts.noCache, opts.logDir = noCache, logDir
			opts.stdout, opts.stderr = os.Stdout, os.Stderr
			return runKernels(ctx.Context, opts)
		},
	}
}

// parseKernelsFlags checks the flags before any work.
func parseKernelsFlags(backendName, archs, dtypes string) (kernelsOptions, error) {
	var opts kernelsOptions
	if backendName != "cuda" {
		return opts, fmt.Errorf("--backend %s: golf kernels reports the cuda library (NVRTC) or the metal library (--backend metal, the structure report)", backendName)
	}
	list, err := cuda.ParseArchs(archs)
	if err != nil {
		return opts, fmt.Errorf("--arch: %w", err)
	}
	for _, a := range list {
		if _, err := cuda.Limits(a); err != nil {
			return opts, fmt.Errorf("--arch: %w", err)
		}
	}
	opts.archs = list
	opts.elems, err = parseKernelDTypes(dtypes)
	return opts, err
}

// parseKernelDTypes reads --dtype: the kernels' element types (float,
// half, bfloat), each once, in the order given.
func parseKernelDTypes(dtypes string) ([]string, error) {
	var elems []string
	seen := map[string]bool{}
	for _, s := range strings.Split(dtypes, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		dt, err := backend.ParseDType(s)
		if err != nil {
			return nil, fmt.Errorf("--dtype: %w", err)
		}
		if e := cuda.ElemType(dt); !seen[e] {
			seen[e] = true
			elems = append(elems, e)
		}
	}
	if len(elems) == 0 {
		return nil, fmt.Errorf("--dtype: no element type given")
	}
	return elems, nil
}

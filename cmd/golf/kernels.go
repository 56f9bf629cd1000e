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
// configuration the backend uses against it.
func kernelsCommand() *cli.Command {
	var backendName, archs, dtypes string
	var noCache bool
	var logDir string
	return &cli.Command{
		Name:  "kernels",
		Usage: "compile every CUDA kernel × dtype × flavour with NVRTC and print registers, spills, shared memory, launch bounds and the launch configuration (no GPU needed)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", Value: "cuda", Destination: &backendName,
				Usage: "the kernel library to compile: cuda"},
			&cli.StringFlag{Name: "arch", Value: "sm_80,sm_86,sm_89,sm_90", Destination: &archs,
				Usage: "comma-separated GPU architectures to compile for"},
			&cli.StringFlag{Name: "dtype", Value: "fp32,fp16,bf16", Destination: &dtypes,
				Usage: "comma-separated element types (fp32, fp16, bf16)"},
			&cli.BoolFlag{Name: "no-cache", Destination: &noCache,
				Usage: "compile everything, neither reading nor writing the kernel cache ($GOLF_CUDA_CACHE_DIR, else the user cache dir's golf/cuda)"},
			&cli.StringFlag{Name: "log-dir", Destination: &logDir,
				Usage: "write each program's NVRTC log (ptxas's report of every kernel) to `DIR`/<file>.<arch>.<dtype>.log"},
		},
		Action: func(ctx *cli.Context) error {
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
		return opts, fmt.Errorf("--backend %s: golf kernels compiles the cuda library only (Metal compiles its shaders at start-up)", backendName)
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
	seen := map[string]bool{}
	for _, s := range strings.Split(dtypes, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		dt, err := backend.ParseDType(s)
		if err != nil {
			return opts, fmt.Errorf("--dtype: %w", err)
		}
		if e := cuda.ElemType(dt); !seen[e] {
			seen[e] = true
			opts.elems = append(opts.elems, e)
		}
	}
	if len(opts.elems) == 0 {
		return opts, fmt.Errorf("--dtype: no element type given")
	}
	return opts, nil
}

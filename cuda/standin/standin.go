// Package standin builds the stand-in CUDA driver of package
// internal/kemu/cudacpp for golf's kernel library (every kernel of
// cuda.Kernels, compiled as C++ over the kernel emulator), so that the
// CUDA backend's host code runs, through golf's own purego bindings, on a
// machine without a GPU: tests point GOLF_CUDA_LIB_PATH at it (Use) before
// anything loads the driver, and the real NVRTC compiles the kernels the
// stand-in then loads from their cubins. Only tests import it.
package standin

import (
	"os"
	"sync"

	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/internal/kemu/cudacpp"
)

// Config is the build of the stand-in for golf's library: the kernel files
// and their headers as NVRTC gets them, golf_prelude.cuh as the prelude,
// and every host name of the registry (both flavours, every element type).
func Config() (cudacpp.Config, error) {
	srcs := map[string][]byte{}
	for _, f := range cuda.KernelFiles() {
		p, err := cuda.FileProgram(f)
		if err != nil {
			return cudacpp.Config{}, err
		}
		srcs[p.Name] = []byte(p.Source)
		for _, h := range p.Headers {
			srcs[h.Name] = []byte(h.Source)
		}
	}
	var ks []cudacpp.Kernel
	seen := map[string]bool{}
	for _, k := range cuda.Kernels {
		for _, f := range cuda.Flavours {
			for _, e := range cuda.ElemTypes {
				if n := k.Name(f, e); !seen[n] {
					seen[n] = true
					ks = append(ks, cudacpp.Kernel{Name: n, File: k.File + ".cu"})
				}
			}
		}
	}
	return cudacpp.Config{Sources: srcs, Preincludes: []string{"golf_prelude.cuh"}, Kernels: ks}, nil
}

var build = sync.OnceValues(func() (cudacpp.Library, error) {
	cfg, err := Config()
	if err != nil {
		return cudacpp.Library{}, err
	}
	return cudacpp.Build(cfg)
})

// Build builds the stand-in once per process (cudacpp's cache keeps it
// between runs).
func Build() (cudacpp.Library, error) { return build() }

// Use builds the stand-in and points GOLF_CUDA_LIB_PATH at it, so that
// golf's loader (cuda.LoadDriver, cuda.LoadCublasLt, once per process)
// opens it; call it in TestMain, before anything loads the driver. NVRTC is
// still found where it is installed.
func Use() (cudacpp.Library, error) {
	lib, err := Build()
	if err != nil {
		return lib, err
	}
	return lib, os.Setenv(cuda.EnvLibPath, lib.Dir)
}

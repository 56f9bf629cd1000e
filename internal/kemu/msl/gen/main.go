// Command gen writes the emulator's kernel registry, zz_kernels_gen.cc, from
// the MSL sources (see package kgen). It runs from internal/kemu/msl:
//
//	go generate ./internal/kemu/msl
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/golf-ml/golf/internal/kemu/msl/internal/kgen"
)

func main() {
	emuDir := flag.String("emu", ".", "the emulator package directory (self-test kernels, include/)")
	shaderDir := flag.String("shaders", "../../../shaders", "the directory of the library's .metal files and golf_args.h")
	out := flag.String("out", "zz_kernels_gen.cc", "the file to write")
	flag.Parse()
	cfg, err := kgen.Load(*emuDir, *shaderDir)
	if err == nil {
		var src []byte
		if src, err = kgen.Generate(cfg); err == nil {
			err = os.WriteFile(*out, src, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

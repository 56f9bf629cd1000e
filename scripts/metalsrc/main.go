// Command metalsrc writes golf's shader library as the Metal runtime
// compiles it, for Apple's offline compiler to check (the macOS workflow
// runs `xcrun metal -std=metal3.1 -c` on each file):
//
//	golf.metal           every .metal file joined (shaders.Source)
//	golf_simd.metal      what an Apple7+ GPU compiles (metal.FlavourSource)
//	golf_portable.metal  what a GPU without simdgroup matrices compiles
//	probe_*.metal        each device probe (shaders/probe), as the runtime
//	                     compiles it at start-up, every instantiation kept
//
// Usage: go run ./scripts/metalsrc -o DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/golf-ml/golf/metal"
	"github.com/golf-ml/golf/shaders"
)

func main() {
	dir := flag.String("o", "", "directory to write the sources into (created if missing)")
	flag.Parse()
	if *dir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: metalsrc -o DIR")
		os.Exit(2)
	}
	if err := write(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "metalsrc:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	src, err := shaders.Source()
	if err != nil {
		return err
	}
	files := map[string]string{"golf.metal": src}
	for _, f := range []metal.Flavour{metal.Simd, metal.Portable} {
		s, err := metal.FlavourSource(src, f)
		if err != nil {
			return err
		}
		files[fmt.Sprintf("golf_%s.metal", f)] = s
	}
	for _, name := range shaders.ProbeFiles() {
		s, err := shaders.Probe(name)
		if err != nil {
			return err
		}
		files[filepath.Base(name)] = s
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			return err
		}
	}
	return nil
}

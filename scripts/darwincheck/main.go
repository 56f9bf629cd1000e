// Command darwincheck type-checks golf as it would be built for
// darwin/arm64 with cgo enabled, on any host (CI runs it on Linux):
//
//	go run ./scripts/darwincheck [-test] [packages]
//
// With no packages it checks ./... plus darwinkit's macos/metal and objc
// packages, which golf's Metal backend builds on. Named packages replace
// that default, e.g.
//
//	go run ./scripts/darwincheck ./... github.com/progrium/darwinkit/macos/metal
//
// Every package in the import graph, the standard library included, is
// type-checked from source with go/types after `go list` has selected
// files with GOOS=darwin GOARCH=arm64 CGO_ENABLED=1. -test adds the
// _test.go files of the named packages (a package from another module
// also needs go.sum entries for its test dependencies). Problems are
// printed as file:line:col: message and the exit status is 1; on success
// one line, "darwincheck: N packages type-checked for darwin/arm64", is
// printed. As with go build, ./... passes over packages with no files for
// darwin, but naming such a package, or a pattern matching nothing, is an
// error. Exit status 2 means the check could not run (go list failed).
//
// Files importing "C" are checked with go/types' FakeImportC: the Go code
// is checked, but not the cgo preamble, the C and Objective-C declarations
// it refers to, the types of C.name expressions, .m files or linking. A
// macOS runner building and testing the code covers those. See package
// github.com/golf-ml/golf/internal/darwincheck for details.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/golf-ml/golf/internal/darwincheck"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and output streams; it returns
// the exit status: 0 when everything type-checks, 1 when problems were
// found, 2 when the check could not run.
func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("darwincheck", flag.ContinueOnError)
	flags.SetOutput(stderr)
	tests := flags.Bool("test", false, "also check the _test.go files of the named packages")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: darwincheck [-test] [packages]")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	patterns := flags.Args()
	if len(patterns) == 0 {
		patterns = darwincheck.DefaultPatterns
	}
	res, err := darwincheck.Run(".", patterns, darwincheck.Options{Tests: *tests})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	for _, e := range res.Errors {
		fmt.Fprintln(stderr, e)
	}
	if len(res.Errors) > 0 {
		fmt.Fprintf(stderr, "darwincheck: %d errors for %s/%s\n", len(res.Errors), darwincheck.GOOS, darwincheck.GOARCH)
		return 1
	}
	fmt.Fprintf(stdout, "darwincheck: %d packages type-checked for %s/%s\n", len(res.Packages), darwincheck.GOOS, darwincheck.GOARCH)
	return 0
}

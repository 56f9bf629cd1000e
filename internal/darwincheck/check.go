// Package darwincheck type-checks Go packages as the go command would build
// them for darwin/arm64 with cgo enabled, on any host: golf's Metal backend
// (built only under `darwin && cgo`) and github.com/progrium/darwinkit are
// checked on Linux, where no Mac and no darwin toolchain exist.
//
// How it works:
//
//   - File lists and the import graph come from `go list -e -deps -json`
//     run with GOOS=darwin GOARCH=arm64 CGO_ENABLED=1, so build constraints
//     select exactly the files a darwin/arm64 cgo build compiles; files
//     that import "C" are listed as CgoFiles and checked with the rest.
//   - Every package in that graph, the standard library included, is
//     type-checked from source with go/types, in dependency order (packages
//     whose imports are done are checked in parallel), each against the
//     *types.Package values of the packages it imports. There is no darwin
//     export data on a Linux host, and Linux export data would be wrong
//     (syscall, os and runtime differ), so source is the only faithful
//     input. A package is checked once per run however many import it;
//     golf with darwinkit (about 330 packages) takes a few seconds.
//   - Sizes are gc's for arm64, and each package's language version is its
//     module's go directive, as the compiler's -lang flag would be.
//   - Files importing "C" are checked with types.Config.FakeImportC: the
//     "C" package is empty and every C.name is accepted without a type, so
//     cgo is never run (it would need darwin's C headers and a C compiler
//     for darwin).
//
// Limits: FakeImportC checks only the Go side of cgo files. The cgo
// preamble, the C and Objective-C declarations it names, the types of
// C.name expressions (and so of the Go expressions built from them),
// .m/.c/.h files and linking are not checked; building and testing on a
// macOS runner covers those.
package darwincheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// The target platform.
const (
	GOOS   = "darwin"
	GOARCH = "arm64"
)

// DefaultPatterns are the packages checked when none are named: the
// current module, and darwinkit's Objective-C runtime and Metal bindings,
// which golf's Metal backend will import.
var DefaultPatterns = []string{
	"./...",
	"github.com/progrium/darwinkit/macos/metal",
	"github.com/progrium/darwinkit/objc",
}

// Options adjusts Run.
type Options struct {
	// Tests also checks the _test.go files of the packages matching the
	// patterns (their test variants, as `go list -test` lists them).
	Tests bool
}

// Result is the outcome of a run.
type Result struct {
	// Packages lists the import paths type-checked, in dependency order.
	Packages []string
	// Errors holds every problem found: go list errors (*ListError),
	// syntax errors (scanner.Error) and type errors (types.Error), each
	// formatted as file:line:col: message, in dependency order.
	Errors []error
}

// ListError is a problem go list reported: for a package (a missing
// import, an import cycle, build constraints excluding every file, ...),
// which is then not type-checked, nor is any package importing it; or a
// warning such as a pattern matching no packages (ImportPath "").
type ListError struct {
	ImportPath string
	Pos        string // file:line:col, or "" when go list gave none
	Err        string
}

func (e *ListError) Error() string {
	switch {
	case e.Pos != "":
		return e.Pos + ": " + e.Err
	case e.ImportPath != "":
		return e.ImportPath + ": " + e.Err
	}
	return e.Err
}

// Check type-checks the packages matching patterns, as go list resolves
// them in dir, for darwin/arm64 with cgo. It returns the problems found in
// those packages and their dependencies; err is set only when the check
// could not run (go list failed).
func Check(dir string, patterns []string) ([]error, error) {
	res, err := Run(dir, patterns, Options{})
	if err != nil {
		return nil, err
	}
	return res.Errors, nil
}

// Run is Check with options, returning also the packages checked.
func Run(dir string, patterns []string, opts Options) (*Result, error) {
	if len(patterns) == 0 {
		return nil, errors.New("darwincheck: no package patterns")
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("darwincheck: %v", err)
	}
	pkgs, unmatched, err := goList(absDir, patterns, opts.Tests)
	if err != nil {
		return nil, fmt.Errorf("darwincheck: %v", err)
	}
	c := &checker{
		dir:   absDir,
		fset:  token.NewFileSet(),
		sizes: types.SizesFor("gc", GOARCH),
		units: make(map[string]*unit, len(pkgs)),
	}
	res := c.run(pkgs)
	// A pattern that matched nothing is most likely a typo; it must not
	// pass as a clean check.
	for _, pat := range unmatched {
		res.Errors = append(res.Errors, &ListError{Err: fmt.Sprintf("%q matched no packages", pat)})
	}
	return res, nil
}

// unit is one listed package on its way through the checker.
type unit struct {
	p       *listedPackage
	skip    bool          // not type-checked: go list found an error here or below
	deps    []*unit       // the units it imports
	done    chan struct{} // closed once types is final
	types   *types.Package
	errs    []error
	checked bool
}

type checker struct {
	dir   string
	fset  *token.FileSet
	sizes types.Sizes
	units map[string]*unit // by resolved import path
}

func (c *checker) run(pkgs []*listedPackage) *Result {
	var order []*unit
	for _, p := range pkgs {
		if p.ImportPath == "unsafe" || isTestMain(p) {
			continue
		}
		u := &unit{p: p, done: make(chan struct{}), skip: p.Incomplete}
		if e := p.Error; e != nil {
			msg := strings.TrimSpace(e.Err)
			if e.Pos == "" && len(e.ImportStack) > 1 {
				msg += " (" + strings.Join(e.ImportStack, " -> ") + ")"
			}
			u.errs = append(u.errs, &ListError{ImportPath: p.ImportPath, Pos: c.display(e.Pos), Err: msg})
		}
		for _, imp := range p.Imports {
			if imp == "C" || imp == "unsafe" {
				continue
			}
			// go list -deps prints a complete package after all it imports,
			// so deps only point backwards and waiting on them cannot block.
			d, ok := c.units[imp]
			if !ok {
				if !u.skip {
					u.skip = true
					u.errs = append(u.errs, &ListError{ImportPath: p.ImportPath, Err: "import " + imp + " not listed before it"})
				}
				continue
			}
			u.deps = append(u.deps, d)
			u.skip = u.skip || d.skip
		}
		c.units[p.ImportPath] = u
		order = append(order, u)
	}

	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, u := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(u.done)
			if u.skip {
				return
			}
			sem <- struct{}{}
			files := c.parse(u)
			<-sem
			for _, d := range u.deps {
				<-d.done
			}
			sem <- struct{}{}
			c.typeCheck(u, files)
			<-sem
		}()
	}
	wg.Wait()

	res := new(Result)
	seen := make(map[string]bool) // test variants recheck their package's files
	for _, u := range order {
		if u.checked {
			res.Packages = append(res.Packages, u.p.ImportPath)
		}
		for _, err := range u.errs {
			if s := err.Error(); !seen[s] {
				seen[s] = true
				res.Errors = append(res.Errors, err)
			}
		}
	}
	return res
}

// isTestMain reports whether p is the generated main package of a test
// binary, whose only file lives in the build cache.
func isTestMain(p *listedPackage) bool {
	return p.Name == "main" && p.ForTest == "" && strings.HasSuffix(p.ImportPath, ".test")
}

// parse reads and parses u's Go and cgo files, recording syntax errors.
func (c *checker) parse(u *unit) []*ast.File {
	names := append(append([]string(nil), u.p.GoFiles...), u.p.CgoFiles...)
	files := make([]*ast.File, 0, len(names))
	for _, name := range names {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(u.p.Dir, name)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			u.errs = append(u.errs, fmt.Errorf("%s: %v", c.display(path), err))
			continue
		}
		f, err := parser.ParseFile(c.fset, c.display(path), src, parser.SkipObjectResolution)
		var list scanner.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				u.errs = append(u.errs, *e)
			}
		} else if err != nil {
			u.errs = append(u.errs, err)
		}
		if f != nil {
			files = append(files, f)
		}
	}
	return files
}

// typeCheck runs go/types over u's files; every import is already done.
func (c *checker) typeCheck(u *unit, files []*ast.File) {
	p := u.p
	conf := types.Config{
		Importer:    importerFunc(func(path string) (*types.Package, error) { return c.importFor(p, path) }),
		Sizes:       c.sizes,
		FakeImportC: true,
		Error:       func(err error) { u.errs = append(u.errs, err) },
	}
	if p.Module != nil && p.Module.GoVersion != "" {
		conf.GoVersion = "go" + p.Module.GoVersion
	}
	// A test variant, "path [path.test]", is still package path to the
	// code in it and in messages.
	path, _, _ := strings.Cut(p.ImportPath, " [")
	// Errors reach conf.Error; the returned one is their first.
	u.types, _ = conf.Check(path, c.fset, files, nil)
	u.checked = true
}

// importFor resolves an import path written in p's source to the checked
// package go list resolved it to (vendored, or a test variant).
func (c *checker) importFor(p *listedPackage, path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if r, ok := p.ImportMap[path]; ok {
		path = r
	}
	d, ok := c.units[path]
	if !ok || d.types == nil {
		return nil, fmt.Errorf("package %s not checked", path)
	}
	return d.types, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// display shortens paths under the checked directory to ./rel, as the go
// command prints them; others (GOROOT, the module cache) stay absolute.
func (c *checker) display(path string) string {
	if !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(c.dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return "." + string(filepath.Separator) + rel
}

//go:build !darwin

package metal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/kemu/msl/strict"
)

// TestObjCShim compiles the Objective-C shim of runtime_darwin.go (its cgo
// preamble) on a non-Apple host with clang and GNU libobjc, against the
// stand-in Foundation and the logging fake Metal of testdata/darwinshim,
// and runs testdata/darwinshim/main.m: the encoding of the dispatch words,
// batching into command buffers, the committed-buffer limit, failure
// reports, and reference counting (no leak, no command buffer released
// before it completed, no autorelease outside a pool). It reports "not
// supported" where clang or libobjc is missing.
func TestObjCShim(t *testing.T) {
	clang := ""
	for _, name := range []string{"clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"} {
		if p, err := exec.LookPath(name); err == nil {
			clang = p
			break
		}
	}
	objcInclude, objcLib := gccFile("include"), gccFile("libobjc.so")
	skip := t.Skip
	if os.Getenv(strict.EnvRequireClang) == "1" { // .ci/run installs both
		skip = t.Fatal
	}
	if clang == "" || objcInclude == "" || objcLib == "" {
		skip("not supported: needs clang and GNU libobjc (apt-get install clang libobjc-12-dev)")
	}
	if _, err := os.Stat(filepath.Join(objcInclude, "objc", "runtime.h")); err != nil {
		skip("not supported: GNU libobjc headers missing (apt-get install libobjc-12-dev)")
	}

	shim, err := cgoPreamble("runtime_darwin.go")
	require.NoError(t, err, "the cgo preamble of runtime_darwin.go")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "darwinshim"))))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shim.m"), []byte(shim), 0o644))
	bin := filepath.Join(dir, "harness")
	build := exec.Command(clang, "-g", "-x", "objective-c", "-fobjc-runtime=gcc",
		"-fconstant-string-class=FakeConstString", "-Wall", "-Wno-unused-function",
		"-Wno-objc-method-access", "-I", dir, "-I", objcInclude,
		filepath.Join(dir, "fake.m"), filepath.Join(dir, "main.m"),
		"-x", "none", objcLib, "-Wl,-rpath,"+filepath.Dir(objcLib), "-o", bin)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "compiling the shim:\n%s", out)
	if len(out) > 0 {
		t.Logf("clang:\n%s", out)
	}
	out, err = exec.Command(bin).CombinedOutput()
	require.NoError(t, err, "shim harness:\n%s", out)
	require.Contains(t, string(out), "shim harness: all checks passed", "shim harness output")
}

// gccFile is `gcc -print-file-name=name` when gcc knows the file, else "".
func gccFile(name string) string {
	out, err := exec.Command("gcc", "-print-file-name="+name).Output()
	p := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(p) {
		return ""
	}
	return p
}

// cgoPreamble returns the comment above file's import "C", without its
// #cgo lines.
func cgoPreamble(file string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments|parser.ImportsOnly)
	if err != nil {
		return "", err
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		for _, s := range g.Specs {
			if p, _ := strconv.Unquote(s.(*ast.ImportSpec).Path.Value); p == "C" && g.Doc != nil {
				var b strings.Builder
				for _, line := range strings.Split(g.Doc.Text(), "\n") {
					if !strings.HasPrefix(strings.TrimSpace(line), "#cgo") {
						b.WriteString(line + "\n")
					}
				}
				return b.String(), nil
			}
		}
	}
	return "", os.ErrNotExist
}

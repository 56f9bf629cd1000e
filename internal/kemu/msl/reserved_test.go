package msl

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cxxCompiler returns the C++ compiler cgo uses (go env CXX, else c++).
func cxxCompiler(t *testing.T) string {
	t.Helper()
	name := "c++"
	if out, err := exec.Command("go", "env", "CXX").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		name = strings.Fields(string(out))[0]
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("not supported: no C++ compiler %q on PATH", name)
	}
	return path
}

// compileShim compiles one .metal file as C++ against the emulator's
// metal_stdlib, with the flags of the emulator build, and returns the
// compiler's output and error.
func compileShim(t *testing.T, cxx, file string) (string, error) {
	t.Helper()
	cmd := exec.Command(cxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-Wno-attributes",
		"-Wno-unknown-pragmas", "-Wdouble-promotion", "-I", "include", "-I", filepath.Join("..", "..", "..", "shaders"),
		"-x", "c++", file)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestReservedTypeNames: half and bfloat are MSL types, never identifiers.
// A shader naming a parameter or variable half (as qk_norm_rope.metal once
// did, which would have stopped the whole library from compiling on a Mac)
// must fail to compile against the emulator's shim too, while every use of
// them as types compiles.
func TestReservedTypeNames(t *testing.T) {
	cxx := cxxCompiler(t)
	if out, err := compileShim(t, cxx, "testdata/reserved/ok.metal"); err != nil {
		t.Fatalf("ok.metal (half and bfloat as types) does not compile: %v\n%s", err, out)
	}
	for _, name := range []string{"param_half.metal", "local_half.metal", "local_bfloat.metal"} {
		out, err := compileShim(t, cxx, filepath.Join("testdata", "reserved", name))
		if err == nil {
			t.Errorf("%s compiled: a variable named half or bfloat must be an error", name)
			continue
		}
		if !strings.Contains(out, name) || !strings.Contains(out, "error") {
			t.Errorf("%s: the compiler's message does not point at the fixture:\n%s", name, out)
		}
	}
}

// TestNoWerrorInUserBuild: a user's `go build` compiles the emulator's C++
// without -Werror (a warning a new compiler adds must not break their
// build); the golf_werror tag, which CI builds with, turns it on.
func TestNoWerrorInUserBuild(t *testing.T) {
	flags := func(tags ...string) []string {
		ctx := build.Default
		ctx.CgoEnabled = true
		ctx.BuildTags = tags
		pkg, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		return append(append([]string(nil), pkg.CgoCXXFLAGS...), pkg.CgoCFLAGS...)
	}
	if f := flags(); slices.Contains(f, "-Werror") {
		t.Errorf("the default build's cgo flags %v contain -Werror", f)
	}
	if f := flags("golf_werror"); !slices.Contains(f, "-Werror") {
		t.Errorf("with -tags golf_werror the cgo flags %v lack -Werror", f)
	}
	for _, goos := range []string{"darwin", "linux"} {
		ctx := build.Default
		ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, "arm64", true
		pkg, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(pkg.CgoCXXFLAGS, "-Werror") {
			t.Errorf("GOOS=%s: cgo flags %v contain -Werror", goos, pkg.CgoCXXFLAGS)
		}
	}
}

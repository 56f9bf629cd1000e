package emu

import (
	"os/exec"
	"path/filepath"
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
		"-Wno-unknown-pragmas", "-Wdouble-promotion", "-I", "include", "-I", filepath.Join("..", "..", "shaders"),
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

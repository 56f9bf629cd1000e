//go:build cgo

package msl

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	out, err := compileShim(t, cxx, "testdata/reserved/ok.metal")
	require.NoError(t, err, "ok.metal (half and bfloat as types) does not compile:\n%s", out)
	for _, name := range []string{"param_half.metal", "local_half.metal", "local_bfloat.metal"} {
		out, err := compileShim(t, cxx, filepath.Join("testdata", "reserved", name))
		if !assert.Error(t, err, "%s compiled: a variable named half or bfloat must be an error", name) {
			continue
		}
		assert.Contains(t, out, name, "%s: the compiler's message does not point at the fixture", name)
		assert.Contains(t, out, "error", "%s: the compiler's message does not say error", name)
	}
}

// TestConversionsAndSimdTypes: what Apple's compiler rejects about types
// fails to compile against the emulator's shim too: an implicit conversion
// to bfloat (from float or an integer, in an initialisation, a return or a
// store of a template instantiated for bfloat), and a SIMD-group function
// on a type Metal does not declare it for (bfloat); the explicit forms and
// the types Metal has compile.
func TestConversionsAndSimdTypes(t *testing.T) {
	cxx := cxxCompiler(t)
	out, err := compileShim(t, cxx, "testdata/reserved/conversions_ok.metal")
	require.NoError(t, err, "conversions_ok.metal does not compile:\n%s", out)
	for name, want := range map[string]string{
		"bfloat_assign.metal":  "conversion from",
		"bfloat_literal.metal": "conversion from",
		"bfloat_return.metal":  "convert",
		"bfloat_store.metal":   "operator=",
		"simd_bfloat.metal":    "simd_shuffle_down: T must be",
	} {
		out, err := compileShim(t, cxx, filepath.Join("testdata", "reserved", name))
		if !assert.Error(t, err, "%s compiled: Apple's compiler rejects it", name) {
			continue
		}
		assert.Contains(t, out, name, "%s: the compiler's message does not point at the fixture", name)
		assert.Contains(t, out, want, "%s: the compiler's message", name)
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
		require.NoError(t, err)
		return append(append([]string(nil), pkg.CgoCXXFLAGS...), pkg.CgoCFLAGS...)
	}
	assert.NotContains(t, flags(), "-Werror", "the default build's cgo flags")
	assert.Contains(t, flags("golf_werror"), "-Werror", "the cgo flags with -tags golf_werror")
	for _, goos := range []string{"darwin", "linux"} {
		ctx := build.Default
		ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, "arm64", true
		pkg, err := ctx.ImportDir(".", 0)
		require.NoError(t, err, "GOOS=%s", goos)
		assert.NotContains(t, pkg.CgoCXXFLAGS, "-Werror", "GOOS=%s: cgo C++ flags", goos)
	}
}

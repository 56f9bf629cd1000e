package shaders

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kernelDecl matches the name of a kernel function: `[[kernel]] void name(`.
var kernelDecl = regexp.MustCompile(`\[\[kernel\]\]\s+void\s+(\w+)\s*\(`)

// TestSourceHoldsEveryFile checks the embedded library source: every
// .metal file's lines appear in it in order (include lines aside), every
// kernel function is declared once, no quoted include is left, and the
// system include survives.
func TestSourceHoldsEveryFile(t *testing.T) {
	src, err := Source()
	require.NoError(t, err)
	names, err := fs.Glob(FS(), "*.metal")
	require.NoError(t, err)
	require.NotEmpty(t, names, "embedded .metal files")
	// Plain checks where assert.Contains would print the whole source.
	for _, name := range names {
		b, err := fs.ReadFile(FS(), name)
		require.NoError(t, err)
		text := string(b)
		start := strings.Index(src, "#line 1 \""+name+"\"\n")
		if start < 0 {
			assert.Failf(t, "no #line marker in the source", "%s", name)
			continue
		}
		rest := src[start:]
		for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if quotedInclude.MatchString(line) {
				continue
			}
			k := strings.Index(rest, line+"\n")
			if k < 0 {
				assert.Failf(t, "line missing from the source (or out of order)", "%s:%d: %q", name, i+1, line)
				break
			}
			rest = rest[k+len(line)+1:]
		}
		kernels := kernelDecl.FindAllStringSubmatch(text, -1)
		for _, m := range kernels {
			assert.Equal(t, 1, strings.Count(src, m[0]), "%s: declarations of kernel %s in the source", name, m[1])
		}
		for _, line := range strings.Split(text, "\n") {
			if m := quotedInclude.FindStringSubmatch(line); m != nil {
				assert.Equal(t, 1, strings.Count(src, "#line 1 \""+m[1]+"\"\n"), "%s: times %s is inlined", name, m[1])
			}
		}
		if strings.Contains(text, "<metal_stdlib>") {
			assert.True(t, strings.Contains(src, "#include <metal_stdlib>"), "%s: #include <metal_stdlib> dropped", name)
		}
	}
	for i, line := range strings.Split(src, "\n") {
		assert.False(t, quotedInclude.MatchString(line), "source line %d: unresolved include %q", i+1, line)
	}
}

// TestJoinInlines checks the include expansion on a small tree: nesting,
// once-only inclusion, a cycle, #line bookkeeping and system includes.
func TestJoinInlines(t *testing.T) {
	fsys := fstest.MapFS{
		"a.metal": {Data: []byte("#include <metal_stdlib>\n#include \"x.h\"\nA1\n#  include \"y.h\"\nA2")},
		"b.metal": {Data: []byte("B1\n#include \"x.h\"\nB2\n")},
		"x.h":     {Data: []byte("X1\n#include \"y.h\"\nX2\n")},
		"y.h":     {Data: []byte("Y1\n#include \"x.h\"\n")},
		"z.h":     {Data: []byte("Z never included\n")},
	}
	got, err := Join(fsys)
	require.NoError(t, err)
	want := strings.Join([]string{
		`#line 1 "a.metal"`,
		`#include <metal_stdlib>`,
		`// #include "x.h" (inlined)`,
		`#line 1 "x.h"`,
		`X1`,
		`// #include "y.h" (inlined)`,
		`#line 1 "y.h"`,
		`Y1`,
		`// #include "x.h" (inlined)`, // already open: not expanded again
		`#line 3 "y.h"`,
		`#line 3 "x.h"`,
		`X2`,
		`#line 3 "a.metal"`,
		`A1`,
		`// #  include "y.h" (inlined)`,
		`#line 5 "a.metal"`,
		`A2`,
		`#line 1 "b.metal"`,
		`B1`,
		`// #include "x.h" (inlined)`,
		`#line 3 "b.metal"`,
		`B2`,
		``,
	}, "\n")
	assert.Equal(t, want, got, "Join")
}

func TestJoinErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"missing include", fstest.MapFS{"a.metal": {Data: []byte("ok\n#include \"nope.h\"\n")}}, `a.metal:2: include "nope.h": no such file`},
		{"outside", fstest.MapFS{"a.metal": {Data: []byte("#include \"../up.h\"\n")}}, `a.metal:1: include "../up.h" is outside`},
		{"no files", fstest.MapFS{"x.h": {Data: []byte("x\n")}}, "no .metal files"},
	} {
		_, err := Join(tc.fsys)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}

// TestSourceCompilesAsCxx compiles the joined translation unit with the host
// C++ compiler against the emulator's metal_stdlib (internal/kemu/msl/include), the
// way Metal compiles it: one unit, no per-file namespaces. It catches what
// compiling each file alone cannot, such as two files defining the same
// helper or macro, and a broken inlining.
func TestSourceCompilesAsCxx(t *testing.T) {
	cxx, err := exec.LookPath("c++")
	if err != nil {
		t.Skip("not supported: no C++ compiler (c++) on PATH")
	}
	include, err := filepath.Abs(filepath.Join("..", "internal", "kemu", "msl", "include"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(include, "metal_stdlib")); err != nil {
		t.Skipf("not supported: no emulator metal_stdlib: %v", err)
	}
	src, err := Source()
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "library.metal")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	// Metal attributes ([[kernel]], [[buffer(n)]], ...) mean nothing to
	// the host compiler.
	cmd := exec.Command(cxx, "-std=c++17", "-fsyntax-only", "-Wno-attributes", "-I", include, "-x", "c++", file)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the joined library does not compile:\n%s", out)
}

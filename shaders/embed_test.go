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
)

// kernelDecl matches the name of a kernel function: `[[kernel]] void name(`.
var kernelDecl = regexp.MustCompile(`\[\[kernel\]\]\s+void\s+(\w+)\s*\(`)

// TestSourceHoldsEveryFile checks the embedded library source: every
// .metal file's lines appear in it in order (include lines aside), every
// kernel function is declared once, no quoted include is left, and the
// system include survives.
func TestSourceHoldsEveryFile(t *testing.T) {
	src, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(FS(), "*.metal")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no .metal files embedded")
	}
	for _, name := range names {
		b, err := fs.ReadFile(FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		start := strings.Index(src, "#line 1 \""+name+"\"\n")
		if start < 0 {
			t.Errorf("%s: no #line marker in the source", name)
			continue
		}
		rest := src[start:]
		for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if quotedInclude.MatchString(line) {
				continue
			}
			k := strings.Index(rest, line+"\n")
			if k < 0 {
				t.Errorf("%s:%d: line missing from the source (or out of order): %q", name, i+1, line)
				break
			}
			rest = rest[k+len(line)+1:]
		}
		kernels := kernelDecl.FindAllStringSubmatch(text, -1)
		for _, m := range kernels {
			if c := strings.Count(src, m[0]); c != 1 {
				t.Errorf("%s: kernel %s declared %d times in the source", name, m[1], c)
			}
		}
		for _, line := range strings.Split(text, "\n") {
			if m := quotedInclude.FindStringSubmatch(line); m != nil {
				if c := strings.Count(src, "#line 1 \""+m[1]+"\"\n"); c != 1 {
					t.Errorf("%s: %s inlined %d times, want once", name, m[1], c)
				}
			}
		}
		if strings.Contains(text, "<metal_stdlib>") && !strings.Contains(src, "#include <metal_stdlib>") {
			t.Errorf("%s: #include <metal_stdlib> dropped", name)
		}
	}
	for i, line := range strings.Split(src, "\n") {
		if quotedInclude.MatchString(line) {
			t.Errorf("source line %d: unresolved include %q", i+1, line)
		}
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
	if err != nil {
		t.Fatal(err)
	}
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
	if got != want {
		t.Errorf("Join:\n%s\nwant:\n%s", got, want)
	}
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
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// TestSourceCompilesAsCxx compiles the joined translation unit with the host
// C++ compiler against the emulator's metal_stdlib (metal/emu/include), the
// way Metal compiles it: one unit, no per-file namespaces. It catches what
// compiling each file alone cannot, such as two files defining the same
// helper or macro, and a broken inlining.
func TestSourceCompilesAsCxx(t *testing.T) {
	cxx, err := exec.LookPath("c++")
	if err != nil {
		t.Skip("not supported: no C++ compiler (c++) on PATH")
	}
	include, err := filepath.Abs(filepath.Join("..", "metal", "emu", "include"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(include, "metal_stdlib")); err != nil {
		t.Skipf("not supported: no emulator metal_stdlib: %v", err)
	}
	src, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "library.metal")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// Metal attributes ([[kernel]], [[buffer(n)]], ...) mean nothing to
	// the host compiler.
	cmd := exec.Command(cxx, "-std=c++17", "-fsyntax-only", "-Wno-attributes", "-I", include, "-x", "c++", file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the joined library does not compile: %v\n%s", err, out)
	}
}

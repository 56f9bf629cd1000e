package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/golf-ml/golf/internal/darwincheck"
)

// The fixture module under testdata: ok type-checks for darwin/arm64 with
// cgo only, bad is the same package with type errors marked in place.
const fixturePkg = "example.com/darwinfixture"

func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	// The fixture is its own module; a go.work above it would hide it.
	t.Setenv("GOWORK", "off")
	return dir
}

// want is an error a fixture line expects: its file (base name), line
// and a regexp for the message.
type want struct {
	file string
	line int
	msg  *regexp.Regexp
}

var wantComment = regexp.MustCompile(`// want(:test)? "(.*)"\s*$`)

// readWants collects the want comments of the Go files in dir; those
// marked want:test only when tests is set.
func readWants(t *testing.T, dir string, tests bool) []want {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var wants []want
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(src))
		for line := 1; sc.Scan(); line++ {
			m := wantComment.FindStringSubmatch(sc.Text())
			if m == nil || (m[1] != "" && !tests) {
				continue
			}
			wants = append(wants, want{filepath.Base(name), line, regexp.MustCompile(m[2])})
		}
	}
	return wants
}

// checkErrors matches errs against wants one to one: each must be a type
// error at the wanted file and line whose message matches, printed as
// ./file:line:col: message.
func checkErrors(t *testing.T, errs []error, wants []want) {
	t.Helper()
	left := slices.Clone(wants)
	for _, err := range errs {
		var te types.Error
		if !errors.As(err, &te) {
			t.Errorf("unexpected non-type error: %v", err)
			continue
		}
		pos := te.Fset.Position(te.Pos)
		i := slices.IndexFunc(left, func(w want) bool {
			return w.file == filepath.Base(pos.Filename) && w.line == pos.Line && w.msg.MatchString(te.Msg)
		})
		if i < 0 {
			t.Errorf("unexpected error: %v", err)
			continue
		}
		if prefix := fmt.Sprintf("./%s:%d:", left[i].file, left[i].line); !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("error printed as %q, want it to start with %q", err, prefix)
		}
		left = slices.Delete(left, i, i+1)
	}
	for _, w := range left {
		t.Errorf("missing error at %s:%d matching %q", w.file, w.line, w.msg)
	}
}

func TestFixtureOK(t *testing.T) {
	dir := fixtureDir(t, "ok")
	if w := readWants(t, dir, true); len(w) != 0 {
		t.Fatalf("ok fixture has %d want comments", len(w))
	}
	res, err := darwincheck.Run(dir, []string{"./..."}, darwincheck.Options{Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range res.Errors {
		t.Errorf("unexpected error: %v", err)
	}
	// The package, its test variant, and the darwin standard library
	// (runtime/cgo comes with import "C") were all checked.
	for _, p := range []string{fixturePkg, fixturePkg + " [" + fixturePkg + ".test]", "syscall", "runtime/cgo", "testing"} {
		if !slices.Contains(res.Packages, p) {
			t.Errorf("%s not checked; checked %v", p, res.Packages)
		}
	}
}

func TestFixtureBad(t *testing.T) {
	dir := fixtureDir(t, "bad")
	for _, tests := range []bool{false, true} {
		t.Run(fmt.Sprintf("tests=%v", tests), func(t *testing.T) {
			wants := readWants(t, dir, tests)
			if len(wants) < 3 {
				t.Fatalf("bad fixture has only %d want comments", len(wants))
			}
			res, err := darwincheck.Run(dir, []string{"./..."}, darwincheck.Options{Tests: tests})
			if err != nil {
				t.Fatal(err)
			}
			checkErrors(t, res.Errors, wants)
		})
	}
}

// TestCheck exercises the plain entry point on both fixtures.
func TestCheck(t *testing.T) {
	errs, err := darwincheck.Check(fixtureDir(t, "ok"), []string{"./..."})
	if err != nil || len(errs) != 0 {
		t.Errorf("Check(ok) = %v, %v; want no errors", errs, err)
	}
	dir := fixtureDir(t, "bad")
	errs, err = darwincheck.Check(dir, []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	checkErrors(t, errs, readWants(t, dir, false))
}

// TestCommand runs the command as CI does, in each fixture directory.
func TestCommand(t *testing.T) {
	ok, bad := fixtureDir(t, "ok"), fixtureDir(t, "bad")
	t.Chdir(ok)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"./..."}, &stdout, &stderr); code != 0 {
		t.Fatalf("ok: exit status %d, stderr:\n%s", code, &stderr)
	}
	if !regexp.MustCompile(`^darwincheck: [1-9][0-9]* packages type-checked for darwin/arm64\n$`).Match(stdout.Bytes()) || stderr.Len() != 0 {
		t.Errorf("ok: stdout %q, stderr %q", &stdout, &stderr)
	}

	t.Chdir(bad)
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"./..."}, &stdout, &stderr); code != 1 {
		t.Fatalf("bad: exit status %d, want 1; stderr:\n%s", code, &stderr)
	}
	if stdout.Len() != 0 {
		t.Errorf("bad: stdout %q, want nothing", &stdout)
	}
	for _, line := range []string{
		`./platform.go:13:17: cannot use "arm64" (untyped string constant) as int value in variable declaration`,
		"darwincheck: 3 errors for darwin/arm64",
	} {
		if !strings.Contains(stderr.String(), line+"\n") {
			t.Errorf("bad: stderr lacks %q:\n%s", line, &stderr)
		}
	}
}

// TestListErrors checks that what go list cannot resolve for darwin is an
// error, not a silent pass: a missing package, a package with no files for
// darwin named explicitly, and a pattern matching no package. (./...
// skips that package silently, as go build does: TestFixtureOK.)
func TestListErrors(t *testing.T) {
	const missing = fixturePkg + "/nosuch"
	res, err := darwincheck.Run(fixtureDir(t, "ok"), []string{missing, "./linuxonly", "./linuxonly/..."}, darwincheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Packages) != 0 {
		t.Errorf("checked %v, want nothing", res.Packages)
	}
	want := map[string]string{
		missing:                   "",
		fixturePkg + "/linuxonly": "build constraints exclude all Go files",
		"":                        `"./linuxonly/..." matched no packages`,
	}
	for _, err := range res.Errors {
		var le *darwincheck.ListError
		if !errors.As(err, &le) {
			t.Errorf("unexpected error %v", err)
			continue
		}
		msg, ok := want[le.ImportPath]
		if !ok || !strings.Contains(le.Err, msg) {
			t.Errorf("unexpected error %v", err)
			continue
		}
		delete(want, le.ImportPath)
	}
	for path, msg := range want {
		t.Errorf("no ListError for %q containing %q", path, msg)
	}
}

// TestDarwinkit checks this command's own package for darwin: through
// deps_darwin.go that brings in darwinkit's Metal and Objective-C
// packages, which must type-check.
func TestDarwinkit(t *testing.T) {
	res, err := darwincheck.Run(".", []string{"."}, darwincheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range res.Errors {
		t.Errorf("unexpected error: %v", err)
	}
	for _, p := range []string{"github.com/progrium/darwinkit/macos/metal", "github.com/progrium/darwinkit/objc", "github.com/golf-ml/golf/scripts/darwincheck"} {
		if !slices.Contains(res.Packages, p) {
			t.Errorf("%s not checked", p)
		}
	}
}

// TestEmptyModuleCache runs the check where go list must first download a
// dependency into an empty module cache, as on a fresh machine: go list
// then prints "go: downloading ..." on stderr, which is progress, not a
// problem. The dependency comes from a file:// module proxy built here.
func TestEmptyModuleCache(t *testing.T) {
	const depPath, depVersion = "example.com/darwindep", "v0.1.0"
	proxy := t.TempDir()
	vdir := filepath.Join(proxy, depPath, "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	depMod := "module " + depPath + "\n\ngo 1.26\n"
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, body := range map[string]string{
		"go.mod": depMod,
		"dep.go": "package darwindep\n\n// N is a constant of the dependency.\nconst N = 3\n",
	} {
		w, err := zw.Create(depPath + "@" + depVersion + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"list":               depVersion + "\n",
		depVersion + ".info": `{"Version":"` + depVersion + `","Time":"2026-01-01T00:00:00Z"}`,
		depVersion + ".mod":  depMod,
		depVersion + ".zip":  zbuf.String(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	mod := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":  "module example.com/darwinmain\n\ngo 1.26\n\nrequire " + depPath + " " + depVersion + "\n",
		"main.go": "package main\n\nimport \"" + depPath + "\"\n\nvar _ int = darwindep.N\n\nfunc main() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOWORK", "off")
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(proxy))
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-mod=mod -modcacherw")
	t.Setenv("GONOSUMDB", "example.com")
	t.Setenv("GOSUMDB", "off")

	res, err := darwincheck.Run(mod, []string{"./..."}, darwincheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range res.Errors {
		t.Errorf("unexpected error: %v", err)
	}
	if !slices.Contains(res.Packages, depPath) {
		t.Errorf("%s not checked; checked %v", depPath, res.Packages)
	}
}

package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/darwincheck"
)

// The fixture module under testdata: ok type-checks for darwin/arm64 with
// cgo only, bad is the same package with type errors marked in place.
const fixturePkg = "example.com/darwinfixture"

func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", name))
	require.NoError(t, err)
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
	require.NoError(t, err)
	var wants []want
	for _, name := range names {
		src, err := os.ReadFile(name)
		require.NoError(t, err)
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
		if !assert.ErrorAs(t, err, &te, "a type error") {
			continue
		}
		pos := te.Fset.Position(te.Pos)
		i := slices.IndexFunc(left, func(w want) bool {
			return w.file == filepath.Base(pos.Filename) && w.line == pos.Line && w.msg.MatchString(te.Msg)
		})
		if i < 0 {
			assert.Fail(t, "unexpected type error", err.Error())
			continue
		}
		prefix := fmt.Sprintf("./%s:%d:", left[i].file, left[i].line)
		assert.True(t, strings.HasPrefix(err.Error(), prefix), "error printed as %q, want it to start with %q", err, prefix)
		left = slices.Delete(left, i, i+1)
	}
	for _, w := range left {
		assert.Failf(t, "a wanted type error is missing", "at %s:%d matching %q", w.file, w.line, w.msg)
	}
}

func TestFixtureOK(t *testing.T) {
	dir := fixtureDir(t, "ok")
	require.Empty(t, readWants(t, dir, true), "want comments in the ok fixture")
	res, err := darwincheck.Run(dir, []string{"./..."}, darwincheck.Options{Tests: true})
	require.NoError(t, err)
	assert.Empty(t, res.Errors, "errors in the ok fixture")
	// The package, its test variant, and the darwin standard library
	// (runtime/cgo comes with import "C") were all checked.
	for _, p := range []string{fixturePkg, fixturePkg + " [" + fixturePkg + ".test]", "syscall", "runtime/cgo", "testing"} {
		assert.Contains(t, res.Packages, p, "checked packages")
	}
}

func TestFixtureBad(t *testing.T) {
	dir := fixtureDir(t, "bad")
	for _, tests := range []bool{false, true} {
		t.Run(fmt.Sprintf("tests=%v", tests), func(t *testing.T) {
			wants := readWants(t, dir, tests)
			require.GreaterOrEqual(t, len(wants), 3, "want comments in the bad fixture")
			res, err := darwincheck.Run(dir, []string{"./..."}, darwincheck.Options{Tests: tests})
			require.NoError(t, err)
			checkErrors(t, res.Errors, wants)
		})
	}
}

// TestCheck exercises the plain entry point on both fixtures.
func TestCheck(t *testing.T) {
	errs, err := darwincheck.Check(fixtureDir(t, "ok"), []string{"./..."})
	assert.NoError(t, err, "Check(ok)")
	assert.Empty(t, errs, "Check(ok): type errors")
	dir := fixtureDir(t, "bad")
	errs, err = darwincheck.Check(dir, []string{"./..."})
	require.NoError(t, err)
	checkErrors(t, errs, readWants(t, dir, false))
}

// TestCommand runs the command as CI does, in each fixture directory.
func TestCommand(t *testing.T) {
	ok, bad := fixtureDir(t, "ok"), fixtureDir(t, "bad")
	t.Chdir(ok)
	var stdout, stderr bytes.Buffer
	code := run([]string{"./..."}, &stdout, &stderr)
	require.Equal(t, 0, code, "ok: exit status; stderr:\n%s", &stderr)
	assert.Regexp(t, `^darwincheck: [1-9][0-9]* packages type-checked for darwin/arm64\n$`, stdout.String(), "ok: stdout")
	assert.Empty(t, stderr.String(), "ok: stderr")

	t.Chdir(bad)
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"./..."}, &stdout, &stderr)
	require.Equal(t, 1, code, "bad: exit status; stderr:\n%s", &stderr)
	assert.Empty(t, stdout.String(), "bad: stdout")
	for _, line := range []string{
		`./platform.go:13:17: cannot use "arm64" (untyped string constant) as int value in variable declaration`,
		"darwincheck: 3 errors for darwin/arm64",
	} {
		assert.Contains(t, stderr.String(), line+"\n", "bad: stderr")
	}
}

// TestListErrors checks that what go list cannot resolve for darwin is an
// error, not a silent pass: a missing package, a package with no files for
// darwin named explicitly, and a pattern matching no package. (./...
// skips that package silently, as go build does: TestFixtureOK.)
func TestListErrors(t *testing.T) {
	const missing = fixturePkg + "/nosuch"
	res, err := darwincheck.Run(fixtureDir(t, "ok"), []string{missing, "./linuxonly", "./linuxonly/..."}, darwincheck.Options{})
	require.NoError(t, err)
	assert.Empty(t, res.Packages, "checked packages")
	want := map[string]string{
		missing:                   "",
		fixturePkg + "/linuxonly": "build constraints exclude all Go files",
		"":                        `"./linuxonly/..." matched no packages`,
	}
	for _, err := range res.Errors {
		var le *darwincheck.ListError
		if !assert.ErrorAs(t, err, &le, "a list error") ||
			!assert.Contains(t, want, le.ImportPath, "unexpected error %v", err) ||
			!assert.Contains(t, le.Err, want[le.ImportPath], "error for %q", le.ImportPath) {
			continue
		}
		delete(want, le.ImportPath)
	}
	assert.Empty(t, want, "import paths (and messages) with no ListError")
}

// TestDarwinkit checks this command's own package for darwin: through
// deps_darwin.go that brings in darwinkit's Metal and Objective-C
// packages, which must type-check.
func TestDarwinkit(t *testing.T) {
	res, err := darwincheck.Run(".", []string{"."}, darwincheck.Options{})
	require.NoError(t, err)
	assert.Empty(t, res.Errors, "errors")
	for _, p := range []string{"github.com/progrium/darwinkit/macos/metal", "github.com/progrium/darwinkit/objc", "github.com/golf-ml/golf/scripts/darwincheck"} {
		assert.Contains(t, res.Packages, p, "checked packages")
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
	require.NoError(t, os.MkdirAll(vdir, 0o755))
	depMod := "module " + depPath + "\n\ngo 1.26\n"
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, body := range map[string]string{
		"go.mod": depMod,
		"dep.go": "package darwindep\n\n// N is a constant of the dependency.\nconst N = 3\n",
	} {
		w, err := zw.Create(depPath + "@" + depVersion + "/" + name)
		require.NoError(t, err)
		_, err = io.WriteString(w, body)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	for name, body := range map[string]string{
		"list":               depVersion + "\n",
		depVersion + ".info": `{"Version":"` + depVersion + `","Time":"2026-01-01T00:00:00Z"}`,
		depVersion + ".mod":  depMod,
		depVersion + ".zip":  zbuf.String(),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(vdir, name), []byte(body), 0o644))
	}

	mod := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":  "module example.com/darwinmain\n\ngo 1.26\n\nrequire " + depPath + " " + depVersion + "\n",
		"main.go": "package main\n\nimport \"" + depPath + "\"\n\nvar _ int = darwindep.N\n\nfunc main() {}\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644))
	}
	t.Setenv("GOWORK", "off")
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(proxy))
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-mod=mod -modcacherw")
	t.Setenv("GONOSUMDB", "example.com")
	t.Setenv("GOSUMDB", "off")

	res, err := darwincheck.Run(mod, []string{"./..."}, darwincheck.Options{})
	require.NoError(t, err)
	assert.Empty(t, res.Errors, "errors")
	assert.Contains(t, res.Packages, depPath, "checked packages")
}

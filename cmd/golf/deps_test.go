package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// module is golf's module path.
const module = "github.com/golf-ml/golf"

// listedPackage is the part of `go list -json` a dependency check reads.
type listedPackage struct {
	ImportPath string
	CgoFiles   []string
	CFiles     []string
	CXXFiles   []string
	SFiles     []string
	SysoFiles  []string
}

// goListDeps runs `go list -deps -json args...` for linux/amd64 with cgo on
// (so that cgo files count wherever they exist) and returns the packages.
// The decision rests on go list's exit status and its JSON alone.
func goListDeps(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json"}, args...)...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v failed:\n%s", args, stderr.String())
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "go list %v: JSON", args)
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs, "go list %v listed nothing", args)
	return pkgs
}

// emulatorViolations lists the packages of golf's module among pkgs that
// belong to the kernel emulator (internal/kemu...) or would have the Go
// build compile C, C++ or assembly for cgo (the emulators are the only such
// code in the module). The strict MSL front end and its signature parser
// (internal/kemu/msl/strict, .../internal/kgen) are pure Go and run clang
// as a program: `golf kernels --backend metal` uses them; they are held to
// the cgo check only.
func emulatorViolations(pkgs []listedPackage) []string {
	pureGo := map[string]bool{module + "/internal/kemu/msl/strict": true, module + "/internal/kemu/msl/internal/kgen": true}
	var bad []string
	for _, p := range pkgs {
		if p.ImportPath != module && !strings.HasPrefix(p.ImportPath, module+"/") {
			continue
		}
		if strings.HasPrefix(p.ImportPath, module+"/internal/kemu") && !pureGo[p.ImportPath] {
			bad = append(bad, p.ImportPath+" (the kernel emulator)")
			continue
		}
		if n := len(p.CgoFiles) + len(p.CFiles) + len(p.CXXFiles) + len(p.SysoFiles); n > 0 {
			bad = append(bad, fmt.Sprintf("%s (cgo %v, C %v, C++ %v)", p.ImportPath, p.CgoFiles, p.CFiles, p.CXXFiles))
		}
	}
	return bad
}

// TestBinaryCompilesNoEmulator: building golf on Linux, with or without
// the cuda tag, compiles no C++: no package of the kernel emulator (its
// emulated runtimes are for tests) and no cgo in any of golf's packages, so
// a machine without a C++ compiler builds golf. The same check over the
// Metal backend's tests, which do run the MSL emulator, must flag it: the
// check can fail.
func TestBinaryCompilesNoEmulator(t *testing.T) {
	for _, tags := range []string{"", "cuda"} {
		args := []string{"."}
		if tags != "" {
			args = []string{"-tags", tags, "."}
		}
		bad := emulatorViolations(goListDeps(t, args...))
		assert.Empty(t, bad, "go build -tags %q ./cmd/golf would compile the emulator", tags)
	}

	planted := emulatorViolations(goListDeps(t, "-test", "../../metal"))
	assert.Contains(t, strings.Join(planted, "\n"), module+"/internal/kemu/msl (the kernel emulator)",
		"the check missed the emulator in the Metal backend's test dependencies")
}

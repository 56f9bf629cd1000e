package backendtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listedPackage is what the layering check reads of go list's JSON.
type listedPackage struct {
	ImportPath string
	Imports    []string
	DepOnly    bool
}

// listDeps runs `go list -deps -test -json` on patterns in dir: the packages
// the patterns match, their tests, and everything they import, directly or
// not. Only go's exit status and its JSON decide: with an empty module
// cache go prints download progress on stderr, which is no error (stderr is
// shown only when go fails).
func listDeps(t *testing.T, dir string, patterns ...string) []listedPackage {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command must be on PATH to list packages")
	cmd := exec.Command(goBin, append([]string{"list", "-deps", "-test", "-json=ImportPath,Imports,DepOnly"}, patterns...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v in %s:\n%s", patterns, dir, stderr.String())
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err, "go list %v: JSON output", patterns)
		}
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs, "go list %v printed no packages", patterns)
	return pkgs
}

// upwardImports returns every edge "importer -> imported" among the listed
// packages that ends in one of above, and any package of above listed
// without an importer (which go list never prints, but the check must not
// depend on that).
func upwardImports(pkgs []listedPackage, above []string) []string {
	var found []string
	imported := map[string]bool{}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if slices.Contains(above, imp) {
				found = append(found, p.ImportPath+" -> "+imp)
				imported[imp] = true
			}
		}
	}
	for _, p := range pkgs {
		if slices.Contains(above, p.ImportPath) && !imported[p.ImportPath] {
			found = append(found, "listed: "+p.ImportPath)
		}
	}
	return found
}

// TestBackendImportsNoHigherLayer: nothing under backend/ (the contract and
// this suite, their tests included) imports model or optim, directly or
// through another package; the whole-model comparison lives above them, in
// modeltest.
func TestBackendImportsNoHigherLayer(t *testing.T) {
	const module = "github.com/golf-ml/golf"
	pkgs := listDeps(t, "../..", "./backend/...")
	paths := make([]string, len(pkgs))
	for i, p := range pkgs {
		paths[i] = p.ImportPath
	}
	require.Contains(t, paths, module+"/backend/backendtest", "go list did not list the suite itself")
	assert.Empty(t, upwardImports(pkgs, []string{module + "/model", module + "/optim"}),
		"backend/... must not depend on model or optim")
}

// TestLayeringCheckCatchesUpwardImport: the same check on a fixture module
// whose backend imports optim, which imports model, reports both.
func TestLayeringCheckCatchesUpwardImport(t *testing.T) {
	const module = "example.com/upward"
	pkgs := listDeps(t, "testdata/upward", "./backend/...")
	assert.ElementsMatch(t, []string{
		module + "/backend -> " + module + "/optim",
		module + "/optim -> " + module + "/model",
	}, upwardImports(pkgs, []string{module + "/model", module + "/optim"}))
}

package darwincheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// listedPackage is the part of `go list -json` output the checker reads.
type listedPackage struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	ForTest    string
	DepOnly    bool // listed only as a dependency, not matched by a pattern
	Incomplete bool // this package or one it imports has an Error
	GoFiles    []string
	CgoFiles   []string
	Imports    []string          // resolved import paths (vendor and test variants applied)
	ImportMap  map[string]string // import path in source -> resolved path, where they differ
	Module     *struct {
		Path      string
		GoVersion string
	}
	Error *struct {
		ImportStack []string
		Pos         string
		Err         string
	}
}

// listFields names the fields goList asks for; `go list -json=fields`
// skips computing the rest.
const listFields = "ImportPath,Name,Dir,Standard,ForTest,DepOnly,Incomplete,GoFiles,CgoFiles,Imports,ImportMap,Module,Error"

// targetEnv is the environment of every go command the checker runs: the
// caller's, with the target platform forced.
func targetEnv() []string {
	return append(os.Environ(), "GOOS="+GOOS, "GOARCH="+GOARCH, "CGO_ENABLED=1")
}

// goList runs `go list -e -deps -json` in dir for patterns under the
// target environment and returns the packages in dependency order (every
// complete package after all it imports) and the patterns that matched no
// package. With tests set, test variants of the packages matching patterns
// are listed too (`-test`).
//
// The exit status and the JSON decide; stderr is only quoted when go list
// fails. It carries progress ("go: downloading ...") on a machine with an
// empty module cache, so its mere presence says nothing.
func goList(dir string, patterns []string, tests bool) (pkgs []*listedPackage, unmatched []string, err error) {
	args := []string{"list", "-e", "-deps", "-json=" + listFields}
	if tests {
		args = append(args, "-test")
	}
	args = append(args, "--")
	args = append(args, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = targetEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("go list in %s: %v\n%s", dir, err, strings.TrimSpace(stderr.String()))
	}
	dec := json.NewDecoder(&stdout)
	for {
		p := new(listedPackage)
		err := dec.Decode(p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("go list in %s: decoding output: %v", dir, err)
		}
		pkgs = append(pkgs, p)
	}
	for _, pat := range patterns {
		if !slices.ContainsFunc(pkgs, func(p *listedPackage) bool { return !p.DepOnly && matchPattern(dir, pat, p) }) {
			unmatched = append(unmatched, pat)
		}
	}
	return pkgs, unmatched, nil
}

// matchPattern reports whether the listed package p is one that the
// package pattern pat (resolved in dir) names: a relative or absolute
// directory pattern is matched against p.Dir, anything else against
// p.ImportPath, with "..." matching any string and "x/..." matching x too
// (as `go help packages` describes). The meta-patterns all, std, cmd and
// tool match every package.
func matchPattern(dir, pat string, p *listedPackage) bool {
	switch pat {
	case "all", "std", "cmd", "tool":
		return true
	}
	target := p.ImportPath
	if p.ForTest != "" {
		target = p.ForTest
	}
	if build.IsLocalImport(pat) || filepath.IsAbs(pat) {
		if !filepath.IsAbs(pat) {
			pat = filepath.Join(dir, pat)
		}
		pat, target = filepath.ToSlash(filepath.Clean(pat)), filepath.ToSlash(p.Dir)
	}
	if !strings.Contains(pat, "...") {
		return target == pat
	}
	// A wildcard passes over directories with no Go files for the target
	// (go list reports them only when named literally).
	if p.Error != nil && len(p.GoFiles)+len(p.CgoFiles) == 0 {
		return false
	}
	re := regexp.QuoteMeta(pat)
	re = strings.ReplaceAll(re, `/\.\.\.`, `(/.*)?`)
	re = strings.ReplaceAll(re, `\.\.\.`, `.*`)
	return regexp.MustCompile(`^` + re + `$`).MatchString(target)
}

package darwincheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// listedPackage is the part of `go list -json` output the checker reads.
type listedPackage struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	ForTest    string
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
const listFields = "ImportPath,Name,Dir,Standard,ForTest,Incomplete,GoFiles,CgoFiles,Imports,ImportMap,Module,Error"

// targetEnv is the environment of every go command the checker runs: the
// caller's, with the target platform forced.
func targetEnv() []string {
	return append(os.Environ(), "GOOS="+GOOS, "GOARCH="+GOARCH, "CGO_ENABLED=1")
}

// goList runs `go list -e -deps -json` in dir for patterns under the
// target environment and returns the packages in dependency order (every
// complete package after all it imports) and the warnings go list printed
// (a pattern that matched no packages). With tests set, test variants of
// the packages matching patterns are listed too (`-test`).
func goList(dir string, patterns []string, tests bool) (pkgs []*listedPackage, warnings []string, err error) {
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
	for _, line := range strings.Split(stderr.String(), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			warnings = append(warnings, line)
		}
	}
	return pkgs, warnings, nil
}

// Package shaders holds golf's Metal Shading Language sources: one .metal
// file per op family (forward and backward kernels together) and the
// headers they share, embedded in the binary.
//
// Source joins them into the single translation unit that the Metal
// runtime compiles with newLibraryWithSource:options:error:, which has no
// include path: every quoted #include of a file in this directory is
// replaced by that file's text (once per translation unit, as with
// #pragma once; an include cycle therefore ends at the first repeat), and
// system includes such as #include <metal_stdlib> are kept. #line
// directives keep compiler messages pointing at the original file and
// line. Because the .metal files share one translation unit, names outside
// the kernels' instantiations (helpers, macros) must be unique across files.
package shaders

import (
	"bufio"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

//go:embed *.metal *.h probe/*.metal
var files embed.FS

// FS is the embedded shader directory: the .metal sources and their
// headers, at its root.
func FS() fs.FS { return files }

// Source returns every .metal file of the package, in file-name order, as
// one MSL translation unit with the quoted includes inlined.
func Source() (string, error) { return source() }

var source = sync.OnceValues(func() (string, error) { return Join(files) })

// ProbeFiles lists the device probes (probe/*.metal, sorted): tiny kernels
// that the Metal runtime compiles and runs at start-up, each file on its
// own, to learn what the device computes correctly. They are not part of
// Source.
func ProbeFiles() []string {
	names, err := fs.Glob(files, "probe/*.metal")
	if err != nil {
		panic(err) // the pattern is valid
	}
	sort.Strings(names)
	return names
}

// Probe returns one probe file (a name from ProbeFiles) as a translation
// unit of its own, its quoted includes inlined as Source inlines them.
func Probe(name string) (string, error) {
	if _, err := fs.Stat(files, name); err != nil || !strings.HasPrefix(name, "probe/") {
		return "", fmt.Errorf("shaders: no probe %q", name)
	}
	j := &joiner{fsys: files, included: make(map[string]bool)}
	if err := j.file(name); err != nil {
		return "", err
	}
	return j.out.String(), nil
}

// quotedInclude matches a line `#include "name"` (spaces allowed around
// the '#'); the name is group 1.
var quotedInclude = regexp.MustCompile(`^\s*#\s*include\s*"([^"]+)"`)

// Join builds one translation unit from the .metal files at the root of
// fsys (sorted by name), inlining quoted includes of files in fsys. An
// include of a file fsys lacks is an error naming the including file and
// line.
func Join(fsys fs.FS) (string, error) {
	names, err := fs.Glob(fsys, "*.metal")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "", fmt.Errorf("shaders: no .metal files")
	}
	j := &joiner{fsys: fsys, included: make(map[string]bool)}
	for _, name := range names {
		if err := j.file(name); err != nil {
			return "", err
		}
	}
	return j.out.String(), nil
}

type joiner struct {
	fsys     fs.FS
	included map[string]bool // files already in the unit
	out      strings.Builder
}

// file appends name to the unit, expanding its quoted includes, unless it
// is already there.
func (j *joiner) file(name string) error {
	if j.included[name] {
		return nil
	}
	// Marked before expanding, so a file that includes itself, directly
	// or through others, is not expanded again.
	j.included[name] = true
	src, err := fs.ReadFile(j.fsys, name)
	if err != nil {
		return fmt.Errorf("shaders: %v", err)
	}
	fmt.Fprintf(&j.out, "#line 1 %q\n", name)
	sc := bufio.NewScanner(strings.NewReader(string(src)))
	sc.Buffer(nil, len(src)+1)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		m := quotedInclude.FindStringSubmatch(text)
		if m == nil {
			j.out.WriteString(text)
			j.out.WriteByte('\n')
			continue
		}
		inc := path.Clean(path.Join(path.Dir(name), m[1]))
		if !fs.ValidPath(inc) {
			return fmt.Errorf("shaders: %s:%d: include %q is outside the shader directory", name, line, m[1])
		}
		if _, err := fs.Stat(j.fsys, inc); err != nil {
			return fmt.Errorf("shaders: %s:%d: include %q: no such file in the shader directory", name, line, m[1])
		}
		j.out.WriteString("// " + strings.TrimSpace(text) + " (inlined)\n")
		if err := j.file(inc); err != nil {
			return err
		}
		fmt.Fprintf(&j.out, "#line %d %q\n", line+1, name)
	}
	return sc.Err()
}

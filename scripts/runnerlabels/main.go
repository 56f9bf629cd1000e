// Command runnerlabels checks the runs-on labels of GitHub workflow files
// against .github/runners.txt: each label must be listed there as current.
// A retired label (GitHub no longer has a runner for it, so the job never
// runs) and a label the list does not know are errors naming the file,
// line and label; so is a runs-on that is not literal labels or one list
// of the job's matrix (another expression cannot be checked). actionlint knows labels, not retirements.
//
// Usage: go run ./scripts/runnerlabels [-list .github/runners.txt] FILE...
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

func main() {
	list := flag.String("list", ".github/runners.txt", "the runner label list")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: runnerlabels [-list FILE] WORKFLOW...")
		os.Exit(2)
	}
	f, err := os.Open(*list)
	if err != nil {
		fmt.Fprintln(os.Stderr, "runnerlabels:", err)
		os.Exit(2)
	}
	labels, err := readList(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "runnerlabels: %s: %v\n", *list, err)
		os.Exit(2)
	}
	bad := 0
	for _, name := range flag.Args() {
		text, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "runnerlabels:", err)
			os.Exit(2)
		}
		for _, p := range check(string(text), labels, *list) {
			fmt.Printf("%s:%s\n", name, p)
			bad++
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}

// label is one entry of the list.
type label struct {
	current bool
	note    string
}

// readList reads the list: lines "current|retired LABEL NOTE...", '#'
// comments and blank lines.
func readList(r io.Reader) (map[string]label, error) {
	out := map[string]label{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "current" && f[0] != "retired") {
			return nil, fmt.Errorf("line %d: want `current|retired LABEL NOTE`, got %q", n, line)
		}
		if _, dup := out[f[1]]; dup {
			return nil, fmt.Errorf("line %d: label %s listed twice", n, f[1])
		}
		out[f[1]] = label{current: f[0] == "current", note: strings.Join(f[2:], " ")}
	}
	return out, sc.Err()
}

// use is one runs-on label of a workflow, or a runs-on that is not literal.
type use struct {
	line  int
	label string // "" when expr is set
	expr  string
}

// runsOn finds every runs-on of a workflow: `runs-on: LABEL`,
// `runs-on: [A, B]`, `runs-on:` followed by a block list `- A`, and
// `runs-on: ${{ matrix.NAME }}` with NAME a list of the job's matrix.
func runsOn(text string) []use {
	var out []use
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		key, rest, ok := strings.Cut(stripComment(lines[i]), "runs-on:")
		if !ok || strings.TrimSpace(key) != "" && strings.TrimSpace(key) != "-" {
			continue
		}
		v := strings.TrimSpace(rest)
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		if m := matrixRef.FindStringSubmatch(v); m != nil {
			if vals, line, ok := matrixValues(lines, i, indent, m[1]); ok {
				for _, l := range vals {
					out = append(out, use{line: line, label: l})
				}
				continue
			}
		}
		switch {
		case strings.Contains(v, "${{") || strings.HasPrefix(v, "{") || strings.HasPrefix(v, "group:"):
			out = append(out, use{line: i + 1, expr: v})
		case strings.HasPrefix(v, "["):
			for _, l := range strings.Split(strings.Trim(v, "[]"), ",") {
				out = append(out, use{line: i + 1, label: unquote(l)})
			}
		case v != "":
			out = append(out, use{line: i + 1, label: unquote(v)})
		default:
			for j := i + 1; j < len(lines); j++ {
				l := stripComment(lines[j])
				t := strings.TrimSpace(l)
				if t == "" {
					continue
				}
				if len(l)-len(strings.TrimLeft(l, " ")) <= indent && !strings.HasPrefix(t, "-") {
					break
				}
				item, isItem := strings.CutPrefix(t, "- ")
				if !isItem {
					out = append(out, use{line: j + 1, expr: t})
					break
				}
				if strings.Contains(item, "${{") {
					out = append(out, use{line: j + 1, expr: item})
				} else {
					out = append(out, use{line: j + 1, label: unquote(item)})
				}
				i = j
			}
		}
	}
	return out
}

// matrixRef matches a runs-on of one matrix variable: ${{ matrix.NAME }}.
var matrixRef = regexp.MustCompile(`^\$\{\{\s*matrix\.([A-Za-z0-9_-]+)\s*\}\}$`)

// indentOf is the number of leading spaces of a line.
func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// matrixValues finds the values of matrix variable name for the job whose
// runs-on is line at (with indent): `name: [A, B]` or a block list under
// the job's strategy.matrix. It returns the values and the line they are
// on, or false when the job has no such list (an include, an expression).
func matrixValues(lines []string, at, indent int, name string) ([]string, int, bool) {
	start := at
	for start > 0 && (strings.TrimSpace(stripComment(lines[start])) == "" || indentOf(lines[start]) >= indent) {
		start--
	}
	jobIndent := indentOf(lines[start])
	end := start + 1
	for end < len(lines) && (strings.TrimSpace(stripComment(lines[end])) == "" || indentOf(lines[end]) > jobIndent) {
		end++
	}
	inMatrix, matrixIndent := false, 0
	for i := start + 1; i < end; i++ {
		l := stripComment(lines[i])
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			continue
		case t == "matrix:":
			inMatrix, matrixIndent = true, indentOf(l)
			continue
		case inMatrix && indentOf(l) <= matrixIndent:
			inMatrix = false
		}
		v, ok := strings.CutPrefix(t, name+":")
		if !inMatrix || !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "[") && !strings.Contains(v, "${{") {
			var out []string
			for _, x := range strings.Split(strings.Trim(v, "[]"), ",") {
				out = append(out, unquote(x))
			}
			return out, i + 1, true
		}
		if v == "" {
			var out []string
			for j := i + 1; j < end; j++ {
				item, isItem := strings.CutPrefix(strings.TrimSpace(stripComment(lines[j])), "- ")
				if !isItem || strings.Contains(item, "${{") || strings.Contains(item, ":") {
					break
				}
				out = append(out, unquote(item))
			}
			return out, i + 1, len(out) > 0
		}
		return nil, 0, false
	}
	return nil, 0, false
}

func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return s[:i]
	}
	if strings.HasPrefix(strings.TrimSpace(s), "#") {
		return ""
	}
	return s
}

func unquote(s string) string {
	return strings.Trim(strings.TrimSpace(s), `"'`)
}

// check returns the problems of one workflow's runs-on labels, each as
// "LINE: message".
func check(text string, labels map[string]label, list string) []string {
	var out []string
	for _, u := range runsOn(text) {
		switch l, known := labels[u.label]; {
		case u.expr != "":
			out = append(out, fmt.Sprintf("%d: runs-on %q is not a literal label: it cannot be checked against %s", u.line, u.expr, list))
		case !known:
			out = append(out, fmt.Sprintf("%d: runner label %s is not in %s: check that GitHub has such a runner and list it as current", u.line, u.label, list))
		case !l.current:
			out = append(out, fmt.Sprintf("%d: runner label %s is retired (%s): no runner takes the job; move it to a current label of %s", u.line, u.label, l.note, list))
		}
	}
	return out
}

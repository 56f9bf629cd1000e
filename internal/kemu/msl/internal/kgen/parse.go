package kgen

import (
	"fmt"
	"strconv"
	"strings"
)

// param is one kernel parameter: a [[buffer(n)]] or a builtin.
type param struct {
	name    string
	typ     []token // the declared type, before template substitution
	attr    string  // "buffer" or the builtin's attribute name
	index   int     // n of [[buffer(n)]]
	line    int
	pointer bool // buffer: T* (else T&)
}

// kernel is a [[kernel]] function definition.
type kernel struct {
	name    string
	tparams []string // template parameter names; nil for a plain function
	params  []param
	line    int
	body    [2]int // token range of the body, braces included
	// threads is the expression of [[max_total_threads_per_threadgroup(N)]]
	// (nil without one): the kernel is laid out for exactly N threads.
	threads []token
}

// instance is one instantiate_kernel(host, func, targs...).
type instance struct {
	host  string
	fn    string
	targs [][]token
	line  int
}

// argStruct is a struct of golf_args.h.
type argStruct struct {
	name   string
	fields []string
	line   int
}

// builtins maps the builtin attributes a kernel parameter may carry to the
// ThreadCtx field and its number of components.
var builtins = map[string]struct {
	field string
	dims  int
}{
	"thread_position_in_grid":          {"thread_position_in_grid", 3},
	"threadgroup_position_in_grid":     {"threadgroup_position_in_grid", 3},
	"thread_position_in_threadgroup":   {"thread_position_in_threadgroup", 3},
	"threads_per_threadgroup":          {"threads_per_threadgroup", 3},
	"dispatch_threads_per_threadgroup": {"threads_per_threadgroup", 3},
	"threadgroups_per_grid":            {"threadgroups_per_grid", 3},
	"threads_per_grid":                 {"threads_per_grid", 3},
	"thread_index_in_threadgroup":      {"thread_index_in_threadgroup", 1},
	"thread_index_in_simdgroup":        {"thread_index_in_simdgroup", 1},
	"simdgroup_index_in_threadgroup":   {"simdgroup_index_in_threadgroup", 1},
	"threads_per_simdgroup":            {"threads_per_simdgroup", 1},
	"thread_execution_width":           {"threads_per_simdgroup", 1},
	"simdgroups_per_threadgroup":       {"simdgroups_per_threadgroup", 1},
}

// errorf formats an error at path:line.
func errorf(path string, line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
}

// matchClose returns the index of the token closing the bracket at toks[i].
func matchClose(toks []token, i int) int {
	open := toks[i].text
	close := map[string]string{"(": ")", "[": "]", "{": "}", "<": ">"}[open]
	depth := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return j
			}
		case ">>":
			if open == "<" {
				depth -= 2
				if depth <= 0 {
					return j
				}
			}
		}
	}
	return -1
}

// splitTop splits toks at commas outside brackets.
func splitTop(toks []token) [][]token {
	var parts [][]token
	depth := 0
	start := 0
	for i, t := range toks {
		switch t.text {
		case "(", "[", "{", "<":
			depth++
		case ")", "]", "}", ">":
			depth--
		case ">>":
			depth -= 2
		case ",":
			if depth == 0 {
				parts = append(parts, toks[start:i])
				start = i + 1
			}
		}
	}
	if start < len(toks) || len(parts) > 0 {
		parts = append(parts, toks[start:])
	}
	return parts
}

// isAttr reports whether toks[i:] starts with [[name]].
func isAttr(toks []token, i int, name string) bool {
	return i+4 < len(toks) && toks[i].text == "[" && toks[i+1].text == "[" &&
		toks[i+2].text == name && toks[i+3].text == "]" && toks[i+4].text == "]"
}

// skipAttrs returns the index after any [[...]] groups starting at i.
func skipAttrs(toks []token, i int) int {
	for i+1 < len(toks) && toks[i].text == "[" && toks[i+1].text == "[" {
		end := matchClose(toks, i)
		if end < 0 {
			return len(toks)
		}
		i = end + 1
	}
	return i
}

// parseKernels finds the [[kernel]] function definitions of src.
func parseKernels(src *source) ([]*kernel, error) {
	toks := src.toks
	var ks []*kernel
	for i := range toks {
		if !isAttr(toks, i, "kernel") {
			continue
		}
		line := toks[i].line
		j := skipAttrs(toks, i)
		if j+2 >= len(toks) || toks[j].text != "void" || toks[j+1].kind != tIdent {
			return nil, errorf(src.path, line, "[[kernel]] must be followed by `void name(`")
		}
		k := &kernel{name: toks[j+1].text, line: line}
		// Function attributes after [[kernel]]: only the thread count.
		for a := i + 5; a < j; {
			end := matchClose(toks, a)
			attr := toks[a+2 : end-1]
			if len(attr) < 4 || attr[0].text != "max_total_threads_per_threadgroup" || attr[1].text != "(" ||
				matchClose(attr, 1) != len(attr)-1 {
				return nil, errorf(src.path, line, "kernel %s: attribute [[%s]] is not supported (only [[max_total_threads_per_threadgroup(N)]])", k.name, joinTokens(attr))
			}
			k.threads = attr[2 : len(attr)-1]
			a = end + 1
		}
		if toks[j+2].text != "(" {
			return nil, errorf(src.path, line, "kernel %s: instantiate kernels with instantiate_kernel(host, func, types...), not by hand", k.name)
		}
		tp, err := templateParams(toks, i)
		if err != nil {
			return nil, errorf(src.path, line, "kernel %s: %v", k.name, err)
		}
		k.tparams = tp
		end := matchClose(toks, j+2)
		if end < 0 {
			return nil, errorf(src.path, line, "kernel %s: unterminated parameter list", k.name)
		}
		for _, ptoks := range splitTop(toks[j+3 : end]) {
			p, err := parseParam(ptoks)
			if err != nil {
				return nil, errorf(src.path, line, "kernel %s: %v", k.name, err)
			}
			k.params = append(k.params, p)
		}
		if end+1 >= len(toks) || toks[end+1].text != "{" {
			return nil, errorf(src.path, line, "kernel %s: expected a body", k.name)
		}
		close := matchClose(toks, end+1)
		if close < 0 {
			return nil, errorf(src.path, line, "kernel %s: unterminated body", k.name)
		}
		k.body = [2]int{end + 1, close}
		for _, o := range ks {
			if o.name == k.name {
				return nil, errorf(src.path, line, "kernel %s defined twice (line %d)", k.name, o.line)
			}
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// templateParams returns the parameter names of the `template <...>` that
// ends just before toks[i], or nil if there is none.
func templateParams(toks []token, i int) ([]string, error) {
	if i == 0 || toks[i-1].text != ">" {
		return nil, nil
	}
	depth := 0
	k := i - 1
	for ; k >= 0; k-- {
		switch toks[k].text {
		case ">":
			depth++
		case ">>":
			depth += 2
		case "<":
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if k <= 0 || toks[k-1].text != "template" {
		return nil, fmt.Errorf("cannot read the template header")
	}
	var names []string
	for _, p := range splitTop(toks[k+1 : i-1]) {
		if eq := indexText(p, "="); eq >= 0 {
			p = p[:eq]
		}
		if len(p) < 2 || p[len(p)-1].kind != tIdent {
			return nil, fmt.Errorf("cannot read template parameter %q", joinTokens(p))
		}
		names = append(names, p[len(p)-1].text)
	}
	return names, nil
}

func indexText(toks []token, text string) int {
	for i, t := range toks {
		if t.text == text {
			return i
		}
	}
	return -1
}

// parseParam reads `type name [[attr]]`.
func parseParam(toks []token) (param, error) {
	at := -1
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].text == "[" && toks[i+1].text == "[" {
			at = i
			break
		}
	}
	if at < 0 {
		return param{}, fmt.Errorf("parameter %q has no attribute ([[buffer(n)]] or a builtin)", joinTokens(toks))
	}
	end := matchClose(toks, at)
	if end < 0 || end != len(toks)-1 {
		return param{}, fmt.Errorf("parameter %q: one attribute group, at the end", joinTokens(toks))
	}
	decl := toks[:at]
	if len(decl) < 2 || decl[len(decl)-1].kind != tIdent {
		return param{}, fmt.Errorf("parameter %q: expected `type name`", joinTokens(toks))
	}
	p := param{name: decl[len(decl)-1].text, typ: decl[:len(decl)-1], line: toks[0].line}
	attr := toks[at+2 : end-1] // inside [[ ]]
	if len(attr) == 0 || attr[0].kind != tIdent {
		return param{}, fmt.Errorf("parameter %s: empty attribute", p.name)
	}
	name := attr[0].text
	switch {
	case name == "threadgroup":
		return param{}, fmt.Errorf("parameter %s: threadgroup memory parameters ([[threadgroup(n)]]) are not supported by the emulator; declare `threadgroup T name[N];` in the kernel", p.name)
	case name == "buffer":
		if len(attr) != 4 || attr[1].text != "(" || attr[2].kind != tNumber || attr[3].text != ")" {
			return param{}, fmt.Errorf("parameter %s: want [[buffer(n)]], got [[%s]]", p.name, joinTokens(attr))
		}
		n, err := strconv.Atoi(attr[2].text)
		if err != nil || n < 0 || n > 30 {
			return param{}, fmt.Errorf("parameter %s: buffer index %s (want 0 to 30)", p.name, attr[2].text)
		}
		p.attr, p.index = "buffer", n
		last := p.typ[len(p.typ)-1].text
		switch last {
		case "*":
			p.pointer = true
		case "&":
		default:
			return param{}, fmt.Errorf("parameter %s: a buffer is a pointer or a reference", p.name)
		}
	case len(attr) == 1:
		if _, ok := builtins[name]; !ok {
			return param{}, fmt.Errorf("parameter %s: attribute [[%s]] is not supported by the emulator", p.name, name)
		}
		p.attr = name
	default:
		return param{}, fmt.Errorf("parameter %s: attribute [[%s]] is not supported by the emulator", p.name, joinTokens(attr))
	}
	return p, nil
}

// expand expands the function-like macros of src invoked at file scope in
// toks (recursively), leaving instantiate_kernel calls in place.
func expand(src *source, toks []token, depth int) ([]token, error) {
	if depth > 16 {
		return nil, fmt.Errorf("%s: macro expansion too deep", src.path)
	}
	var out []token
	braces := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.text {
		case "{":
			braces++
		case "}":
			braces--
		}
		d, ok := src.defines[t.text]
		if braces != 0 || t.kind != tIdent || !ok || d.params == nil || t.text == "instantiate_kernel" ||
			i+1 >= len(toks) || toks[i+1].text != "(" {
			out = append(out, t)
			continue
		}
		end := matchClose(toks, i+1)
		if end < 0 {
			return nil, errorf(src.path, t.line, "unterminated call of %s", d.name)
		}
		args := splitTop(toks[i+2 : end])
		if len(args) != len(d.params) {
			return nil, errorf(src.path, t.line, "%s takes %d arguments, got %d", d.name, len(d.params), len(args))
		}
		body := substitute(d, args, t.line)
		exp, err := expand(src, body, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, exp...)
		i = end
	}
	return out, nil
}

// substitute replaces d's parameters in its body by args, with # and ##.
func substitute(d *define, args [][]token, line int) []token {
	arg := func(name string) ([]token, bool) {
		for k, p := range d.params {
			if p == name {
				return args[k], true
			}
		}
		return nil, false
	}
	var out []token
	for k := 0; k < len(d.body); k++ {
		b := d.body[k]
		if b.text == "#" && k+1 < len(d.body) {
			if a, ok := arg(d.body[k+1].text); ok {
				out = append(out, token{tString, strconv.Quote(joinTokens(a)), line})
				k++
				continue
			}
		}
		if a, ok := arg(b.text); ok && b.kind == tIdent {
			for _, t := range a {
				out = append(out, token{t.kind, t.text, line})
			}
			continue
		}
		out = append(out, token{b.kind, b.text, line})
	}
	// Token pasting.
	var pasted []token
	for k := 0; k < len(out); k++ {
		if out[k].text == "##" && len(pasted) > 0 && k+1 < len(out) {
			prev := pasted[len(pasted)-1]
			prev.text += out[k+1].text
			pasted[len(pasted)-1] = prev
			k++
			continue
		}
		pasted = append(pasted, out[k])
	}
	return pasted
}

// parseInstances finds the instantiate_kernel calls of src (after macro
// expansion).
func parseInstances(src *source) ([]instance, error) {
	toks, err := expand(src, src.toks, 0)
	if err != nil {
		return nil, err
	}
	var out []instance
	braces := 0
	for i := 0; i < len(toks); i++ {
		switch toks[i].text {
		case "{":
			braces++
		case "}":
			braces--
		}
		if braces != 0 || toks[i].text != "instantiate_kernel" {
			continue
		}
		line := toks[i].line
		if i+1 >= len(toks) || toks[i+1].text != "(" {
			return nil, errorf(src.path, line, "instantiate_kernel without arguments")
		}
		end := matchClose(toks, i+1)
		if end < 0 {
			return nil, errorf(src.path, line, "unterminated instantiate_kernel")
		}
		args := splitTop(toks[i+2 : end])
		if len(args) < 2 {
			return nil, errorf(src.path, line, "instantiate_kernel(host, func, types...) needs a host name and a function")
		}
		host, err := concatStrings(args[0])
		if err != nil {
			return nil, errorf(src.path, line, "instantiate_kernel host name: %v", err)
		}
		if len(args[1]) != 1 || args[1][0].kind != tIdent {
			return nil, errorf(src.path, line, "instantiate_kernel(%q, ...): the function must be a name", host)
		}
		out = append(out, instance{host: host, fn: args[1][0].text, targs: args[2:], line: line})
		i = end
	}
	return out, nil
}

// concatStrings joins adjacent string literals ("a_" "b" is "a_b").
func concatStrings(toks []token) (string, error) {
	if len(toks) == 0 {
		return "", fmt.Errorf("empty")
	}
	var sb strings.Builder
	for _, t := range toks {
		if t.kind != tString {
			return "", fmt.Errorf("%q is not a string literal", t.text)
		}
		s, err := strconv.Unquote(t.text)
		if err != nil {
			return "", fmt.Errorf("string literal %s: %v", t.text, err)
		}
		sb.WriteString(s)
	}
	return sb.String(), nil
}

// checkThreadgroup enforces the emulator's threadgroup rule: the qualifier
// appears only in declarations of kernel-scope variables without an
// initializer, `threadgroup T name[N];` (no pointers, references or
// parameters).
func checkThreadgroup(src *source, ks []*kernel) error {
	toks := src.toks
	for i, t := range toks {
		if t.kind != tIdent || t.text != "threadgroup" {
			continue
		}
		inKernel := false
		for _, k := range ks {
			if i > k.body[0] && i < k.body[1] {
				inKernel = true
			}
		}
		if !inKernel {
			return errorf(src.path, t.line, "threadgroup outside a kernel body: the emulator supports threadgroup only for variables declared in a kernel (`threadgroup float tile[256];`), not for parameters, pointers or helper functions")
		}
		if i > 0 && toks[i-1].text != ";" && toks[i-1].text != "{" && toks[i-1].text != "}" {
			return errorf(src.path, t.line, "threadgroup must start a declaration statement (`threadgroup float tile[256];`)")
		}
		brackets := 0
		for j := i + 1; j < len(toks); j++ {
			s := toks[j].text
			if s == ";" && brackets == 0 {
				break
			}
			switch s {
			case "[":
				brackets++
			case "]":
				brackets--
			case "*", "&", "=", "(", "{", ",":
				if brackets == 0 {
					return errorf(src.path, t.line, "threadgroup declaration with %q: the emulator supports only `threadgroup T name[N]...;` (one variable, no pointer, reference or initializer)", s)
				}
			}
		}
	}
	return nil
}

// parseArgStructs reads the structs of golf_args.h: `struct Name { T f; ... };`
// with T one of uint, int, float.
func parseArgStructs(src *source) ([]argStruct, error) {
	toks := src.toks
	var out []argStruct
	for i := 0; i < len(toks); i++ {
		if toks[i].text != "struct" {
			continue
		}
		line := toks[i].line
		if i+2 >= len(toks) || toks[i+1].kind != tIdent || toks[i+2].text != "{" {
			return nil, errorf(src.path, line, "want `struct Name {`")
		}
		s := argStruct{name: toks[i+1].text, line: line}
		end := matchClose(toks, i+2)
		if end < 0 || end+1 >= len(toks) || toks[end+1].text != ";" {
			return nil, errorf(src.path, line, "struct %s: want `};` at the end", s.name)
		}
		body := toks[i+3 : end]
		for len(body) > 0 {
			if len(body) < 3 || body[2].text != ";" || body[1].kind != tIdent {
				return nil, errorf(src.path, body[0].line, "struct %s: want fields `type name;`", s.name)
			}
			switch body[0].text {
			case "uint", "int", "float":
			default:
				return nil, errorf(src.path, body[0].line, "struct %s: field type %s (want uint, int or float)", s.name, body[0].text)
			}
			s.fields = append(s.fields, body[1].text)
			body = body[3:]
		}
		out = append(out, s)
		i = end + 1
	}
	return out, nil
}

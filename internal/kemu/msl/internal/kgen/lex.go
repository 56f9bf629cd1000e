package kgen

import (
	"fmt"
	"strings"
)

// tokKind classifies a token of MSL (C++) source.
type tokKind uint8

const (
	tIdent tokKind = iota
	tNumber
	tString
	tChar
	tPunct
)

// token is one token with the line it starts on.
type token struct {
	kind tokKind
	text string
	line int
}

// define is a function-like or object-like #define.
type define struct {
	name   string
	params []string // nil for an object-like macro
	body   []token
	line   int
}

// source is a lexed file: its tokens outside preprocessor directives, and
// its #defines.
type source struct {
	path    string
	toks    []token
	defines map[string]*define
}

// stripComments replaces comments with spaces (keeping newlines, so line
// numbers stay) and leaves string and character literals alone.
func stripComments(src string) string {
	b := []byte(src)
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		switch {
		case b[i] == '"' || b[i] == '\'':
			q := b[i]
			j := i + 1
			for j < len(b) && b[j] != q && b[j] != '\n' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(b) && b[j] == q {
				j++
			}
			out = append(out, b[i:j]...)
			i = j
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				if b[i] == '\\' && i+1 < len(b) && b[i+1] == '\n' {
					out = append(out, '\\', '\n')
					i += 2
					continue
				}
				out = append(out, ' ')
				i++
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			out = append(out, ' ', ' ')
			i += 2
			for i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/') {
				if b[i] == '\n' {
					out = append(out, '\n')
				} else {
					out = append(out, ' ')
				}
				i++
			}
			if i < len(b) {
				out = append(out, ' ', ' ')
				i += 2
			}
		default:
			out = append(out, b[i])
			i++
		}
	}
	return string(out)
}

// punct2: the two-character punctuators.
var punct2 = []string{"##", "::", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "++", "--"}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// tokenize splits one logical line (or a macro body) into tokens.
func tokenize(s string, line int) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			toks = append(toks, token{tIdent, s[i:j], line})
			i = j
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'):
			j := i + 1
			for j < len(s) && (isIdentChar(s[j]) || s[j] == '.' ||
				((s[j] == '+' || s[j] == '-') && (s[j-1] == 'e' || s[j-1] == 'E' || s[j-1] == 'p' || s[j-1] == 'P'))) {
				j++
			}
			toks = append(toks, token{tNumber, s[i:j], line})
			i = j
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				if j < len(s) && s[j] == '\n' {
					return nil, fmt.Errorf("line %d: unterminated literal", line)
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("line %d: unterminated literal", line)
			}
			kind := tString
			if c == '\'' {
				kind = tChar
			}
			toks = append(toks, token{kind, s[i : j+1], line})
			i = j + 1
		default:
			p := string(c)
			for _, q := range punct2 {
				if strings.HasPrefix(s[i:], q) {
					p = q
					break
				}
			}
			toks = append(toks, token{tPunct, p, line})
			i += len(p)
		}
	}
	return toks, nil
}

// lex splits a file into tokens and #defines. Line continuations join
// directive lines; other directives (#include, #pragma, #if...) are
// skipped: the kernels' declarations must not depend on them.
func lex(path, text string) (*source, error) {
	text = stripComments(text)
	lines := strings.Split(text, "\n")
	src := &source{path: path, defines: map[string]*define{}}
	for i := 0; i < len(lines); i++ {
		start := i
		l := lines[i]
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			toks, err := tokenize(l, i+1)
			if err != nil {
				return nil, fmt.Errorf("%s:%v", path, err)
			}
			src.toks = append(src.toks, toks...)
			continue
		}
		// A directive, with its continuation lines.
		full := strings.TrimRight(l, " \t\r")
		for strings.HasSuffix(full, "\\") && i+1 < len(lines) {
			i++
			full = full[:len(full)-1] + " " + strings.TrimRight(lines[i], " \t\r")
		}
		d := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(full), "#"))
		if !strings.HasPrefix(d, "define") || len(d) == len("define") || !isSpace(d[len("define")]) {
			continue
		}
		def, err := parseDefine(strings.TrimSpace(d[len("define"):]), start+1)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, start+1, err)
		}
		src.defines[def.name] = def
	}
	return src, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// parseDefine parses the text after "#define".
func parseDefine(s string, line int) (*define, error) {
	j := 0
	for j < len(s) && isIdentChar(s[j]) {
		j++
	}
	if j == 0 {
		return nil, fmt.Errorf("#define without a name")
	}
	def := &define{name: s[:j], line: line}
	rest := s[j:]
	if strings.HasPrefix(rest, "(") {
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return nil, fmt.Errorf("#define %s: unterminated parameter list", def.name)
		}
		def.params = []string{}
		for _, p := range strings.Split(rest[1:end], ",") {
			if p = strings.TrimSpace(p); p != "" {
				def.params = append(def.params, p)
			}
		}
		rest = rest[end+1:]
	}
	body, err := tokenize(rest, line)
	if err != nil {
		return nil, err
	}
	def.body = body
	return def, nil
}

// joinTokens writes tokens back as source text, one space between tokens
// except where C++ needs none for readability.
func joinTokens(toks []token) string {
	var sb strings.Builder
	for i, t := range toks {
		if i > 0 && needSpace(toks[i-1].text, t.text) {
			sb.WriteByte(' ')
		}
		sb.WriteString(t.text)
	}
	return sb.String()
}

func needSpace(prev, next string) bool {
	switch next {
	case ",", ")", "]", ">", "*", "&", "(", "[", "<", "::":
		return false
	}
	switch prev {
	case "(", "[", "<", "::":
		return false
	}
	return true
}

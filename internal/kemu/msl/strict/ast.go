package strict

import (
	"encoding/json"
	"fmt"
)

// node is one node of clang's JSON AST dump (the fields the rules read).
type node struct {
	ID                   string     `json:"id"`
	Kind                 string     `json:"kind"`
	Name                 string     `json:"name"`
	Loc                  *srcLoc    `json:"loc"`
	Range                *srcRange  `json:"range"`
	Type                 *qualType  `json:"type"`
	MangledName          string     `json:"mangledName"`
	StorageClass         string     `json:"storageClass"`
	TLS                  string     `json:"tls"`
	Virtual              bool       `json:"virtual"`
	IsImplicit           bool       `json:"isImplicit"`
	Bases                []struct{} `json:"bases"`
	ReferencedDecl       *declRef   `json:"referencedDecl"`
	ReferencedMemberDecl string     `json:"referencedMemberDecl"`
	PreviousDecl         string     `json:"previousDecl"`
	CastKind             string     `json:"castKind"`             // of a cast: FloatingCast, IntegralToFloating, ...
	PartOfExplicitCast   bool       `json:"isPartOfExplicitCast"` // an implicit cast inside static_cast<T>(x), T(x), (T)x
	Opcode               string     `json:"opcode"`               // of a BinaryOperator or UnaryOperator: "*", "-", ...
	Inner                []*node    `json:"inner"`

	// file and line: where the node is, once located (locate).
	file string
	line int
}

type qualType struct {
	QualType string `json:"qualType"`
	// Desugared is the type without its typedefs and substituted template
	// parameters, when clang prints one ("__fp16" for bfloat4's element).
	Desugared string `json:"desugaredQualType"`
}

// canonical is the desugared type when clang printed one, else the type.
func (q *qualType) canonical() string {
	if q == nil {
		return ""
	}
	if q.Desugared != "" {
		return q.Desugared
	}
	return q.QualType
}

type declRef struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// bareLoc is a source location as clang writes it: the file and line only
// when they differ from the previous location written (in document order).
type bareLoc struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

type srcLoc struct {
	bareLoc
	Spelling  *bareLoc `json:"spellingLoc"`
	Expansion *bareLoc `json:"expansionLoc"`
}

type srcRange struct {
	Begin srcLoc `json:"begin"`
	End   srcLoc `json:"end"`
}

// parseAST decodes clang's -ast-dump=json output and locates every node.
func parseAST(b []byte) (*node, error) {
	var root node
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("strict: reading clang's AST: %v", err)
	}
	var l locator
	l.locate(&root, "", 0)
	return &root, nil
}

// locator replays clang's elision of repeated file names and lines: it
// visits locations in the order clang wrote them (each node's loc, then its
// range's begin and end, then its children).
type locator struct {
	file string
	line int
}

// bare updates the current position from one written location.
func (l *locator) bare(b *bareLoc) {
	if b == nil {
		return
	}
	if b.File != "" {
		l.file = b.File
	}
	if b.Line != 0 {
		l.line = b.Line
	}
}

// loc reads one location and returns where its code is: the expansion of
// a macro, or the location itself.
func (l *locator) loc(s *srcLoc) (string, int) {
	if s.Spelling != nil || s.Expansion != nil {
		l.bare(s.Spelling)
		l.bare(s.Expansion)
		return l.file, l.line
	}
	l.bare(&s.bareLoc)
	return l.file, l.line
}

func (l *locator) locate(n *node, file string, line int) {
	located := false
	if n.Loc != nil {
		file, line = l.loc(n.Loc)
		located = true
	}
	if n.Range != nil {
		f, ln := l.loc(&n.Range.Begin)
		if !located {
			file, line = f, ln
		}
		l.loc(&n.Range.End)
	}
	n.file, n.line = file, line
	for _, c := range n.Inner {
		l.locate(c, file, line)
	}
}

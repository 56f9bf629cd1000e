package metal

// The structure report (golf kernels --backend metal): what each kernel
// of the library does per iteration of its main loop, read from the clang
// AST of the shaders that the strict front end (internal/kemu/msl/strict)
// compiles, without a Mac. The AST types and the loader here are also what
// the structure tests (gemm_structure_test.go, attention_structure_test.go)
// read.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/golf-ml/golf/internal/kemu/msl/strict"
	"github.com/golf-ml/golf/shaders"
)

// astNode is the part of a clang -ast-dump=json node the structure report
// and tests read.
type astNode struct {
	ID           string `json:"id"`
	Kind         string `json:"kind"`
	Name         string `json:"name"`
	MangledName  string `json:"mangledName"`
	PreviousDecl string `json:"previousDecl"`
	Opcode       string `json:"opcode"`
	CastKind     string `json:"castKind"`
	Constexpr    bool   `json:"constexpr"`
	HasInit      bool   `json:"hasInit"`
	HasVar       bool   `json:"hasVar"`
	HasElse      bool   `json:"hasElse"`
	Value        any    `json:"value"`
	Type         struct {
		QualType          string `json:"qualType"`
		DesugaredQualType string `json:"desugaredQualType"`
	} `json:"type"`
	ArgType *struct {
		QualType          string `json:"qualType"`
		DesugaredQualType string `json:"desugaredQualType"`
	} `json:"argType"` // of sizeof
	ReferencedDecl *astNode   `json:"referencedDecl"`
	Inner          []*astNode `json:"inner"`
}

func (n *astNode) walk(f func(*astNode)) {
	f(n)
	for _, c := range n.Inner {
		c.walk(f)
	}
}

// desugared is the node's type with typedefs resolved.
func (n *astNode) desugared() string {
	if n.Type.DesugaredQualType != "" {
		return n.Type.DesugaredQualType
	}
	return n.Type.QualType
}

// astFlags are clang's flags for the structure AST: the strict front end's
// compile (C++17, arm64-apple-macos14, its metal_stdlib at stdlib, MSL 3.1)
// without its warnings, dumping the AST.
func astFlags(stdlib, include string) []string {
	return []string{"-x", "c++", "-std=c++17", "-target", "arm64-apple-macos14", "-fsyntax-only",
		"-nostdinc", "-nostdinc++", "-isystem", stdlib,
		"-D__METAL_VERSION__=310", "-fno-exceptions", "-fno-rtti", "-Wno-unknown-attributes",
		"-I", include, "-Xclang", "-ast-dump=json"}
}

// sourceTree names the directories of the shaders and of the strict
// metal_stdlib: what the binary embeds, written out (extract), or the
// source tree's own (the tests').
type sourceTree struct {
	shaderDir, stdlibDir string
}

func (s sourceTree) shaders() string { return s.shaderDir }
func (s sourceTree) stdlib() string  { return s.stdlibDir }

// extract writes the embedded sources under dir.
func extract(dir string) (sourceTree, error) {
	s := sourceTree{filepath.Join(dir, "shaders"), filepath.Join(dir, "include")}
	if err := copyFS(s.shaders(), shaders.FS()); err != nil {
		return s, err
	}
	return s, copyFS(s.stdlib(), strict.IncludeFS())
}

// copyFS writes every file of fsys under dir.
func copyFS(dir string, fsys fs.FS) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// astOf compiles file (a shader of src, or a path) with src's strict
// metal_stdlib and returns the AST: the declarations named by filter
// (-ast-dump-filter), each with its template instantiations, or the whole
// translation unit for filter "".
func astOf(src sourceTree, clang, file, filter string) ([]*astNode, error) {
	if !filepath.IsAbs(file) {
		file = filepath.Join(src.shaders(), file)
	}
	args := astFlags(src.stdlib(), src.shaders())
	if filter != "" {
		args = append(args, "-Xclang", "-ast-dump-filter="+filter)
	}
	cmd := exec.Command(clang, append(args, file)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("metal: clang %s: %v\n%s", filepath.Base(file), err, errOut.String())
	}
	var nodes []*astNode
	dec := json.NewDecoder(&out)
	for {
		n := new(astNode)
		err := dec.Decode(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("metal: reading clang's AST of %s: %v", filepath.Base(file), err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// elemOf names the first element type in a clang type string: half is
// _Float16 and bfloat __fp16 in the strict metal_stdlib.
func elemOf(qt string) string {
	for _, e := range []struct{ spelled, msl string }{{"_Float16", "half"}, {"__fp16", "bfloat"}, {"float", "float"}} {
		if i := strings.Index(qt, e.spelled); i >= 0 && !strings.Contains(qt[:i], "_Float16") && !strings.Contains(qt[:i], "__fp16") {
			return e.msl
		}
	}
	return ""
}

var (
	extVector = regexp.MustCompile(`ext_vector_type\((\d+)\)`)
	scalarTok = regexp.MustCompile(`\b(_Float16|__fp16|float|unsigned int|uint|int|unsigned short|ushort|short|unsigned char|uchar|char|unsigned long|ulong|long)\b`)
)

// loadWidth is the bytes of a value of clang type qt, 0 if unknown.
func loadWidth(qt string) int {
	size := map[string]int{"_Float16": 2, "__fp16": 2, "float": 4, "unsigned int": 4, "uint": 4, "int": 4,
		"unsigned short": 2, "ushort": 2, "short": 2, "unsigned char": 1, "uchar": 1, "char": 1,
		"unsigned long": 8, "ulong": 8, "long": 8}
	s := size[scalarTok.FindString(qt)]
	if m := extVector.FindStringSubmatch(qt); m != nil {
		n := 0
		for _, c := range m[1] {
			n = n*10 + int(c-'0')
		}
		s *= n
	}
	return s
}

// deviceLoads lists the widths of the reads of device memory in n: the
// lvalue-to-rvalue conversions of expressions in address space 1.
func deviceLoads(n *astNode) []int {
	var w []int
	n.walk(func(c *astNode) {
		if c.Kind == "ImplicitCastExpr" && c.CastKind == "LValueToRValue" && len(c.Inner) == 1 &&
			strings.Contains(c.Inner[0].desugared(), "address_space(1)") {
			w = append(w, loadWidth(c.Inner[0].desugared()))
		}
	})
	return w
}

// StructureRow is one kernel instantiation of the structure report.
//
// What is counted, on the clang AST of the instantiation and of every
// shader function it calls (transitively, each call site walked anew, the
// strict metal_stdlib's functions not entered):
//
//   - Threads: the threads per threadgroup the host dispatches it with,
//     when its tiling fixes them (requiredThreads, the count Open checks
//     every pipeline against and the ops dispatch); 0 when the op sizes its
//     threadgroups at dispatch time from the pipeline's limit and the shape.
//   - Threadgroup: its static threadgroup memory in bytes, the sum the
//     strict front end's threadgroup-memory rule compares with 32 KiB
//     (strict.Result.Instances).
//   - MaxLoad, MaxStore: the widest device-memory read and write in bytes.
//     A read is an lvalue-to-rvalue conversion of an lvalue in address
//     space 1 (device) that is not itself a pointer, a compound assignment
//     (+=, ...) or ++/-- of one, or a simdgroup_load from a device pointer;
//     a write is an assignment, compound assignment or ++/-- of such an
//     lvalue, or a simdgroup_store to a device pointer. The width is the
//     lvalue's type's size (the pointee of the cast: *(device const uint4*)p
//     is 16, a device bfloat element 2, a device bfloat4 8); a
//     simdgroup_load or _store counts as the matrix's element size (its
//     pointer's pointee: how Apple's compiler splits the 8×8 access is not
//     in the AST). Atomics are not counted. 0: none.
//   - Loop: the kernel's main loop. Loops are for, while and do statements;
//     a for loop whose trip count clang's AST gives as a constant (its
//     start, bound and step fold to integers: literals, template arguments,
//     constexpr or const variables, sizeof and calls of constexpr
//     functions) is a constant-trip loop, multiplied out into the loop
//     around it; every other loop is a run-time loop. The main loop is,
//     among the run-time loops that contain an MMA and no run-time loop
//     that contains one, the one with the most MMAs per iteration (the
//     first, in the walk's order, of equals); in a kernel without MMAs, the
//     same with device reads in place of MMAs. Loop names it: the function
//     whose body holds it (a helper with its integer template arguments,
//     the kernel by its template's name) and its ordinal among the loops
//     of that function, in source order ("gemm_simd loop 3").
//   - MMAs, Barriers: the simdgroup_multiply and simdgroup_multiply_accumulate
//     calls and the threadgroup_barrier calls per iteration of the main
//     loop: call sites in its body, through the calls it makes, each
//     multiplied by the trip counts of the constant-trip loops around it
//     inside the main loop. A site inside a nested run-time loop counts
//     once; a site under an if counts whatever the condition, but for a
//     condition that folds to a constant (a template bool), whose branch
//     not taken is not walked.
//   - ConstTiles: whether the tile loops are bounded by compile-time
//     constants (template or constexpr parameters): the tile loops are the
//     loops nested in the outermost run-time loop around (or equal to) the
//     main loop, less the main loop and the run-time loops between (those
//     stream over k or the sequence, run-time by nature), through calls;
//     with none left, the main loop itself. True when each one's bound
//     (the right operand of its condition) folds to a constant.
type StructureRow struct {
	Kernel      Kernel
	Flavour     Flavour
	Elem        string
	Host        string // the library name
	Function    string // the kernel function (the template's name)
	Threads     int
	Threadgroup int
	MaxLoad     int
	MaxStore    int
	// Arrays are the threadgroup variables the kernel declares, in
	// declaration order, with their element types (float, half, bfloat,
	// ...: the staged tiles' dtype).
	Arrays     []ThreadgroupArray
	Loop       string // "" when the kernel has no main loop
	MMAs       int
	Barriers   int
	ConstTiles bool
}

// ThreadgroupArray is one threadgroup variable of a kernel.
type ThreadgroupArray struct {
	Name, Elem string
	Type       string // as clang prints it
}

// ErrNoClangForStructure is returned by StructureReport without a clang
// to run.
var ErrNoClangForStructure = errors.New("metal: the structure report runs clang++ (as the strict front end does) and found none on PATH (clang++, clang++-14 … clang++-20): install clang (Debian/Ubuntu: apt-get install clang), or name one with GOLF_CLANG")

// hostPrelude redefines instantiate_kernel (golf_args.h) so that each
// instantiation also records its host name beside the instantiated
// function, where the AST shows both.
const hostPrelude = `#include <metal_stdlib>
using namespace metal;
#include "golf_args.h"
#undef instantiate_kernel
template <typename F> struct golf_structure_host { const char* host; F* fn; };
#define golf_structure_cat2(a, b) a##b
#define golf_structure_cat(a, b) golf_structure_cat2(a, b)
#define instantiate_kernel(host, func, ...) \
  template decltype(func<__VA_ARGS__>) func<__VA_ARGS__>; \
  constexpr golf_structure_host<decltype(func<__VA_ARGS__>)> golf_structure_cat(golf_structure_host_, __COUNTER__) = {host, &func<__VA_ARGS__>};
`

// StructureClang is the clang++ the report runs: strict.FindClang's
// ($GOLF_CLANG, else clang++, else clang++-N), or ErrNoClangForStructure.
func StructureClang() (string, error) {
	c, err := strict.FindClang()
	if err != nil {
		if errors.Is(err, strict.ErrNoClang) {
			return "", ErrNoClangForStructure
		}
		return "", fmt.Errorf("%w (%v)", ErrNoClangForStructure, err)
	}
	return c, nil
}

// StructureReport builds the report for every kernel of the registry, in
// both flavours and all three element types, from the shaders and the
// strict metal_stdlib the binary embeds. clang is the clang++ to run (""
// finds one as the strict front end does: strict.FindClang).
func StructureReport(clang string) ([]StructureRow, error) {
	if clang == "" {
		c, err := StructureClang()
		if err != nil {
			return nil, err
		}
		clang = c
	}
	dir, err := os.MkdirTemp("", "golf-structure-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src, err := extract(dir)
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(shaders.FS(), "*.metal")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var files []string
	unit := hostPrelude
	for _, n := range names {
		files = append(files, filepath.Join(src.shaders(), n))
		unit += fmt.Sprintf("#include %q\n", n)
	}
	unitFile := filepath.Join(dir, "structure.metal")
	if err := os.WriteFile(unitFile, []byte(unit), 0o644); err != nil {
		return nil, err
	}

	// The strict front end's threadgroup sums, beside this AST.
	type strictOut struct {
		r   strict.Result
		err error
	}
	done := make(chan strictOut, 1)
	go func() {
		r, err := strict.Analyze(strict.Config{Clang: clang, Version: 310, Include: src.shaders(), Stdlib: src.stdlib()}, files)
		done <- strictOut{r, err}
	}()
	nodes, err := astOf(src, clang, unitFile, "")
	so := <-done
	if err != nil {
		return nil, err
	}
	if so.err != nil {
		return nil, so.err
	}
	a := newStructure(nodes)
	var rows []StructureRow
	for _, k := range Kernels {
		for _, f := range []Flavour{Simd, Portable} {
			for _, e := range ElemTypes {
				host := KernelName(k.Op, k.Dir, f, e)
				fn := a.hosts[host]
				if fn == nil {
					return nil, fmt.Errorf("metal: kernel %s of the registry is not instantiated in the shaders' AST", host)
				}
				tg, ok := so.r.Instances[fn.MangledName]
				if !ok {
					return nil, fmt.Errorf("metal: the strict front end measured no threadgroup memory for %s (%s)", host, fn.MangledName)
				}
				row := StructureRow{Kernel: k, Flavour: f, Elem: e, Host: host, Function: fn.Name, Threadgroup: tg}
				if n := requiredThreads(k, f); n > 1 {
					row.Threads = n
				}
				a.kernel(fn, &row)
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

// WriteStructure prints rows as a table.
func WriteStructure(w io.Writer, rows []StructureRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KERNEL\tFLAVOUR\tELEM\tTHREADS\tTG BYTES\tLOAD B\tSTORE B\tMMA/ITER\tBARRIERS/ITER\tTILES\tMAIN LOOP")
	for _, r := range rows {
		threads := "dispatch"
		if r.Threads > 0 {
			threads = strconv.Itoa(r.Threads)
		}
		tiles, loop, mma, bar := "run-time", r.Loop, strconv.Itoa(r.MMAs), strconv.Itoa(r.Barriers)
		if r.ConstTiles {
			tiles = "const"
		}
		if r.Loop == "" {
			tiles, loop, mma, bar = "-", "-", "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Host, r.Flavour, r.Elem, threads, r.Threadgroup,
			r.MaxLoad, r.MaxStore, mma, bar, tiles, loop)
	}
	return tw.Flush()
}

// structure indexes one translation unit's AST.
type structure struct {
	funcs map[string]*astNode // function definitions of shader code, by canonical id
	vars  map[string]*astNode // variables, by id
	canon map[string]string   // a redeclaration's id to its first declaration's
	hosts map[string]*astNode // kernel instantiations by host name
	label map[*astNode]string // a function definition's name for the report
	loops map[*astNode]int    // a loop's ordinal in its function
}

func newStructure(nodes []*astNode) *structure {
	s := &structure{funcs: map[string]*astNode{}, vars: map[string]*astNode{}, canon: map[string]string{},
		hosts: map[string]*astNode{}, label: map[*astNode]string{}, loops: map[*astNode]int{}}
	var hostVars []*astNode
	var index func(n *astNode, library bool)
	index = func(n *astNode, library bool) {
		if n.Kind == "NamespaceDecl" && (n.Name == "metal" || n.Name == "__msl") {
			library = true
		}
		if n.PreviousDecl != "" {
			s.canon[n.ID] = n.PreviousDecl
		}
		switch n.Kind {
		case "VarDecl":
			s.vars[n.ID] = n
			if strings.HasPrefix(n.Name, "golf_structure_host_") {
				hostVars = append(hostVars, n)
			}
		case "FunctionDecl", "CXXMethodDecl":
			if !library && hasBody(n) {
				s.funcs[n.ID] = n
				s.label[n] = funcLabel(n)
				k := 0
				n.walk(func(c *astNode) {
					if isLoop(c) {
						k++
						s.loops[c] = k
					}
				})
			}
		}
		for _, c := range n.Inner {
			index(c, library)
		}
	}
	for _, n := range nodes {
		index(n, false)
	}
	for _, v := range hostVars {
		host, fn := "", ""
		v.walk(func(c *astNode) {
			if c.Kind == "StringLiteral" {
				if q, ok := c.Value.(string); ok {
					host, _ = strconv.Unquote(q)
				}
			}
			if c.Kind == "DeclRefExpr" && c.ReferencedDecl != nil && c.ReferencedDecl.Kind == "FunctionDecl" {
				fn = c.ReferencedDecl.ID
			}
		})
		if f := s.fn(fn); host != "" && f != nil {
			s.hosts[host] = f
		}
	}
	return s
}

func hasBody(n *astNode) bool {
	for _, c := range n.Inner {
		if c.Kind == "CompoundStmt" {
			return true
		}
	}
	return false
}

func isLoop(n *astNode) bool {
	switch n.Kind {
	case "ForStmt", "WhileStmt", "DoStmt", "CXXForRangeStmt":
		return true
	}
	return false
}

// funcLabel is a function's name with its integer template arguments:
// attention_fwd_simd_tile<64> (a true bool argument, which clang writes as
// -1, is "true").
func funcLabel(n *astNode) string {
	var ints []string
	for _, c := range n.Inner {
		if c.Kind == "TemplateArgument" {
			switch v := c.Value.(type) {
			case float64:
				if v == -1 {
					ints = append(ints, "true")
				} else {
					ints = append(ints, strconv.FormatInt(int64(v), 10))
				}
			}
		}
	}
	if len(ints) == 0 {
		return n.Name
	}
	return n.Name + "<" + strings.Join(ints, ",") + ">"
}

// fn is the definition of the function declared with id, nil if none in
// shader code.
func (s *structure) fn(id string) *astNode {
	for i := 0; i < 64 && id != ""; i++ {
		if f := s.funcs[id]; f != nil {
			return f
		}
		id = s.canon[id]
	}
	return nil
}

// loopStat is one run-time loop of a kernel's walk.
type loopStat struct {
	label          string
	mma, barriers  int
	mmaIn, loadIn  bool // contains an MMA, a device read (at any depth)
	innerMMA       bool // a run-time loop nested in it contains an MMA
	innerLoad      bool // ... a device read
	outer          *loopStat
	tileLoops      int // loops nested in it (constant-trip or run-time)
	tileConstBound int // of which bounded by a constant
	constBound     bool
}

// frame is one enclosing loop of the walk: a constant-trip loop's trip
// count, or a run-time loop.
type frame struct {
	trip int64
	loop *loopStat
}

type kernelWalk struct {
	s        *structure
	stack    []frame
	loops    []*loopStat
	maxLoad  int
	maxStore int
	fnStack  []*astNode
	arrays   []ThreadgroupArray
}

// kernel fills row's AST columns from the kernel instantiation fn.
func (s *structure) kernel(fn *astNode, row *StructureRow) {
	w := &kernelWalk{s: s}
	w.call(fn)
	row.MaxLoad, row.MaxStore, row.Arrays = w.maxLoad, w.maxStore, w.arrays
	pick := func(has func(*loopStat) bool, inner func(*loopStat) bool, count func(*loopStat) int) *loopStat {
		var best *loopStat
		for _, l := range w.loops {
			if has(l) && !inner(l) && (best == nil || count(l) > count(best)) {
				best = l
			}
		}
		return best
	}
	main := pick(func(l *loopStat) bool { return l.mmaIn }, func(l *loopStat) bool { return l.innerMMA },
		func(l *loopStat) int { return l.mma })
	if main == nil {
		main = pick(func(l *loopStat) bool { return l.loadIn }, func(l *loopStat) bool { return l.innerLoad },
			func(*loopStat) int { return 0 })
	}
	if main == nil {
		return
	}
	row.Loop, row.MMAs, row.Barriers = main.label, main.mma, main.barriers
	// The tile loops: those nested in the outermost run-time loop around
	// the main loop, less the main loop and the run-time loops between.
	top, n, c := main, 0, 0
	for ; top.outer != nil; top = top.outer {
		n++
		if top.constBound {
			c++
		}
	}
	n, c = top.tileLoops-n, top.tileConstBound-c
	if n > 0 {
		row.ConstTiles = c == n
	} else {
		row.ConstTiles = main.constBound
	}
}

// call walks the body of function definition fn (once per call site).
func (w *kernelWalk) call(fn *astNode) {
	if len(w.fnStack) > 32 {
		return // MSL has no recursion (the strict front end's rule)
	}
	for _, f := range w.fnStack {
		if f == fn {
			return
		}
	}
	w.fnStack = append(w.fnStack, fn)
	for _, c := range fn.Inner {
		if c.Kind == "CompoundStmt" {
			w.stmt(c)
		}
	}
	w.fnStack = w.fnStack[:len(w.fnStack)-1]
}

// site adds one call site of an MMA (mma) or a barrier to every enclosing
// run-time loop, multiplied by the constant trips between.
func (w *kernelWalk) site(mma bool) {
	prod := int64(1)
	innermost := true
	for i := len(w.stack) - 1; i >= 0; i-- {
		f := w.stack[i]
		if f.loop == nil {
			prod *= f.trip
			continue
		}
		if mma {
			f.loop.mma += int(prod)
			if innermost {
				f.loop.mmaIn = true
			} else {
				f.loop.mmaIn, f.loop.innerMMA = true, true
			}
		} else {
			f.loop.barriers += int(prod)
		}
		innermost = false
	}
}

// load notes a device read of width bytes.
func (w *kernelWalk) load(width int) {
	w.maxLoad = max(w.maxLoad, width)
	innermost := true
	for i := len(w.stack) - 1; i >= 0; i-- {
		if l := w.stack[i].loop; l != nil {
			l.loadIn = true
			if !innermost {
				l.innerLoad = true
			}
			innermost = false
		}
	}
}

// devicePointer matches a pointer to device memory as clang prints it.
var devicePointer = regexp.MustCompile(`(^|[\s(<,])device\b.*\*\s*$`)

// deviceLvalue is the width of a device-memory lvalue of type n (0 if n
// is not one: another address space, or a pointer variable).
func deviceLvalue(n *astNode) (int, bool) {
	t := strings.TrimSpace(n.desugared())
	if !strings.Contains(t, "address_space(1)") || strings.HasSuffix(t, "*") || strings.HasSuffix(t, "&") {
		return 0, false
	}
	return loadWidth(t), true
}

// calleeName is the name of the function a call expression calls.
func calleeName(call *astNode) (string, string) {
	if len(call.Inner) == 0 {
		return "", ""
	}
	var ref *astNode
	call.Inner[0].walk(func(d *astNode) {
		if ref == nil && d.Kind == "DeclRefExpr" && d.ReferencedDecl != nil {
			ref = d.ReferencedDecl
		}
	})
	if ref == nil {
		return "", ""
	}
	return ref.Name, ref.ID
}

func (w *kernelWalk) stmt(n *astNode) {
	switch n.Kind {
	case "ForStmt", "WhileStmt", "DoStmt", "CXXForRangeStmt":
		w.loop(n)
		return
	case "VarDecl":
		if t := n.Type.QualType; strings.Contains(t, "address_space(3)") && len(w.fnStack) == 1 {
			w.arrays = append(w.arrays, ThreadgroupArray{Name: n.Name, Elem: elemOf(n.desugared()), Type: t})
		}
	case "IfStmt":
		if !n.HasInit && !n.HasVar && len(n.Inner) >= 2 {
			if v, ok := w.s.eval(n.Inner[0], nil, 0); ok {
				w.stmt(n.Inner[0])
				switch {
				case v != 0:
					w.stmt(n.Inner[1])
				case n.HasElse && len(n.Inner) >= 3:
					w.stmt(n.Inner[2])
				}
				return
			}
		}
	case "ConditionalOperator":
		if len(n.Inner) == 3 {
			if v, ok := w.s.eval(n.Inner[0], nil, 0); ok {
				if v != 0 {
					w.stmt(n.Inner[1])
				} else {
					w.stmt(n.Inner[2])
				}
				return
			}
		}
	case "ImplicitCastExpr":
		if n.CastKind == "LValueToRValue" && len(n.Inner) == 1 {
			if b, ok := deviceLvalue(n.Inner[0]); ok {
				w.load(b)
			}
		}
	case "BinaryOperator":
		if n.Opcode == "=" && len(n.Inner) == 2 {
			if b, ok := deviceLvalue(n.Inner[0]); ok {
				w.maxStore = max(w.maxStore, b)
			}
		}
	case "CompoundAssignOperator":
		if len(n.Inner) == 2 {
			if b, ok := deviceLvalue(n.Inner[0]); ok {
				w.load(b)
				w.maxStore = max(w.maxStore, b)
			}
		}
	case "UnaryOperator":
		if (n.Opcode == "++" || n.Opcode == "--") && len(n.Inner) == 1 {
			if b, ok := deviceLvalue(n.Inner[0]); ok {
				w.load(b)
				w.maxStore = max(w.maxStore, b)
			}
		}
	case "CallExpr":
		name, id := calleeName(n)
		switch name {
		case "simdgroup_multiply", "simdgroup_multiply_accumulate":
			w.site(true)
		case "threadgroup_barrier":
			w.site(false)
		case "simdgroup_load", "simdgroup_store":
			if len(n.Inner) >= 3 {
				// The pointer's type: clang prints a pointer to device
				// memory as "device T const *", its pointee (an lvalue)
				// with address_space(1).
				t := n.Inner[2].desugared()
				if strings.Contains(t, "address_space(1)") || devicePointer.MatchString(t) {
					b := loadWidth(t)
					if name == "simdgroup_load" {
						w.load(b)
					} else {
						w.maxStore = max(w.maxStore, b)
					}
				}
			}
		}
		for _, c := range n.Inner {
			w.stmt(c)
		}
		if f := w.s.fn(id); f != nil {
			w.call(f)
		}
		return
	}
	for _, c := range n.Inner {
		w.stmt(c)
	}
}

// loop walks a loop statement: a constant-trip loop multiplies what it
// holds; any other is a run-time loop of its own.
func (w *kernelWalk) loop(n *astNode) {
	trip, bounded := w.s.tripCount(n)
	for i := len(w.stack) - 1; i >= 0; i-- {
		if l := w.stack[i].loop; l != nil {
			l.tileLoops++
			if bounded {
				l.tileConstBound++
			}
		}
	}
	f := frame{trip: trip}
	if trip <= 0 {
		fn := w.fnStack[len(w.fnStack)-1]
		name := w.s.label[fn]
		if len(w.fnStack) == 1 {
			name = fn.Name // the kernel: its host name says the rest
		}
		l := &loopStat{label: fmt.Sprintf("%s loop %d", name, w.s.loops[n]), constBound: bounded}
		for i := len(w.stack) - 1; i >= 0; i-- {
			if o := w.stack[i].loop; o != nil {
				l.outer = o
				break
			}
		}
		w.loops = append(w.loops, l)
		f = frame{loop: l}
	}
	w.stack = append(w.stack, f)
	for _, c := range n.Inner {
		w.stmt(c)
	}
	w.stack = w.stack[:len(w.stack)-1]
}

// tripCount is a for loop's constant trip count (0: not constant) and
// whether its bound (the right operand of its condition) is constant.
func (s *structure) tripCount(n *astNode) (int64, bool) {
	if n.Kind != "ForStmt" || len(n.Inner) != 5 {
		return 0, false
	}
	init, cond, inc := n.Inner[0], n.Inner[2], n.Inner[3]
	if cond.Kind != "BinaryOperator" || len(cond.Inner) != 2 {
		return 0, false
	}
	bound, bounded := s.eval(cond.Inner[1], nil, 0)
	// The loop variable: declared by the init, compared on the left.
	v := refOf(cond.Inner[0])
	if v == "" || !bounded {
		return 0, bounded
	}
	var start int64
	found := false
	init.walk(func(c *astNode) {
		if !found && c.Kind == "VarDecl" && c.ID == v && len(c.Inner) == 1 {
			start, found = s.eval(c.Inner[0], nil, 0)
		}
	})
	if !found {
		return 0, bounded
	}
	var step int64
	switch {
	case inc.Kind == "UnaryOperator" && len(inc.Inner) == 1 && refOf(inc.Inner[0]) == v:
		switch inc.Opcode {
		case "++":
			step = 1
		case "--":
			step = -1
		}
	case inc.Kind == "CompoundAssignOperator" && len(inc.Inner) == 2 && refOf(inc.Inner[0]) == v:
		d, ok := s.eval(inc.Inner[1], nil, 0)
		if !ok {
			return 0, bounded
		}
		switch inc.Opcode {
		case "+=":
			step = d
		case "-=":
			step = -d
		}
	}
	var trips int64
	switch {
	case step > 0 && (cond.Opcode == "<" || cond.Opcode == "!="):
		trips = (bound - start + step - 1) / step
	case step > 0 && cond.Opcode == "<=":
		trips = (bound-start)/step + 1
	case step < 0 && cond.Opcode == ">":
		trips = (start - bound - step - 1) / -step
	case step < 0 && cond.Opcode == ">=":
		trips = (start-bound)/-step + 1
	default:
		return 0, bounded
	}
	if trips <= 0 {
		// Never runs: nothing in it happens, which a factor cannot say;
		// the loop is left as a run-time one.
		return 0, bounded
	}
	return trips, bounded
}

// refOf is the id of the variable an expression names (through implicit
// casts and parentheses), "" if it names none.
func refOf(n *astNode) string {
	for (n.Kind == "ImplicitCastExpr" || n.Kind == "ParenExpr") && len(n.Inner) == 1 {
		n = n.Inner[0]
	}
	if n.Kind == "DeclRefExpr" && n.ReferencedDecl != nil {
		return n.ReferencedDecl.ID
	}
	return ""
}

// eval folds an integer expression to a constant: literals, template
// arguments, constexpr and const variables with constant initialisers,
// sizeof of a scalar or vector, the integer operators, ?:, and calls of
// functions whose body is one return statement (constexpr functions) on
// constant arguments. env binds the parameters of such a call.
func (s *structure) eval(n *astNode, env map[string]int64, depth int) (int64, bool) {
	if n == nil || depth > 64 {
		return 0, false
	}
	switch n.Kind {
	case "IntegerLiteral":
		if v, ok := n.Value.(string); ok {
			x, err := strconv.ParseInt(v, 10, 64)
			return x, err == nil
		}
	case "CXXBoolLiteralExpr":
		if v, ok := n.Value.(bool); ok {
			if v {
				return 1, true
			}
			return 0, true
		}
	case "ConstantExpr":
		if v, ok := n.Value.(string); ok {
			if x, err := strconv.ParseInt(v, 10, 64); err == nil {
				return x, true
			}
		}
		if len(n.Inner) == 1 {
			return s.eval(n.Inner[0], env, depth+1)
		}
	case "ImplicitCastExpr", "ParenExpr", "CStyleCastExpr", "CXXStaticCastExpr", "CXXFunctionalCastExpr", "ExprWithCleanups":
		if len(n.Inner) == 1 && !strings.Contains(n.desugared(), "float") && !strings.Contains(n.desugared(), "*") {
			return s.eval(n.Inner[0], env, depth+1)
		}
	case "SubstNonTypeTemplateParmExpr":
		if len(n.Inner) > 0 {
			return s.eval(n.Inner[len(n.Inner)-1], env, depth+1)
		}
	case "UnaryExprOrTypeTraitExpr":
		if n.Name == "sizeof" && n.ArgType != nil {
			t := n.ArgType.DesugaredQualType
			if t == "" {
				t = n.ArgType.QualType
			}
			if b := loadWidth(t); b > 0 {
				return int64(b), true
			}
		}
	case "DeclRefExpr":
		r := n.ReferencedDecl
		if r == nil {
			return 0, false
		}
		if v, ok := env[r.ID]; ok {
			return v, true
		}
		if r.Kind == "VarDecl" {
			if d := s.vars[r.ID]; d != nil && (d.Constexpr || strings.HasPrefix(d.desugared(), "const ")) && len(d.Inner) == 1 {
				return s.eval(d.Inner[0], nil, depth+1)
			}
		}
	case "UnaryOperator":
		if len(n.Inner) == 1 {
			x, ok := s.eval(n.Inner[0], env, depth+1)
			if !ok {
				return 0, false
			}
			switch n.Opcode {
			case "-":
				return -x, true
			case "+":
				return x, true
			case "!":
				return bool64(x == 0), true
			case "~":
				return ^x, true
			}
		}
	case "BinaryOperator":
		if len(n.Inner) != 2 {
			return 0, false
		}
		x, ok := s.eval(n.Inner[0], env, depth+1)
		if !ok {
			return 0, false
		}
		if n.Opcode == "&&" && x == 0 {
			return 0, true
		}
		if n.Opcode == "||" && x != 0 {
			return 1, true
		}
		y, ok := s.eval(n.Inner[1], env, depth+1)
		if !ok {
			return 0, false
		}
		switch n.Opcode {
		case "+":
			return x + y, true
		case "-":
			return x - y, true
		case "*":
			return x * y, true
		case "/":
			if y != 0 {
				return x / y, true
			}
		case "%":
			if y != 0 {
				return x % y, true
			}
		case "<<":
			return x << uint(y&63), true
		case ">>":
			return x >> uint(y&63), true
		case "&":
			return x & y, true
		case "|":
			return x | y, true
		case "^":
			return x ^ y, true
		case "<":
			return bool64(x < y), true
		case "<=":
			return bool64(x <= y), true
		case ">":
			return bool64(x > y), true
		case ">=":
			return bool64(x >= y), true
		case "==":
			return bool64(x == y), true
		case "!=":
			return bool64(x != y), true
		case "&&", "||":
			return bool64(y != 0), true
		}
	case "ConditionalOperator":
		if len(n.Inner) == 3 {
			c, ok := s.eval(n.Inner[0], env, depth+1)
			if !ok {
				return 0, false
			}
			if c != 0 {
				return s.eval(n.Inner[1], env, depth+1)
			}
			return s.eval(n.Inner[2], env, depth+1)
		}
	case "CallExpr":
		_, id := calleeName(n)
		f := s.fn(id)
		if f == nil {
			return 0, false
		}
		var params []string
		var ret *astNode
		for _, c := range f.Inner {
			switch c.Kind {
			case "ParmVarDecl":
				params = append(params, c.ID)
			case "CompoundStmt":
				if len(c.Inner) == 1 && c.Inner[0].Kind == "ReturnStmt" && len(c.Inner[0].Inner) == 1 {
					ret = c.Inner[0].Inner[0]
				}
			}
		}
		if ret == nil || len(params) != len(n.Inner)-1 {
			return 0, false
		}
		args := map[string]int64{}
		for i, p := range params {
			v, ok := s.eval(n.Inner[i+1], env, depth+1)
			if !ok {
				return 0, false
			}
			args[p] = v
		}
		return s.eval(ret, args, depth+1)
	}
	return 0, false
}

func bool64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

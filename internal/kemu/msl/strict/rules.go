package strict

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/golf-ml/golf/internal/kemu/msl/internal/kgen"
)

// ThreadgroupMemoryLimit is the threadgroup memory of one threadgroup on
// every Apple GPU golf supports, in bytes.
const ThreadgroupMemoryLimit = 32 << 10

// reserved are the MSL type names and keywords that are not C++ keywords:
// none may name a variable, parameter, field, function or type.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	words := []string{
		// scalars and keywords of MSL
		"half", "bfloat", "uchar", "ushort", "uint", "ulong", "size_t", "ptrdiff_t",
		"kernel", "vertex", "fragment", "visible", "stitchable", "intersection", "mesh", "object",
		"device", "constant", "thread", "threadgroup", "threadgroup_imageblock", "ray_data", "object_data",
		// templates and opaque types
		"vec", "matrix", "packed_vec", "array", "array_ref", "atomic", "simdgroup_matrix",
		"atomic_int", "atomic_uint", "atomic_bool", "atomic_float", "sampler", "texture_buffer",
		"texture1d", "texture1d_array", "texture2d", "texture2d_array", "texture3d", "texturecube",
		"texturecube_array", "texture2d_ms", "texture2d_ms_array", "depth2d", "depth2d_array",
		"depthcube", "depthcube_array", "depth2d_ms", "depth2d_ms_array", "imageblock",
		"visible_function_table", "intersection_function_table", "acceleration_structure",
		"simdgroup_float8x8", "simdgroup_half8x8", "simdgroup_bfloat8x8",
	}
	for _, w := range words {
		m[w] = true
	}
	for _, s := range []string{"bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "bfloat", "float"} {
		for n := 2; n <= 4; n++ {
			m[fmt.Sprintf("%s%d", s, n)] = true
			m[fmt.Sprintf("packed_%s%d", s, n)] = true
		}
	}
	for _, s := range []string{"half", "bfloat", "float"} {
		for c := 2; c <= 4; c++ {
			for r := 2; r <= 4; r++ {
				m[fmt.Sprintf("%s%dx%d", s, c, r)] = true
			}
		}
	}
	return m
}()

// namedKinds are the declarations whose name the reserved rule checks.
var namedKinds = map[string]bool{
	"VarDecl": true, "ParmVarDecl": true, "FieldDecl": true, "FunctionDecl": true, "CXXMethodDecl": true,
	"CXXRecordDecl": true, "TypedefDecl": true, "TypeAliasDecl": true, "EnumDecl": true,
	"EnumConstantDecl": true, "TemplateTypeParmDecl": true, "NonTypeTemplateParmDecl": true,
	"NamespaceDecl": true, "FunctionTemplateDecl": true, "ClassTemplateDecl": true,
}

// doubleKinds are the nodes whose type the double rule reads: where a
// double can be written (implicit conversions to double are the compile
// rule's -Wdouble-promotion).
var doubleKinds = map[string]bool{
	"VarDecl": true, "ParmVarDecl": true, "FieldDecl": true, "FunctionDecl": true, "CXXMethodDecl": true,
	"TypedefDecl": true, "TypeAliasDecl": true, "FloatingLiteral": true, "CStyleCastExpr": true,
	"CXXFunctionalCastExpr": true, "CXXStaticCastExpr": true,
}

var (
	doubleType = regexp.MustCompile(`\bdouble\b`)
	addrSpace3 = regexp.MustCompile(`__attribute__\(\(address_space\(3\)\)\)`)
	addrSpace2 = regexp.MustCompile(`__attribute__\(\(address_space\(2\)\)\)`)
)

// checker holds the state of one pass over the AST.
type checker struct {
	kernels map[string]kgen.KernelDecl
	stdlib  string // the strict metal_stdlib directory: not shader code
	out     []Violation

	funcs map[string]*fn // by canonical declaration id
	// canon maps a redeclaration's id to its first declaration's.
	canon map[string]string
	tg    map[string]int // threadgroup bytes per kernel
	inst  map[string]int // threadgroup bytes per kernel instantiation, by mangled name
	// decls are the declarations by id (where a call's callee is declared).
	decls map[string]*node
}

// fn is a function definition (a template's instantiations are separate
// functions; the uninstantiated pattern is skipped by the call graph).
type fn struct {
	n        *node
	calls    []string // ids of the functions it references
	barrier  bool     // calls threadgroup_barrier
	tgBytes  int      // threadgroup variables declared in it
	tgVars   []string
	concrete bool // an instantiation or a plain function (not a pattern)
}

// astRules applies the rules that read the AST; it also returns each
// kernel's threadgroup memory (bytes, the most of its instantiations) and
// each kernel instantiation's (by mangled name).
func astRules(root *node, kernels map[string]kgen.KernelDecl, stdlib string) ([]Violation, map[string]int, map[string]int) {
	c := &checker{kernels: kernels, stdlib: stdlib, funcs: map[string]*fn{}, canon: map[string]string{},
		tg: map[string]int{}, inst: map[string]int{}, decls: map[string]*node{}}
	c.redeclarations(root)
	c.walk(root, nil, nil, 0)
	c.recursion()
	c.kernelRules()
	return c.out, c.tg, c.inst
}

// redeclarations fills canon from the previousDecl links, and decls.
func (c *checker) redeclarations(n *node) {
	if n.PreviousDecl != "" {
		c.canon[n.ID] = n.PreviousDecl
	}
	if strings.HasSuffix(n.Kind, "Decl") && n.ID != "" {
		c.decls[n.ID] = n
	}
	for _, ch := range n.Inner {
		c.redeclarations(ch)
	}
}

// id is the canonical id of a declaration: its first declaration's.
func (c *checker) id(id string) string {
	for i := 0; i < 64; i++ {
		p, ok := c.canon[id]
		if !ok {
			break
		}
		id = p
	}
	return id
}

// shader reports whether a node is in shader code (not the strict library,
// not the generated unit).
func (c *checker) shader(n *node) bool {
	return n.file != "" && !strings.HasPrefix(n.file, c.stdlib) && filepath.Base(n.file) != "unit.metal"
}

func (c *checker) report(n *node, rule, format string, args ...any) {
	c.out = append(c.out, Violation{File: filepath.Base(n.file), Line: n.line, Rule: rule, Msg: fmt.Sprintf(format, args...)})
}

// walk visits n; f is the function definition n is in (nil at namespace
// scope), parent the enclosing node.
func (c *checker) walk(n *node, f *fn, parent *node, depth int) {
	if n.Kind == "FunctionDecl" || n.Kind == "CXXMethodDecl" || n.Kind == "CXXConstructorDecl" {
		if hasBody(n) {
			nf := &fn{n: n, concrete: n.MangledName != ""}
			c.funcs[c.id(n.ID)] = nf
			f = nf
		}
	}
	if c.shader(n) {
		c.nodeRules(n, f, parent)
	}
	if f != nil {
		if r := n.ReferencedDecl; r != nil && (r.Kind == "FunctionDecl" || r.Kind == "CXXMethodDecl") {
			f.calls = append(f.calls, c.id(r.ID))
			if r.Name == "threadgroup_barrier" {
				f.barrier = true
			}
		}
		if n.ReferencedMemberDecl != "" {
			f.calls = append(f.calls, c.id(n.ReferencedMemberDecl))
		}
	}
	for _, ch := range n.Inner {
		c.walk(ch, f, n, depth+1)
	}
}

func hasBody(n *node) bool {
	for _, ch := range n.Inner {
		if ch.Kind == "CompoundStmt" {
			return true
		}
	}
	return false
}

// nodeRules are the rules of one node of shader code.
func (c *checker) nodeRules(n *node, f *fn, parent *node) {
	if n.IsImplicit {
		return
	}
	switch n.Kind {
	case "LambdaExpr":
		c.report(n, "lambda", "a lambda expression: MSL has none")
	case "GotoStmt", "IndirectGotoStmt":
		c.report(n, "goto", "goto: MSL has none")
	case "CXXNewExpr", "CXXDeleteExpr":
		c.report(n, "new-delete", "new or delete: MSL has no dynamic allocation")
	case "CXXMethodDecl", "CXXDestructorDecl":
		if n.Virtual {
			c.report(n, "virtual", "virtual function %s: MSL has none", n.Name)
		}
	case "CXXRecordDecl":
		if len(n.Bases) > 0 {
			c.report(n, "derived-class", "%s derives from a base class: MSL has no derived classes", n.Name)
		}
	}
	if n.Kind == "ImplicitCastExpr" {
		c.bfloatConversion(n)
	}
	if namedKinds[n.Kind] && reserved[n.Name] {
		c.report(n, "reserved-name", "%s %q: an MSL type name or keyword cannot name a declaration", strings.TrimSuffix(n.Kind, "Decl"), n.Name)
	}
	if n.Type != nil && doubleKinds[n.Kind] && doubleType.MatchString(n.Type.QualType) {
		c.report(n, "double", "%s of type %s: MSL has no double (write float literals with an f suffix)",
			strings.TrimSuffix(n.Kind, "Decl"), n.Type.QualType)
	}
	if n.Kind == "VarDecl" {
		if n.TLS != "" {
			c.report(n, "thread-local", "thread_local variable %s: MSL has none", n.Name)
		}
		qt := ""
		if n.Type != nil {
			qt = n.Type.QualType
		}
		switch {
		case addrSpace3.MatchString(qt):
			if f == nil {
				c.report(n, "threadgroup-scope", "threadgroup variable %s outside a kernel function", n.Name)
			} else {
				// A template pattern's array of a dependent type (T tile[N])
				// has no size; its instantiations are sized.
				size, err := sizeOf(addrSpace3.ReplaceAllString(qt, ""))
				if err != nil && f.concrete {
					c.report(n, "threadgroup-memory", "threadgroup variable %s: %v", n.Name, err)
				}
				f.tgBytes += size
				f.tgVars = append(f.tgVars, fmt.Sprintf("%s %d B", n.Name, size))
			}
		case f == nil && parent != nil && (parent.Kind == "TranslationUnitDecl" || parent.Kind == "NamespaceDecl") &&
			!addrSpace2.MatchString(qt):
			c.report(n, "program-scope", "program-scope variable %s (%s) is not in the constant address space", n.Name, qt)
		}
	}
}

// bfloatConversion is the bfloat-conversion rule: MSL has no implicit
// conversion to bfloat from float, half or an integer (Apple's compiler:
// "cannot initialize a variable of type 'bfloat' with an rvalue of type
// 'float'"), only static_cast<bfloat>(x), bfloat(x) or (bfloat)x. In the
// strict library bfloat is __fp16, which clang converts implicitly, so every
// implicit FloatingCast or IntegralToFloating to __fp16 (or to a vector of
// it) in shader code is one, in template instantiations too (the AST holds
// them, with T substituted) — but for one artefact of __fp16: clang computes
// every operation on __fp16 in float and narrows the result, so a * b of two
// bfloats is a float narrowed to bfloat, where MSL computes a bfloat. An
// operand whose value MSL types as bfloat (bfloatValued) is no conversion.
func (c *checker) bfloatConversion(n *node) {
	if n.PartOfExplicitCast || (n.CastKind != "FloatingCast" && n.CastKind != "IntegralToFloating") ||
		len(n.Inner) != 1 {
		return
	}
	to := mslType(n.Type)
	if !isBfloat(to) || c.bfloatValued(stripImplicit(n.Inner[0])) {
		return
	}
	c.report(n, "bfloat-conversion", "implicit conversion from %s to %s: MSL requires static_cast<%s>(...)",
		mslType(n.Inner[0].Type), to, to)
}

// stripImplicit skips the parentheses and implicit casts around an
// expression.
func stripImplicit(n *node) *node {
	for len(n.Inner) == 1 && (n.Kind == "ParenExpr" || n.Kind == "ImplicitCastExpr" || n.Kind == "ConstantExpr") {
		n = n.Inner[0]
	}
	return n
}

// bfloatValued reports whether MSL types the expression n (stripped of
// implicit casts) as bfloat, scalar or vector, where clang may type it float:
// an expression of type bfloat; +, −, ×, ÷ of operands that are bfloat or
// integers, at least one bfloat (the usual arithmetic conversions of MSL);
// unary + and −, and ?:, of bfloat operands; a call of a library function
// (exp, max, fma, ...) on bfloat arguments, which MSL resolves to the bfloat
// overload where clang's float promotion picks the float one.
func (c *checker) bfloatValued(n *node) bool {
	if isBfloat(mslType(n.Type)) {
		return true
	}
	switch n.Kind {
	case "BinaryOperator":
		switch n.Opcode {
		case "+", "-", "*", "/":
		default:
			return false
		}
		return len(n.Inner) == 2 && c.bfloatOrInt(n.Inner[0], n.Inner[1])
	case "UnaryOperator":
		return (n.Opcode == "+" || n.Opcode == "-") && len(n.Inner) == 1 && c.bfloatValued(stripImplicit(n.Inner[0]))
	case "ConditionalOperator":
		return len(n.Inner) == 3 && c.bfloatOrInt(n.Inner[1], n.Inner[2])
	case "CallExpr":
		if len(n.Inner) < 2 {
			return false
		}
		callee := stripImplicit(n.Inner[0])
		if callee.ReferencedDecl == nil {
			return false
		}
		if d := c.decls[callee.ReferencedDecl.ID]; d == nil || !strings.HasPrefix(d.file, c.stdlib) {
			return false
		}
		for _, a := range n.Inner[1:] {
			if !c.bfloatValued(stripImplicit(a)) {
				return false
			}
		}
		return true
	}
	return false
}

// bfloatOrInt: operands that are all bfloat or integer, at least one bfloat.
func (c *checker) bfloatOrInt(ops ...*node) bool {
	some := false
	for _, op := range ops {
		op = stripImplicit(op)
		switch {
		case c.bfloatValued(op):
			some = true
		case !integerTypes[mslType(op.Type)]:
			return false
		}
	}
	return some
}

// integerTypes are the scalar integer types as mslType names them.
var integerTypes = map[string]bool{
	"bool": true, "char": true, "signed char": true, "uchar": true, "short": true, "ushort": true,
	"int": true, "uint": true, "long": true, "ulong": true, "long long": true, "unsigned long long": true,
}

var (
	addrSpaceAttr = regexp.MustCompile(`__attribute__\(\(address_space\(\d+\)\)\)`)
	extVector     = regexp.MustCompile(`^(.*?) __attribute__\(\(ext_vector_type\((\d+)\)\)\)$`)
	gccVector     = regexp.MustCompile(`^__attribute__\(\(__vector_size__\((\d+) \* sizeof\(([^)]*)\)\)\)\) (.*)$`)
	clangScalars  = map[string]string{
		"__fp16": "bfloat", "_Float16": "half", "unsigned int": "uint", "unsigned short": "ushort",
		"unsigned char": "uchar", "unsigned long": "ulong",
	}
)

// mslType names a value's type as MSL spells it: the desugared type
// without qualifiers or address space, __fp16 as bfloat, _Float16 as half,
// vectors as bfloat2, float4, ... ("" for no type).
func mslType(q *qualType) string {
	t := addrSpaceAttr.ReplaceAllString(q.canonical(), "")
	for _, w := range []string{"const", "volatile"} {
		t = strings.ReplaceAll(" "+t+" ", " "+w+" ", " ")
	}
	t = strings.TrimSpace(strings.ReplaceAll(t, "metal::", ""))
	lanes := ""
	if m := extVector.FindStringSubmatch(t); m != nil {
		t, lanes = strings.TrimSpace(m[1]), m[2]
	} else if m := gccVector.FindStringSubmatch(t); m != nil {
		t, lanes = strings.TrimSpace(m[3]), m[1]
	}
	if s, ok := clangScalars[t]; ok {
		t = s
	}
	return t + lanes
}

// isBfloat: bfloat or a bfloat vector, as mslType names them.
func isBfloat(t string) bool {
	return strings.TrimRight(t, "234") == "bfloat"
}

// recursion reports every cycle of the call graph of the concrete
// functions.
func (c *checker) recursion() {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	reported := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		f := c.funcs[id]
		if f == nil {
			return
		}
		color[id] = grey
		stack = append(stack, id)
		for _, callee := range f.calls {
			switch color[callee] {
			case white:
				visit(callee)
			case grey:
				// A cycle: callee ... id.
				var names []string
				start := len(stack) - 1
				for start > 0 && stack[start] != callee {
					start--
				}
				for _, s := range stack[start:] {
					names = append(names, c.funcs[s].n.Name)
				}
				key := strings.Join(names, ">")
				if !reported[key] && c.shader(c.funcs[callee].n) {
					reported[key] = true
					c.report(c.funcs[callee].n, "recursion", "recursive call: %s → %s: MSL has no recursion",
						strings.Join(names, " → "), c.funcs[callee].n.Name)
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
	}
	ids := make([]string, 0, len(c.funcs))
	for id := range c.funcs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if color[id] == white {
			visit(id)
		}
	}
}

// kernelRules are the rules of each kernel instantiation: its threadgroup
// memory, threadgroup variables in helpers, and the thread count it assumes.
func (c *checker) kernelRules() {
	ids := make([]string, 0, len(c.funcs))
	for id := range c.funcs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		f := c.funcs[id]
		k, isKernel := c.kernels[f.n.Name]
		if !c.shader(f.n) {
			continue
		}
		if !isKernel {
			if len(f.tgVars) > 0 {
				c.report(f.n, "threadgroup-scope", "function %s declares threadgroup variables (%s): only a kernel function may",
					f.n.Name, strings.Join(f.tgVars, ", "))
			}
			continue
		}
		if !f.concrete {
			continue
		}
		c.tg[k.Name] = max(c.tg[k.Name], f.tgBytes)
		c.inst[f.n.MangledName] = f.tgBytes
		if f.tgBytes > ThreadgroupMemoryLimit {
			c.report(f.n, "threadgroup-memory", "kernel %s (%s) declares %d bytes of threadgroup memory (%s), more than %d",
				k.Name, f.n.Type.QualType, f.tgBytes, strings.Join(f.tgVars, ", "), ThreadgroupMemoryLimit)
		}
		if k.Threads != "" {
			continue
		}
		readsCount := false
		for _, p := range k.Params {
			switch p.Attr {
			case "threads_per_threadgroup", "dispatch_threads_per_threadgroup", "simdgroups_per_threadgroup":
				readsCount = true
			}
		}
		if !readsCount && (f.tgBytes > 0 || c.reachesBarrier(id, map[string]bool{})) {
			c.report(f.n, "threads", "kernel %s synchronises its threadgroup but neither reads [[threads_per_threadgroup]] "+
				"nor declares [[max_total_threads_per_threadgroup(N)]]: the thread count it assumes is checked nowhere", k.Name)
		}
	}
}

// reachesBarrier reports whether function id calls threadgroup_barrier,
// directly or through the functions it calls.
func (c *checker) reachesBarrier(id string, seen map[string]bool) bool {
	f := c.funcs[id]
	if f == nil || seen[id] {
		return false
	}
	seen[id] = true
	if f.barrier {
		return true
	}
	for _, callee := range f.calls {
		if c.reachesBarrier(callee, seen) {
			return true
		}
	}
	return false
}

// scalarSizes are the sizes of the types a threadgroup array may hold.
var scalarSizes = map[string]int{
	"float": 4, "int": 4, "uint": 4, "unsigned int": 4, "_Float16": 2, "__fp16": 2, "half": 2, "bfloat": 2,
	"short": 2, "ushort": 2, "unsigned short": 2, "char": 1, "uchar": 1, "unsigned char": 1, "bool": 1,
	"long": 8, "ulong": 8, "unsigned long": 8,
}

var arrayDims = regexp.MustCompile(`\[(\d+)\]`)

// sizeOf is the size in bytes of a C type as clang prints it: a scalar, a
// vector (float4, metal::half2) or an array of them.
func sizeOf(qt string) (int, error) {
	t := strings.TrimSpace(qt)
	n := 1
	if i := strings.Index(t, "["); i >= 0 {
		for _, m := range arrayDims.FindAllStringSubmatch(t[i:], -1) {
			d, _ := strconv.Atoi(m[1])
			n *= d
		}
		t = strings.TrimSpace(t[:i])
	}
	for _, q := range []string{"const ", "volatile ", "metal::"} {
		t = strings.ReplaceAll(t, q, "")
	}
	t = strings.TrimSpace(t)
	if s, ok := scalarSizes[t]; ok {
		return n * s, nil
	}
	if base := strings.TrimRight(t, "234"); base != t {
		if s, ok := scalarSizes[base]; ok {
			lanes, _ := strconv.Atoi(t[len(base):])
			if lanes == 3 {
				lanes = 4
			}
			return n * s * lanes, nil
		}
	}
	return 0, fmt.Errorf("cannot size type %q", qt)
}

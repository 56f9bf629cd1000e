// Package strict is golf's strict front end for the Metal Shading Language:
// it compiles the shaders a second time, with clang, enforcing what Apple's
// compiler enforces and the emulator's g++ build cannot see, and checks
// the rules of the library that no compiler checks.
//
// # The compile
//
// Every .metal file is compiled by clang (C++17, target arm64-apple-macos14,
// -fsyntax-only) against include/metal_stdlib, a declaration-only MSL 3.1
// library with MSL's rules made real: device, constant and threadgroup
// are clang address spaces 1, 2 (and const) and 3, so a threadgroup pointer
// passed where a device pointer is expected, or a write through constant,
// is a compile error; half and bfloat are builtin types (_Float16, __fp16)
// and macros for keywords, so neither can name a variable; -nostdinc
// -nostdinc++ leave no C++ standard library; -fno-exceptions -fno-rtti make
// throw, try and typeid errors; C++17 makes register one; -Wall -Wextra
// -Werror make every warning an error; -Wdouble-promotion reports every
// implicit floating-point widening (to double; half to float, which the
// library writes out) as a warning that is read as a compile violation, but
// for bfloat's widening to float, which MSL allows and which clang reports
// for every __fp16 operand of arithmetic.
// __METAL_VERSION__ is the MSL version compiled for (310: bfloat exists,
// the features of MSL 3.2 do not). The SIMD-group functions (simd_sum,
// simd_shuffle_down, ...) are declared, as in Apple's metal_simdgroup, for
// scalars and vectors of char, uchar, short, ushort, int, uint, half and
// float only (not bfloat, bool, long or a struct: "no matching function for
// call to 'simd_sum'"), simdgroup_matrix for 8×8 of float, half and bfloat
// only (a static_assert), and simdgroup_load and simdgroup_store for a
// pointer to the matrix's element type.
//
// # The rules
//
// The same compile dumps the AST (clang -ast-dump=json), and the generator's
// parser (internal/kemu/msl/internal/kgen) reads the kernel signatures. A Violation
// names the file, line and rule:
//
//	compile             a clang error (address spaces, const, reserved
//	                    words, exceptions, RTTI, register, the standard
//	                    library, a feature newer than the MSL version, a
//	                    SIMD-group function or matrix of a type Metal does
//	                    not declare, and the static_asserts below)
//	kernel-signature    a signature the generator rejects: a [[buffer(n)]]
//	                    index above 30, a [[threadgroup(n)]] parameter, ...
//	kernel-attributes   a kernel whose position and size parameters
//	                    ([[thread_position_in_grid]], [[threads_per_grid]],
//	                    [[thread_position_in_threadgroup]],
//	                    [[threads_per_threadgroup]],
//	                    [[dispatch_threads_per_threadgroup]],
//	                    [[threadgroup_position_in_grid]],
//	                    [[threadgroups_per_grid]]) are not ushort or uint
//	                    (scalars, 2- or 3-vectors), differ in vector width,
//	                    or type a position and its size differently (MSL
//	                    specification, "Notes on kernel function attributes")
//	bfloat-conversion   an implicit conversion to bfloat from float, half or
//	                    an integer (bfloat b = f; out[i] = f with out a
//	                    device bfloat*; return f; a float argument for a
//	                    bfloat parameter), in template instantiations too:
//	                    MSL has none, only static_cast<bfloat>(x), bfloat(x)
//	                    and (bfloat)x. Arithmetic of bfloats, or of bfloats
//	                    and integers, is bfloat in MSL (clang computes it in
//	                    float), so bfloat c = a * b is none; bfloat c = a * f
//	                    with a float f is one. Not read: compound assignment
//	                    (b += f), whose conversion clang leaves implicit in
//	                    the operator
//	reserved-name       an MSL type name or keyword (float4, vec, kernel, ...)
//	                    used as the name of a variable, function or type
//	lambda, recursion, goto, new-delete, virtual, derived-class,
//	thread-local, double
//	                    C++ that MSL does not have (recursion found on the
//	                    call graph of the instantiated functions)
//	threadgroup-memory  a kernel instantiation whose threadgroup variables
//	                    exceed 32 KiB (the host sets no dynamic threadgroup
//	                    memory, and the generator rejects [[threadgroup(n)]]
//	                    parameters, so the static total is the total)
//	threadgroup-scope   a threadgroup variable outside a kernel function
//	program-scope       a program-scope variable not in constant memory
//	threads             a kernel that synchronises through barriers or
//	                    threadgroup memory but neither reads
//	                    [[threads_per_threadgroup]] nor declares
//	                    [[max_total_threads_per_threadgroup(N)]]: the thread
//	                    count it assumes would be checked nowhere. (The
//	                    emulator requires every dispatch of a kernel with
//	                    the attribute to use exactly N threads, so the host's
//	                    counts are checked by every emulated test; N itself
//	                    must be a constant from 1 to 1024, a static_assert.)
//	arg-struct          a buffer argument of struct type not declared in
//	                    golf_args.h (its layout would be checked against
//	                    nothing)
//	arg-layout          a golf_args.h struct laid out differently by clang for
//	                    arm64 and by Go (sizes, offsets, field names), from
//	                    the Go mirrors the caller passes (static_asserts
//	                    compiled into the same unit)
package strict

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"unicode"

	"github.com/golf-ml/golf/internal/kemu/msl/internal/kgen"
)

// Violation is one broken rule.
type Violation struct {
	File string // base name of the source file
	Line int
	Rule string
	Msg  string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s:%d: [%s] %s", v.File, v.Line, v.Rule, v.Msg)
}

// Config is what a check needs besides the sources.
type Config struct {
	// Clang is the clang++ to run; "" finds one (FindClang).
	Clang string
	// Version is __METAL_VERSION__ (310 for MSL 3.1).
	Version int
	// Include is the directory of the quoted includes (shaders/, holding
	// golf_args.h).
	Include string
	// Args is golf_args.h: the structs buffer arguments may use.
	Args string
	// Mirrors are the Go mirrors of the Args structs (values of the Go
	// struct types, named as the C++ structs); every struct of Args must
	// have one. nil skips the layout check.
	Mirrors []any
	// Stdlib is the directory of the strict metal_stdlib: "" is this
	// package's include directory in the source tree; a binary run away
	// from the source tree extracts IncludeFS and names the copy here.
	Stdlib string
}

//go:embed include
var includeFiles embed.FS

// IncludeFS is the strict metal_stdlib directory (include/ of this
// package) as the binary embeds it, at its root.
func IncludeFS() fs.FS {
	sub, err := fs.Sub(includeFiles, "include")
	if err != nil {
		panic(err) // include/ is embedded
	}
	return sub
}

// ErrNoClang is returned by FindClang when no clang++ is installed.
var ErrNoClang = errors.New("strict: no clang++ on PATH (install Debian's clang; GOLF_CLANG names another)")

// EnvRequireClang, set to 1, makes the tests that need clang fail instead
// of skipping when FindClang finds none (CI sets it: it installs clang).
const EnvRequireClang = "GOLF_REQUIRE_CLANG"

// FindClang returns the clang++ to use: $GOLF_CLANG, else clang++, else
// clang++-N for the versions Debian ships.
func FindClang() (string, error) {
	if c := os.Getenv("GOLF_CLANG"); c != "" {
		return exec.LookPath(c)
	}
	names := []string{"clang++"}
	for v := 20; v >= 14; v-- {
		names = append(names, fmt.Sprintf("clang++-%d", v))
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNoClang
}

// includeDir is the directory of the strict metal_stdlib.
func includeDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("strict: cannot locate the package directory")
	}
	return filepath.Join(filepath.Dir(file), "include")
}

// stdlibOf is the strict metal_stdlib directory cfg compiles against.
func stdlibOf(cfg Config) string {
	if cfg.Stdlib != "" {
		return cfg.Stdlib
	}
	return includeDir()
}

// flags are clang's flags for version v, the strict metal_stdlib at
// stdlib.
func flags(v int, stdlib, include string) []string {
	f := []string{
		"-x", "c++", "-std=c++17", "-target", "arm64-apple-macos14", "-fsyntax-only",
		"-nostdinc", "-nostdinc++", "-isystem", stdlib,
		fmt.Sprintf("-D__METAL_VERSION__=%d", v),
		"-fno-exceptions", "-fno-rtti",
		"-Wall", "-Wextra", "-Werror", "-Wdouble-promotion", "-Wno-error=double-promotion", "-Wno-unknown-attributes",
		"-ferror-limit=0", "-fno-color-diagnostics", "-fno-caret-diagnostics",
	}
	if include != "" {
		f = append(f, "-I", include)
	}
	return f
}

// CompileSource compiles src (one translation unit, such as the joined
// library shaders.Source) for MSL version v and returns clang's errors.
func CompileSource(cfg Config, name, src string) error {
	clang, err := clangOf(cfg)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "golf-strict-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(clang, append(flags(cfg.Version, stdlibOf(cfg), cfg.Include), file)...)
	out, err := cmd.CombinedOutput()
	if err == nil && len(compileViolations(string(out), stdlibOf(cfg))) > 0 {
		// A -Wdouble-promotion warning that widens to double (a warning,
		// not an error, so that bfloat's widening can be told apart).
		err = errors.New("a conversion to double")
	}
	if err != nil {
		return fmt.Errorf("strict: %s does not compile as MSL %d.%d: %v\n%s", name, cfg.Version/100, cfg.Version/10%10, err, out)
	}
	return nil
}

func clangOf(cfg Config) (string, error) {
	if cfg.Clang != "" {
		return cfg.Clang, nil
	}
	return FindClang()
}

// Check compiles files (.metal paths) as one translation unit and applies
// every rule. It returns the violations, sorted by file and line, or an
// error when the check itself cannot run (no clang, unreadable files, an
// AST it cannot read).
func Check(cfg Config, files []string) ([]Violation, error) {
	r, err := Analyze(cfg, files)
	return r.Violations, err
}

// Result is what Analyze found.
type Result struct {
	Violations []Violation
	// Threadgroup is the threadgroup memory of each kernel in bytes, the
	// most of its instantiations.
	Threadgroup map[string]int
	// Instances is the threadgroup memory in bytes of each concrete kernel
	// instantiation (or plain kernel function), by its mangled name: the
	// sum the threadgroup-memory rule compares with 32 KiB.
	Instances map[string]int
}

// Analyze is Check, also returning the threadgroup memory of every kernel.
func Analyze(cfg Config, files []string) (Result, error) {
	vs, tg, inst, err := analyze(cfg, files)
	return Result{Violations: vs, Threadgroup: tg, Instances: inst}, err
}

func analyze(cfg Config, files []string) ([]Violation, map[string]int, map[string]int, error) {
	clang, err := clangOf(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	stdlib := stdlibOf(cfg)
	var vs []Violation
	kernels := map[string]kgen.KernelDecl{}
	kernelFile := map[string]string{}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, nil, err
		}
		ks, err := kgen.ParseFile(filepath.Base(f), text)
		if err != nil {
			vs = append(vs, kgenViolation(filepath.Base(f), err))
			continue
		}
		for _, k := range ks {
			kernels[k.Name] = k
			kernelFile[k.Name] = filepath.Base(f)
		}
		vs = append(vs, signatureRules(filepath.Base(f), ks)...)
	}
	var structs []kgen.ArgStruct
	if cfg.Args != "" {
		text, err := os.ReadFile(cfg.Args)
		if err != nil {
			return nil, nil, nil, err
		}
		if structs, err = kgen.ParseArgStructs(filepath.Base(cfg.Args), text); err != nil {
			return nil, nil, nil, err
		}
	}
	vs = append(vs, argStructRules(kernels, kernelFile, structs)...)
	layoutSrc, layoutVs, err := layoutAsserts(cfg, structs)
	if err != nil {
		return nil, nil, nil, err
	}
	vs = append(vs, layoutVs...)

	// The unit: the files, then the static_asserts of the attributes and
	// the layouts.
	var unit strings.Builder
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, nil, nil, err
		}
		fmt.Fprintf(&unit, "#include %q\n", abs)
	}
	if cfg.Args != "" {
		abs, err := filepath.Abs(cfg.Args)
		if err != nil {
			return nil, nil, nil, err
		}
		fmt.Fprintf(&unit, "#include %q\n", abs)
	}
	names := make([]string, 0, len(kernels))
	for n := range kernels {
		names = append(names, n)
	}
	sort.Strings(names)
	// unitLine maps a line of the unit's static_asserts to the source
	// position it checks.
	unitLine := map[int]Violation{}
	for _, n := range names {
		k := kernels[n]
		if k.Threads != "" {
			unitLine[strings.Count(unit.String(), "\n")+1] = Violation{File: kernelFile[n], Line: k.Line}
			fmt.Fprintf(&unit, "static_assert((%s) >= 1 && (%s) <= 1024, %q);\n", k.Threads, k.Threads,
				fmt.Sprintf("threads: kernel %s: [[max_total_threads_per_threadgroup(%s)]] must be a constant from 1 to 1024", n, k.Threads))
		}
	}
	structLine := 0
	for _, l := range strings.SplitAfter(layoutSrc, "\n") {
		if _, err := fmt.Sscanf(l, "// line %d", &structLine); err == nil {
			continue
		}
		if l != "" {
			unitLine[strings.Count(unit.String(), "\n")+1] = Violation{File: filepath.Base(cfg.Args), Line: structLine}
			unit.WriteString(l)
		}
	}

	dir, err := os.MkdirTemp("", "golf-strict-")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(dir)
	main := filepath.Join(dir, "unit.metal")
	if err := os.WriteFile(main, []byte(unit.String()), 0o644); err != nil {
		return nil, nil, nil, err
	}
	cmd := exec.Command(clang, append(flags(cfg.Version, stdlib, cfg.Include), "-Xclang", "-ast-dump=json", main)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	for _, v := range compileViolations(stderr.String(), stdlib) {
		if pos, ok := unitLine[v.Line]; ok && v.File == "unit.metal" {
			v.File, v.Line = pos.File, pos.Line
		}
		vs = append(vs, v)
	}
	if runErr != nil && len(compileViolations(stderr.String(), stdlib)) == 0 {
		return nil, nil, nil, fmt.Errorf("strict: clang failed: %v\n%s", runErr, stderr.String())
	}
	root, err := parseAST(stdout.Bytes())
	if err != nil {
		return nil, nil, nil, err
	}
	astVs, tg, inst := astRules(root, kernels, stdlib)
	vs = append(vs, astVs...)
	sort.SliceStable(vs, func(i, j int) bool {
		if vs[i].File != vs[j].File {
			return vs[i].File < vs[j].File
		}
		return vs[i].Line < vs[j].Line
	})
	return dedupe(vs), tg, inst, nil
}

// dedupe drops repeated violations (a template's instantiations repeat
// their pattern's).
func dedupe(vs []Violation) []Violation {
	seen := map[Violation]bool{}
	out := vs[:0]
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// kgenViolation turns a generator error ("file:line: msg") into a
// violation.
func kgenViolation(file string, err error) Violation {
	msg := err.Error()
	line := 0
	if rest, ok := strings.CutPrefix(msg, file+":"); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			fmt.Sscanf(rest[:i], "%d", &line)
			msg = rest[i+2:]
		}
	}
	return Violation{File: file, Line: line, Rule: "kernel-signature", Msg: msg}
}

// compileViolations reads clang's diagnostics: every "file:line:col:
// error: msg" line, and every -Wdouble-promotion warning but bfloat's
// (bfloatWidening); stdlib is the strict metal_stdlib directory.
func compileViolations(stderr, stdlib string) []Violation {
	var out []Violation
	// noted: the notes that follow belong to the last violation (not to a
	// diagnostic that was dropped). inLibrary: that violation is located in
	// the strict metal_stdlib (a static_assert of simdgroup_matrix), to be
	// moved to the first shader line its notes name ("in instantiation of
	// ... requested here").
	noted, inLibrary := false, false
	lib := stdlib + string(filepath.Separator)
	for _, line := range strings.Split(stderr, "\n") {
		if j := strings.Index(line, ": note: "); j >= 0 {
			// A note explains the diagnostic before it (the candidate that
			// did not match, and why).
			if noted {
				v := &out[len(out)-1]
				v.Msg += " (note: " + line[j+len(": note: "):] + ")"
				if parts := strings.Split(line[:j], ":"); inLibrary && len(parts) >= 2 && !strings.HasPrefix(parts[0], lib) {
					v.File = filepath.Base(parts[0])
					fmt.Sscanf(parts[1], "%d", &v.Line)
					inLibrary = false
				}
			}
			continue
		}
		noted = false
		sep := ": error: "
		i := strings.Index(line, sep)
		if i < 0 {
			sep = ": fatal error: "
			i = strings.Index(line, sep)
		}
		if i < 0 {
			sep = ": warning: "
			if i = strings.Index(line, sep); i < 0 || !strings.HasSuffix(line, "[-Wdouble-promotion]") ||
				bfloatWidening(line[i+len(sep):]) {
				continue
			}
		}
		noted = true
		loc, msg := line[:i], line[i+len(sep):]
		parts := strings.Split(loc, ":")
		inLibrary = strings.HasPrefix(parts[0], lib)
		v := Violation{File: filepath.Base(parts[0]), Rule: "compile", Msg: msg}
		if len(parts) >= 2 {
			fmt.Sscanf(parts[1], "%d", &v.Line)
		}
		// The unit's own static_asserts carry their rule: "rule: ...".
		if q := strings.Index(msg, "\""); v.File == "unit.metal" && q >= 0 {
			text := strings.TrimSuffix(msg[q+1:], "\"")
			if rule, rest, ok := strings.Cut(text, ": "); ok && (rule == "threads" || rule == "arg-layout") {
				v.Rule, v.Msg = rule, rest
			}
		}
		out = append(out, v)
	}
	return out
}

// bfloatWidening reports whether a -Wdouble-promotion message is about a
// bfloat (__fp16, scalar or vector) widened to float: MSL converts bfloat to
// float implicitly, and clang widens every __fp16 operand of arithmetic
// (a * b of two bfloats is float in the AST, then narrowed: the
// bfloat-conversion rule reads it), so only widening to double is an error.
func bfloatWidening(msg string) bool {
	msg, _, _ = strings.Cut(msg, " [-W")
	from, to, ok := strings.Cut(msg, " to '")
	return ok && strings.Contains(from, "__fp16") && !strings.Contains(to, "double")
}

// signatureRules checks the kernel signatures: distinct buffer indices.
func signatureRules(file string, ks []kgen.KernelDecl) []Violation {
	var out []Violation
	for _, k := range ks {
		seen := map[int]string{}
		for _, p := range k.Params {
			if p.Attr != "buffer" {
				continue
			}
			if prev, ok := seen[p.Index]; ok {
				out = append(out, Violation{file, p.Line, "kernel-signature",
					fmt.Sprintf("kernel %s: parameters %s and %s both bound at [[buffer(%d)]]", k.Name, prev, p.Name, p.Index)})
			}
			seen[p.Index] = p.Name
		}
		out = append(out, kernelAttributes(file, k)...)
	}
	return out
}

// gridAttrs are the position and size attributes of a kernel whose
// parameters must agree, each with the pair it belongs to (MSL
// specification, "Notes on kernel function attributes": one vector width
// for all, and the types of a position and its size the same).
var gridAttrs = map[string]string{
	"thread_position_in_grid":          "grid",
	"threads_per_grid":                 "grid",
	"thread_position_in_threadgroup":   "threadgroup",
	"threads_per_threadgroup":          "threadgroup",
	"dispatch_threads_per_threadgroup": "threadgroup",
	"threadgroup_position_in_grid":     "threadgroups",
	"threadgroups_per_grid":            "threadgroups",
}

// gridTypes are the types those parameters may have, with their widths.
var gridTypes = map[string]int{"ushort": 1, "uint": 1, "ushort2": 2, "uint2": 2, "ushort3": 3, "uint3": 3}

// gridType is a parameter's type as MSL names it: "uint3" for uint3,
// const uint3, metal::uint3, vec<uint, 3> or unsigned int.
func gridType(p kgen.ParamDecl) string {
	t := " " + strings.ReplaceAll(p.Type, "metal::", "") + " "
	for _, w := range []string{"const", "thread"} {
		t = strings.ReplaceAll(t, " "+w+" ", " ")
	}
	t = strings.Join(strings.Fields(t), " ")
	t = strings.NewReplacer("unsigned int", "uint", "unsigned short", "ushort").Replace(t)
	if m := vecSpelling.FindStringSubmatch(t); m != nil {
		t = m[1] + m[2]
	}
	return strings.ReplaceAll(t, " ", "")
}

var vecSpelling = regexp.MustCompile(`^vec ?< ?(\w+) ?, ?(\d) ?>$`)

// kernelAttributes is the kernel-attributes rule: the position and size
// parameters of kernel k are ushort or uint, scalars or vectors of 2 or 3,
// all of one width, and each position has its size's type.
func kernelAttributes(file string, k kgen.KernelDecl) []Violation {
	var out []Violation
	var first *kgen.ParamDecl // the first of them: the width the others must have
	firstType := ""
	pair := map[string]int{} // the first parameter of each pair, by index
	for i := range k.Params {
		p := &k.Params[i]
		group, ok := gridAttrs[p.Attr]
		if !ok {
			continue
		}
		t := gridType(*p)
		width, ok := gridTypes[t]
		if !ok {
			if !isTemplateParam(t) {
				out = append(out, Violation{file, p.Line, "kernel-attributes",
					fmt.Sprintf("kernel %s: %s [[%s]] is %s: it must be ushort or uint, a scalar or a 2- or 3-vector (uint2, ushort3, ...)",
						k.Name, p.Name, p.Attr, t)})
			}
			continue
		}
		if first == nil {
			first, firstType = p, t
		} else if w := gridTypes[firstType]; w != width {
			out = append(out, Violation{file, p.Line, "kernel-attributes",
				fmt.Sprintf("kernel %s: %s [[%s]] is %s and %s [[%s]] is %s: the position and size parameters must all have one vector width (%d and %d)",
					k.Name, first.Name, first.Attr, firstType, p.Name, p.Attr, t, w, width)})
			continue
		}
		if j, ok := pair[group]; ok {
			q := k.Params[j]
			if qt := gridType(q); qt != t {
				out = append(out, Violation{file, p.Line, "kernel-attributes",
					fmt.Sprintf("kernel %s: %s [[%s]] is %s and %s [[%s]] is %s: a position and its size must have the same type",
						k.Name, q.Name, q.Attr, qt, p.Name, p.Attr, t)})
			}
		} else {
			pair[group] = i
		}
	}
	return out
}

// scalarNames are the element types a buffer may point at without a
// struct of golf_args.h.
var scalarNames = map[string]bool{
	"float": true, "half": true, "bfloat": true, "int": true, "uint": true, "short": true, "ushort": true,
	"char": true, "uchar": true, "long": true, "ulong": true, "bool": true,
	"atomic_int": true, "atomic_uint": true, "atomic_float": true, "atomic_bool": true,
}

// argStructRules: every buffer argument's element type is a scalar, a
// vector, a template parameter or a struct of golf_args.h.
func argStructRules(kernels map[string]kgen.KernelDecl, fileOf map[string]string, structs []kgen.ArgStruct) []Violation {
	known := map[string]bool{}
	for _, s := range structs {
		known[s.Name] = true
	}
	var out []Violation
	for name, k := range kernels {
		for _, p := range k.Params {
			if p.Attr != "buffer" {
				continue
			}
			t := p.TypeName
			vec := strings.TrimRight(t, "234")
			if scalarNames[t] || (vec != t && scalarNames[vec]) || known[t] || isTemplateParam(t) {
				continue
			}
			out = append(out, Violation{fileOf[name], p.Line, "arg-struct",
				fmt.Sprintf("kernel %s: buffer %d (%s) is a %s, not a struct of golf_args.h: its layout is checked against no Go mirror",
					name, p.Index, p.Name, t)})
		}
	}
	return out
}

// isTemplateParam is a guess good for this library: template parameters
// are one capital letter or a capitalised short name (T, S, D, TO).
func isTemplateParam(s string) bool {
	if s == "" || len(s) > 2 {
		return false
	}
	for _, r := range s {
		if !unicode.IsUpper(r) {
			return false
		}
	}
	return true
}

// layoutAsserts returns static_asserts that clang lays out every struct of
// golf_args.h as Go lays out its mirror, and the violations found without
// compiling (a struct without a mirror, a field name that differs).
func layoutAsserts(cfg Config, structs []kgen.ArgStruct) (string, []Violation, error) {
	if cfg.Mirrors == nil {
		return "", nil, nil
	}
	args := filepath.Base(cfg.Args)
	mirrors := map[string]reflect.Type{}
	for _, m := range cfg.Mirrors {
		t := reflect.TypeOf(m)
		if t.Kind() != reflect.Struct {
			return "", nil, fmt.Errorf("strict: mirror %v is not a struct", t)
		}
		mirrors[t.Name()] = t
	}
	var src strings.Builder
	var vs []Violation
	for _, s := range structs {
		t, ok := mirrors[s.Name]
		if !ok {
			vs = append(vs, Violation{args, s.Line, "arg-layout", fmt.Sprintf("struct %s has no Go mirror", s.Name)})
			continue
		}
		delete(mirrors, s.Name)
		if t.NumField() != len(s.Fields) {
			vs = append(vs, Violation{args, s.Line, "arg-layout",
				fmt.Sprintf("struct %s has %d fields, its Go mirror %d", s.Name, len(s.Fields), t.NumField())})
			continue
		}
		fmt.Fprintf(&src, "// line %d\n", s.Line)
		fmt.Fprintf(&src, "static_assert(sizeof(%s) == %d && alignof(%s) == %d, %q);\n", s.Name, t.Size(), s.Name, t.Align(),
			fmt.Sprintf("arg-layout: struct %s: size or alignment differs from Go's (%d bytes, aligned to %d)", s.Name, t.Size(), t.Align()))
		for i, f := range s.Fields {
			g := t.Field(i)
			if g.Name != camel(f) {
				vs = append(vs, Violation{args, s.Line, "arg-layout",
					fmt.Sprintf("struct %s field %d is %s, its Go mirror's %s (want %s)", s.Name, i, f, g.Name, camel(f))})
				continue
			}
			fmt.Fprintf(&src, "static_assert(__builtin_offsetof(%s, %s) == %d && sizeof(%s::%s) == %d, %q);\n",
				s.Name, f, g.Offset, s.Name, f, g.Type.Size(),
				fmt.Sprintf("arg-layout: %s.%s: offset or size differs from Go's %s (offset %d, %d bytes)", s.Name, f, g.Name, g.Offset, g.Type.Size()))
		}
	}
	extra := make([]string, 0, len(mirrors))
	for n := range mirrors {
		extra = append(extra, n)
	}
	sort.Strings(extra)
	for _, n := range extra {
		vs = append(vs, Violation{args, 0, "arg-layout", fmt.Sprintf("Go mirror %s has no struct in %s", n, args)})
	}
	return src.String(), vs, nil
}

// camel turns a C field name (snake_case) into its Go mirror's name.
func camel(s string) string {
	var sb strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part != "" {
			sb.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return sb.String()
}

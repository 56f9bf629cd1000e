// Package kgen generates the emulator's kernel registry (zz_kernels_gen.cc)
// from MSL sources.
//
// It reads, per .metal file, the [[kernel]] function definitions (plain or
// template) and the instantiations, which follow one convention:
//
//	template <typename T>
//	[[kernel]] void rmsnorm_fwd_simd(device const T* x [[buffer(0)]], ...,
//	                                 uint row [[threadgroup_position_in_grid]]) {...}
//
//	#define instantiate_rmsnorm(tname, T) \
//	  instantiate_kernel("rmsnorm_fwd_simd_" #tname, rmsnorm_fwd_simd, T) ...
//	instantiate_rmsnorm(float, float)
//
// instantiate_kernel(host, func, types...) (golf_args.h) is the only way a
// template kernel gets a host name; the file's function-like macros are
// expanded (with # and ##) to find every call. A plain (non-template)
// kernel is registered under its function name. Every kernel parameter
// carries [[buffer(n)]] (a pointer or a reference) or a builtin attribute.
//
// For each host name the generated C++ holds a trampoline that casts the
// bound buffers to the parameter types, converts the builtins from the
// runtime's ThreadCtx, and calls func<types...>; and the registry table
// golf_emu::kKernels. It also lists the layout of every struct of
// golf_args.h (golf_emu::kArgLayouts) for the Go mirror test, and the
// SHA-256 of every source, so that the Go build (which does not track
// headers outside the package) recompiles when a source changes.
package kgen

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Source is one input file.
type Source struct {
	Path string // as written in the generated comment, relative to the output
	Text []byte
	// Include is the name the generated file includes it by ("" for its
	// base name): a shader in a subdirectory of the shader dir is included
	// by its path relative to that dir.
	Include string
}

// Config lists the inputs of one generated file.
type Config struct {
	Args      Source   // golf_args.h
	Headers   []Source // the shader dir's other headers, included once before the shaders
	Shaders   []Source // the library's .metal files and the probes (included from the shader dir)
	Selftests []Source // the emulator's test kernels (included from the output dir)
	Digests   []Source // other inputs that only contribute a digest (the shim)
}

// Load reads the sources of the standard layout: golf_args.h, the other
// *.h and *.metal of shaderDir, the device probes of shaderDir/probe
// (library kernels whose file is "probe/<name>"), *.metal of emuDir as
// self-tests, and
// emuDir/include/metal_stdlib and the runtime's interface emuDir/../runtime.h
// (digests only: the Go build does not track headers outside the package).
// Paths are written relative to emuDir.
func Load(emuDir, shaderDir string) (Config, error) {
	var cfg Config
	read := func(path string) (Source, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return Source{}, err
		}
		rel, err := filepath.Rel(emuDir, path)
		if err != nil {
			rel = path
		}
		return Source{Path: filepath.ToSlash(rel), Text: b}, nil
	}
	var err error
	if cfg.Args, err = read(filepath.Join(shaderDir, "golf_args.h")); err != nil {
		return cfg, err
	}
	glob := func(dir string) ([]Source, error) {
		names, err := filepath.Glob(filepath.Join(dir, "*.metal"))
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		var out []Source
		for _, n := range names {
			s, err := read(n)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	headers, err := filepath.Glob(filepath.Join(shaderDir, "*.h"))
	if err != nil {
		return cfg, err
	}
	sort.Strings(headers)
	for _, h := range headers {
		if filepath.Base(h) == "golf_args.h" {
			continue
		}
		s, err := read(h)
		if err != nil {
			return cfg, err
		}
		cfg.Headers = append(cfg.Headers, s)
	}
	if cfg.Shaders, err = glob(shaderDir); err != nil {
		return cfg, err
	}
	if len(cfg.Shaders) == 0 {
		return cfg, fmt.Errorf("no .metal files in %s", shaderDir)
	}
	// The device probes (shaders/probe) are library kernels too: the
	// emulated runtime runs them as a device would at start-up.
	probes, err := glob(filepath.Join(shaderDir, "probe"))
	if err != nil {
		return cfg, err
	}
	for _, s := range probes {
		s.Include = "probe/" + filepath.Base(s.Path)
		cfg.Shaders = append(cfg.Shaders, s)
	}
	if cfg.Selftests, err = glob(emuDir); err != nil {
		return cfg, err
	}
	stdlib, err := read(filepath.Join(emuDir, "include", "metal_stdlib"))
	if err != nil {
		return cfg, err
	}
	rt, err := read(filepath.Join(emuDir, "..", "runtime.h"))
	if err != nil {
		return cfg, err
	}
	cfg.Digests = []Source{stdlib, rt}
	return cfg, nil
}

// unit is one parsed .metal file.
type unit struct {
	src       Source
	selftest  bool
	namespace string
	kernels   []*kernel
	instances []instance
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

// Generate returns the generated C++ file.
func Generate(cfg Config) ([]byte, error) {
	argsSrc, err := lex(cfg.Args.Path, string(cfg.Args.Text))
	if err != nil {
		return nil, err
	}
	structs, err := parseArgStructs(argsSrc)
	if err != nil {
		return nil, err
	}
	var units []*unit
	hosts := map[string]string{}
	for _, group := range []struct {
		srcs     []Source
		selftest bool
	}{{cfg.Shaders, false}, {cfg.Selftests, true}} {
		for _, s := range group.srcs {
			u, err := parseUnit(s, group.selftest)
			if err != nil {
				return nil, err
			}
			for _, in := range u.instances {
				if prev, ok := hosts[in.host]; ok {
					return nil, errorf(s.Path, in.line, "host name %q already used (%s)", in.host, prev)
				}
				hosts[in.host] = fmt.Sprintf("%s:%d", s.Path, in.line)
			}
			units = append(units, u)
		}
	}
	return emit(cfg, structs, units), nil
}

func parseUnit(s Source, selftest bool) (*unit, error) {
	src, err := lex(s.Path, string(s.Text))
	if err != nil {
		return nil, err
	}
	ks, err := parseKernels(src)
	if err != nil {
		return nil, err
	}
	if err := checkThreadgroup(src, ks); err != nil {
		return nil, err
	}
	ins, err := parseInstances(src)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(s.Path), ".metal")
	prefix := "golf_shader_"
	if selftest {
		prefix = "golf_emu_"
	}
	u := &unit{src: s, selftest: selftest, namespace: prefix + nonIdent.ReplaceAllString(base, "_"), kernels: ks}
	used := map[string]bool{}
	for _, in := range ins {
		k := findKernel(ks, in.fn)
		if k == nil {
			return nil, errorf(s.Path, in.line, "instantiate_kernel(%q, %s, ...): no [[kernel]] %s in this file", in.host, in.fn, in.fn)
		}
		if k.tparams == nil {
			return nil, errorf(s.Path, in.line, "instantiate_kernel(%q, %s, ...): %s is not a template", in.host, in.fn, in.fn)
		}
		if len(in.targs) != len(k.tparams) {
			return nil, errorf(s.Path, in.line, "instantiate_kernel(%q, %s, ...): %d template arguments for %d parameters", in.host, in.fn, len(in.targs), len(k.tparams))
		}
		used[k.name] = true
		u.instances = append(u.instances, in)
	}
	for _, k := range ks {
		if k.tparams == nil {
			u.instances = append(u.instances, instance{host: k.name, fn: k.name, line: k.line})
		} else if !used[k.name] {
			return nil, errorf(s.Path, k.line, "kernel template %s is never instantiated (instantiate_kernel)", k.name)
		}
	}
	return u, nil
}

func findKernel(ks []*kernel, name string) *kernel {
	for _, k := range ks {
		if k.name == name {
			return k
		}
	}
	return nil
}

// substituteType replaces the template parameters in a parameter type.
func substituteType(typ []token, k *kernel, targs [][]token) string {
	var out []token
	for _, t := range typ {
		replaced := false
		if t.kind == tIdent {
			for i, p := range k.tparams {
				if t.text == p {
					out = append(out, targs[i]...)
					replaced = true
					break
				}
			}
		}
		if !replaced {
			out = append(out, t)
		}
	}
	return joinTokens(out)
}

func emit(cfg Config, structs []argStruct, units []*unit) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// Code generated by \"go run ./gen\" (go generate ./internal/kemu/msl); DO NOT EDIT.\n")
	p("//\n")
	p("// The emulator's kernel registry: the sources below compiled as C++, one\n")
	p("// trampoline per [[host_name]], and the layouts of the golf_args.h structs.\n")
	p("// The digests make the Go build recompile this file when a source changes.\n")
	p("//\n")
	all := []Source{cfg.Args}
	all = append(all, cfg.Headers...)
	all = append(all, cfg.Shaders...)
	all = append(all, cfg.Selftests...)
	all = append(all, cfg.Digests...)
	for _, s := range all {
		p("// sha256 %x %s\n", sha256.Sum256(s.Text), s.Path)
	}
	// The shared headers are included here, outside the per-file
	// namespaces, so that their include guards do not hide them from all
	// files but the first.
	p("\n#include <metal_stdlib>\n#include \"golf_args.h\"\n")
	for _, h := range cfg.Headers {
		p("#include %q\n", filepath.Base(h.Path))
	}

	type entry struct {
		host, file, fn, tramp, slots string
		threads                      string // max_total_threads_per_threadgroup, "0" for none
		nslots                       int
		selftest                     bool
	}
	var entries []entry
	for _, u := range units {
		p("\nnamespace %s {\n", u.namespace)
		inc := u.src.Include
		if inc == "" {
			inc = filepath.Base(u.src.Path)
		}
		p("#include \"%s\"\n", inc)
		for _, in := range u.instances {
			k := findKernel(u.kernels, in.fn)
			ident := nonIdent.ReplaceAllString(in.host, "_")
			tramp := "k_" + ident
			call := k.name
			if k.tparams != nil {
				var ts []string
				for _, t := range in.targs {
					ts = append(ts, joinTokens(t))
				}
				call += "<" + strings.Join(ts, ", ") + ">"
			}
			p("\n// %s: %s\n", in.host, call)
			p("static void %s(const golf_emu::ThreadCtx& t, void* const* b) {\n", tramp)
			var hasBuf, hasBuiltin bool
			for _, prm := range k.params {
				hasBuf = hasBuf || prm.attr == "buffer"
				hasBuiltin = hasBuiltin || prm.attr != "buffer"
			}
			if !hasBuiltin {
				p("  (void)t;\n")
			}
			if !hasBuf {
				p("  (void)b;\n")
			}
			p("  %s(", call)
			var slots []string
			for i, prm := range k.params {
				if i > 0 {
					p(",")
				}
				p("\n      ")
				typ := substituteType(prm.typ, k, in.targs)
				switch {
				case prm.attr == "buffer" && prm.pointer:
					p("static_cast<%s>(b[%d])", typ, prm.index)
					slots = append(slots, fmt.Sprintf("{%d, %q, 0, golf_emu::pointee_size<%s>(), golf_emu::pointee_align<%s>()}",
						prm.index, prm.name, typ, typ))
				case prm.attr == "buffer":
					ptr := strings.TrimSpace(strings.TrimSuffix(typ, "&")) + "*"
					p("*static_cast<%s>(b[%d])", ptr, prm.index)
					slots = append(slots, fmt.Sprintf("{%d, %q, 1, golf_emu::pointee_size<%s>(), golf_emu::pointee_align<%s>()}",
						prm.index, prm.name, ptr, ptr))
				default:
					bi := builtins[prm.attr]
					p("golf_emu::builtin%d<%s>(t.%s)", bi.dims, typ, bi.field)
				}
			}
			p(");\n}\n")
			threads := "0"
			if k.threads != nil {
				// A constant of the kernel's namespace: the expression may
				// name the file's constants.
				p("static constexpr uint32_t mt_%s = uint32_t(%s);\n", ident, joinTokens(k.threads))
				threads = u.namespace + "::mt_" + ident
			}
			slotName := "nullptr"
			if len(slots) > 0 {
				slotName = "s_" + ident
				p("static const golf_emu::Slot %s[] = {\n", slotName)
				for _, s := range slots {
					p("    %s,\n", s)
				}
				p("};\n")
				slotName = u.namespace + "::" + slotName
			}
			entries = append(entries, entry{
				host: in.host, file: inc, fn: call,
				tramp: u.namespace + "::" + tramp, slots: slotName, nslots: len(slots), selftest: u.selftest,
				threads: threads,
			})
		}
		p("\n}  // namespace %s\n", u.namespace)
	}

	p("\nconst golf_emu::KernelEntry golf_emu::kKernels[] = {\n")
	for _, e := range entries {
		self := 0
		if e.selftest {
			self = 1
		}
		p("    {%q, %q, %q, %s, %d, %s, %d, %s},\n", e.host, e.file, e.fn, e.tramp, e.nslots, e.slots, self, e.threads)
	}
	p("};\nconst int golf_emu::kKernelCount = %d;\n", len(entries))

	p("\nconst golf_emu::FieldLayout golf_emu::kArgLayouts[] = {\n")
	n := 0
	for _, s := range structs {
		for _, f := range s.fields {
			p("    {%q, %q, offsetof(%s, %s), sizeof(%s::%s), sizeof(%s)},\n", s.name, f, s.name, f, s.name, f, s.name)
			n++
		}
	}
	if n == 0 {
		p("    {nullptr, nullptr, 0, 0, 0},\n")
	}
	p("};\nconst int golf_emu::kArgLayoutCount = %d;\n", n)
	return b.Bytes()
}

// KernelDecl is a [[kernel]] function of a .metal file as the generator
// reads it, for other tools (the strict front end).
type KernelDecl struct {
	Name     string
	Line     int
	Template bool
	Params   []ParamDecl
	// Threads is the expression of [[max_total_threads_per_threadgroup(N)]],
	// "" without one.
	Threads string
}

// ParamDecl is one kernel parameter.
type ParamDecl struct {
	Name string
	Type string // the declared type, e.g. "constant RMSNormArgs&"
	// TypeName is the last identifier of the type (the pointee or referee:
	// "RMSNormArgs", "T", "float").
	TypeName string
	Attr     string // "buffer" or the builtin attribute
	Index    int    // n of [[buffer(n)]]
	Pointer  bool   // a buffer passed as T* (else T&)
	Line     int
}

// ParseFile reads the kernels of one .metal file with the generator's
// rules (signatures, instantiations, threadgroup declarations); a file the
// generator would reject is an error naming the file and line.
func ParseFile(path string, text []byte) ([]KernelDecl, error) {
	u, err := parseUnit(Source{Path: path, Text: text}, false)
	if err != nil {
		return nil, err
	}
	var out []KernelDecl
	for _, k := range u.kernels {
		d := KernelDecl{Name: k.name, Line: k.line, Template: k.tparams != nil}
		if k.threads != nil {
			d.Threads = joinTokens(k.threads)
		}
		for _, p := range k.params {
			tn := ""
			for _, t := range p.typ {
				if t.kind == tIdent && t.text != "const" && t.text != "device" && t.text != "constant" &&
					t.text != "thread" && t.text != "volatile" {
					tn = t.text
				}
			}
			d.Params = append(d.Params, ParamDecl{
				Name: p.name, Type: joinTokens(p.typ), TypeName: tn, Attr: p.attr, Index: p.index,
				Pointer: p.pointer, Line: p.line,
			})
		}
		out = append(out, d)
	}
	return out, nil
}

// ArgStruct is a struct of golf_args.h: its name and field names in order.
type ArgStruct struct {
	Name   string
	Fields []string
	Line   int
}

// ParseArgStructs reads the structs of golf_args.h.
func ParseArgStructs(path string, text []byte) ([]ArgStruct, error) {
	src, err := lex(path, string(text))
	if err != nil {
		return nil, err
	}
	ss, err := parseArgStructs(src)
	if err != nil {
		return nil, err
	}
	out := make([]ArgStruct, len(ss))
	for i, s := range ss {
		out[i] = ArgStruct{Name: s.name, Fields: append([]string(nil), s.fields...), Line: s.line}
	}
	return out, nil
}
